"""Building the fused operators of ``motionkit/kernels/csrc/`` (docs/kernels.md): compiled on first use with
``torch.utils.cpp_extension`` and cached by source hash under ``$MOTIONKIT_KERNELS_DIR`` (default
``$MOTIONKIT_HOME/kernels``), so that a change of the sources, of torch or of the CUDA toolkit builds
afresh and nothing else does.

Two libraries: the CPU one defines the operator schemas (namespace ``motionkit``) and their CPU
implementations; the CUDA one adds the CUDA implementations and is built only where nvcc and a CUDA
build of torch exist.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path

import torch

from motionkit.common.home import motionkit_home

KERNELS_DIR_ENV_VAR = "MOTIONKIT_KERNELS_DIR"
CSRC = Path(__file__).resolve().parent / "csrc"  # package data: shipped in wheels and sdists
CPU_SOURCES = ("ops_schema.cpp", "ops_cpu.cpp")
CUDA_SOURCES = ("ops_cuda.cu",)
HEADERS = ("mk_math.h", "mk_body.h", "mk_checks.h", "mk_knots.h")
CPU_FLAGS = ("-O3", "-fopenmp")
CUDA_FLAGS = ("-O3",)
DEFAULT_CUDA_ARCH = "9.0"  # H100/H200, used when no GPU is visible to detect the architecture


def kernels_dir() -> Path:
    """Where built operator libraries are cached: ``$MOTIONKIT_KERNELS_DIR`` or ``$MOTIONKIT_HOME/kernels``."""
    env = os.environ.get(KERNELS_DIR_ENV_VAR)
    return Path(env).expanduser() if env else motionkit_home() / "kernels"


def sources_present() -> bool:
    return all((CSRC / f).is_file() for f in CPU_SOURCES + CUDA_SOURCES + HEADERS)


def cuda_home() -> str | None:
    """The CUDA toolkit to build with: ``$CUDA_HOME``, ``$CUDA_PATH``, ``/usr/local/cuda``, or the folder
    above the real ``nvcc`` on ``PATH`` (wrappers such as ``/usr/local/bin/nvcc`` resolved through the
    toolkit they exec); None without nvcc."""
    for cand in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if cand and (Path(cand) / "bin" / "nvcc").is_file():
            return str(Path(cand).resolve())
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    text = Path(nvcc).read_bytes()[:4096]
    if text.startswith(b"#!"):  # a shell wrapper: take the toolkit path it executes
        for tok in text.decode(errors="ignore").split():
            if tok.strip("\"'").endswith("/bin/nvcc") and Path(tok.strip("\"'")).is_file():
                return str(Path(tok.strip("\"'")).resolve().parents[1])
    return str(Path(nvcc).resolve().parents[1])


def nvcc_path() -> str | None:
    """The toolkit's nvcc (``cuda_home()/bin/nvcc``), or None."""
    home = cuda_home()
    return str(Path(home) / "bin" / "nvcc") if home else None


def cuda_arch_list() -> str:
    """``TORCH_CUDA_ARCH_LIST`` if set, else the visible GPUs' architectures, else ``DEFAULT_CUDA_ARCH``."""
    env = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if env:
        return env
    if torch.cuda.is_available():
        caps = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
        return ";".join(f"{a}.{b}" for a, b in caps)
    return DEFAULT_CUDA_ARCH


def cuda_include_paths() -> list[str]:
    """Header folders of the CUDA libraries that pip installed next to torch (``nvidia/*/include``), for
    toolkits that ship nvcc without them."""
    spec = importlib.util.find_spec("nvidia")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    return sorted(str(d) for r in roots for d in r.glob("*/include") if d.is_dir())


