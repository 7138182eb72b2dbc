"""What every command shares: the lazily loading group, the error mapping and small option parsers."""

from __future__ import annotations

import functools
import importlib
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
    """Decorator: a ``DataError`` (and the exception types ``kinds``) raised by the command becomes one
    clean error line naming the file and the problem, not a traceback."""
    caught = (DataError, *kinds)

    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except caught as exc:
                raise click.ClickException(str(exc)) from exc

        return run

    return wrap


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
