"""What every command shares: the lazily loading group, the error mapping and small option parsers."""

from __future__ import annotations

import functools
import importlib
import tempfile
from pathlib import Path

import click

from motionkit.common.errors import DataError


def iters_option(value: str) -> tuple[int, int, int]:
    """``"A,B,C"`` -> three iteration counts (``--fit-iters``)."""
    try:
        a, b, c = (int(x) for x in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected three comma-separated integers, got {value!r}") from None
    if min(a, b, c) < 0:
        raise click.BadParameter("iterations must be >= 0")
    return (a, b, c)


def clean_errors(*kinds: type[Exception]):
    """Decorator: a ``DataError``, an ``OSError`` (a folder that cannot be made, a full disk) and the
    exception types ``kinds`` raised by the command become one clean error line naming the file and the
    problem, not a traceback."""
    caught = (DataError, OSError, *kinds)

    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except caught as exc:
                raise click.ClickException(_one_line(exc)) from exc

        return run

    return wrap


def _one_line(exc: Exception) -> str:
    """An error as one line: an ``OSError`` as its file and reason (``/x/y: Permission denied``)."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


def writable_folder(path: Path) -> Path:
    """``path``, created if missing, after a test that a file can be written there: a long run should not
    find out at its end that its results cannot be saved. ``click.ClickException`` naming the folder."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot write results there ({exc.strerror or exc})") from None
    return path


def error_in(path: Path, exc: DataError) -> str:
    """``exc``'s line, naming ``path`` where the error names no file of its own."""
    return str(exc) if exc.path else f"{path}: {exc.message}"


def result_files(path: Path) -> list[Path]:
    """The result files ``*.h5`` of a folder, or the one file given."""
    if path.is_dir():
        files = sorted(p for p in path.glob("*.h5") if not p.name.startswith("."))
        if not files:
            raise click.ClickException(f"{path}: no result files (*.h5)")
        return files
    if not path.is_file():
        raise click.ClickException(f"{path}: not found")
    return [path]


class LazyGroup(click.Group):
    """A command group whose commands are imported when one is used: ``motionkit --help`` lists them from
    ``lazy`` (``name -> ("module:attribute", short help)``) without importing torch and the pipeline."""

    def __init__(self, *args, lazy: dict[str, tuple[str, str]], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.lazy:
            return super().get_command(ctx, name)
        module, attribute = self.lazy[name][0].split(":")
        return getattr(importlib.import_module(module), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.lazy[name][1] if name in self.lazy else "") for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
