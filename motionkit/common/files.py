"""Atomic file writes: write to a temporary file in the same folder, then rename over the target."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from motionkit.common import faults
from motionkit.common.errors import DataError


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it to ``path``, on error delete it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix + ".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        faults.check_write(path)  # a rehearsal's injected full disk (inactive otherwise)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document in ``path``; ``DataError`` naming the file (and the line) where it is missing or
    malformed."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "file not found")
    try:
        with open(path) as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataError(path, f"malformed JSON: {exc.msg}", line=exc.lineno) from exc
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not a text file ({exc.reason})") from exc


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_json_atomic(path: str | os.PathLike, obj: Any, indent: int | None = None) -> None:
    write_text_atomic(path, json.dumps(obj, indent=indent))


def save_npz_atomic(path: str | os.PathLike, arrays: dict[str, Any]) -> Path:
    """Write ``arrays`` as a compressed ``.npz`` (what ``np.savez_compressed`` writes, read by ``np.load``)
    atomically and deterministically: the same arrays give the same bytes (no time stamps, sorted
    members); returns ``path``."""
    path = Path(path)
    with atomic_path(path, suffix=".npz") as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(arrays[name]), allow_pickle=False)
    return path