def source_hash(kind: str) -> str:
    """Hash of everything a build depends on: sources, flags, torch, Python and (CUDA) toolkit and archs."""
    h = hashlib.sha256()
    files = HEADERS + (CPU_SOURCES if kind == "cpu" else CUDA_SOURCES)
    for f in files:
        h.update(f.encode())
        h.update((CSRC / f).read_bytes())
    h.update(f"{torch.__version__}|{sys.version_info[:2]}|{CPU_FLAGS}".encode())
    if kind == "cuda":
        h.update(f"{torch.version.cuda}|{CUDA_FLAGS}|{cuda_arch_list()}|{nvcc_path()}".encode())
    return h.hexdigest()[:16]


def build_library(kind: str, verbose: bool = False) -> Path:
    """Compile (or find in the cache) the ``kind`` ("cpu" or "cuda") library and return its path.

    Does not load it. Raises ``RuntimeError`` with the compiler's message when the build fails.
    """
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"kind must be 'cpu' or 'cuda', not {kind!r}")
    if not sources_present():
        raise RuntimeError(f"the C++/CUDA sources are not in {CSRC} (an installed copy without its csrc/?)")
    name = f"motionkit_ops_{kind}_{source_hash(kind)}"
    folder = kernels_dir() / name
    lib = folder / f"{name}.so"
    if lib.is_file():
        return lib
    home = cuda_home()
    if home:  # cpp_extension reads it once, on import
        os.environ.setdefault("CUDA_HOME", home)
    from torch.utils import cpp_extension  # imported only to build: it logs about CUDA on import

    if home:
        cpp_extension.CUDA_HOME = os.environ["CUDA_HOME"]

    folder.mkdir(parents=True, exist_ok=True)
    print(f"motionkit: building the {kind} operators of {CSRC} (once; cached in {folder})", file=sys.stderr)
    kw = dict(
        name=name,
        extra_cflags=list(CPU_FLAGS),
        extra_ldflags=["-fopenmp"] if kind == "cpu" else [],
        extra_include_paths=[str(CSRC)],
        build_directory=str(folder),
        is_python_module=False,
        verbose=verbose,
    )
    if kind == "cpu":
        cpp_extension.load(sources=[str(CSRC / f) for f in CPU_SOURCES], **kw)
    else:
        if nvcc_path() is None or torch.version.cuda is None:
            raise RuntimeError("no nvcc or a CPU-only build of torch: the CUDA operators cannot be built")
        old = os.environ.get("TORCH_CUDA_ARCH_LIST")
        os.environ["TORCH_CUDA_ARCH_LIST"] = cuda_arch_list()
        try:
            kw["extra_include_paths"] += cuda_include_paths()
            cpp_extension.load(sources=[str(CSRC / f) for f in CUDA_SOURCES], extra_cuda_cflags=list(CUDA_FLAGS),
                               with_cuda=True, **kw)  # fmt: skip
        finally:
            if old is None:
                os.environ.pop("TORCH_CUDA_ARCH_LIST", None)
            else:
                os.environ["TORCH_CUDA_ARCH_LIST"] = old
    if not lib.is_file():
        raise RuntimeError(f"the build of {name} left no {lib}")
    return lib


def main(argv: list[str] | None = None) -> int:
    """``python -m motionkit.kernels.build [cpu] [cuda]``: build (or find cached) and report, without a GPU
    if need be (``make cuda-check`` compiles the CUDA sources wherever nvcc exists)."""
    ap = argparse.ArgumentParser(description="Build motionkit's fused operators (cached by source hash).")
    ap.add_argument("kinds", nargs="*", default=["cpu"], choices=["cpu", "cuda"])
    ap.add_argument("--verbose", action="store_true", help="show the compiler's commands")
    args = ap.parse_args(argv)
    for kind in args.kinds:
        t0 = time.perf_counter()
        try:
            lib = build_library(kind, verbose=args.verbose)
        except RuntimeError as exc:
            print(f"{kind}: FAILED: {exc}")
            return 1
        extra = f" (arch {cuda_arch_list()}, nvcc {nvcc_path()})" if kind == "cuda" else ""
        print(f"{kind}: {lib} [{time.perf_counter() - t0:.1f} s]{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
