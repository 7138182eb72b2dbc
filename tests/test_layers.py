"""The package's import graph: no cycles between files, and layers that only import downward."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "motionkit"
# lowest first; a package may import from its own layer, the layers below, and the ground floor
LAYERS = (
    ("common", "conventions", "__init__"),
    ("geometry",),
    ("kernels",),
    ("body",),
    ("data",),
    ("synthetic", "detect", "motion"),
    ("viz", "render", "viewer"),
    ("eval",),
    ("pipeline",),
    ("distributed", "batch_report"),
    ("cli", "__main__"),
)
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}
# imports allowed inside functions: optional heavy dependencies; the
# C++ toolchain bindings of torch are loaded only when the fused operators are built
LAZY_OK = {"rfdetr", "ray", "submitit", "cv2", "matplotlib", "torch.utils", "viser"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, bool]]:
    """``(imported names, inside a function)`` for every import of the file (``import a.b`` and
    ``from a.b import c`` alike; for the latter the names are ``a.b.c``, ..., then ``a.b``)."""
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            out.append((names, node))
        elif isinstance(node, ast.Import):
            out.append(([a.name for a in node.names], node))
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    inside = {id(n) for f in funcs for n in ast.walk(f) if n is not f}
    return [(names, id(node) in inside) for names, node in out]


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        for names, _ in _imports(path):
            # the most specific imported name that is a module of the package
            for n in names:
                if n in files and n != mod:
                    graph[mod].add(n)
                    break
    return graph


def _layer(mod: str) -> int:
    parts = mod.split(".")
    return LAYER_OF[parts[1] if len(parts) > 1 else "__init__"]


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                pytest.fail("import cycle: " + " -> ".join(stack[stack.index(n) :] + [n]))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_layers_import_downward_only():
    bad = [
        f"{m} (layer {_layer(m)}) imports {n} (layer {_layer(n)})"
        for m, deps in _graph().items()
        for n in deps
        if _layer(n) > _layer(m)
    ]
    assert not bad, "\n".join(bad)


def test_function_local_imports_only_for_optional_dependencies():
    bad = []
    for path in PKG.rglob("*.py"):
        for names, inside in _imports(path):
            module = names[-1]
            if inside and not any(module == ok or module.startswith(ok + ".") for ok in LAZY_OK):
                bad.append(f"{path.relative_to(PKG.parent)}: {module}")
    assert not bad, "imports inside functions:\n" + "\n".join(bad)


def test_docstrings_cite_only_files_in_the_repository():
    import re

    root = PKG.parent
    missing = []
    for path in PKG.rglob("*.py"):
        for ref in re.findall(r"docs/[A-Za-z0-9_/-]+\.md", path.read_text()):
            if not (root / ref).is_file():
                missing.append(f"{path.relative_to(root)}: {ref}")
    assert not missing, "\n".join(missing)
