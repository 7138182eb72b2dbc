"""Errors for bad input files: they name the file (and the row where it applies); warnings as one line."""

from __future__ import annotations

import os


class DataError(ValueError):
    """A dataset file is missing, malformed or inconsistent.

    ``str(err)`` always starts with the file path, then the 1-based line number when known.
    """

    def __init__(self, path: str | os.PathLike | None, message: str, *, line: int | None = None):
        self.path = None if path is None else os.fspath(path)
        self.line = line
        self.message = message
        where = self.path or "<input>"
        if line is not None:
            where += f", line {line}"
        super().__init__(f"{where}: {message}")


def one_line_warning(message, category, filename, lineno, line=None) -> str:
    """A ``warnings.formatwarning`` that writes a warning as one line (motionkit's warnings name their file
    themselves), without Python's echo of the source line that raised it. The CLI and the batch
    workers install it."""
    return f"warning: {message}\n"
