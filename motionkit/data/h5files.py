"""Reading motionkit's own HDF5 files: one opening rule for every kind (result files, observation caches)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import h5py

from motionkit.common.errors import DataError


@contextlib.contextmanager
def open_motionkit_h5(path: Path, fmt: str, what: str) -> Iterator[h5py.File]:
    """Open ``path`` for reading as a motionkit file of format ``fmt`` (its root attribute ``format``);
    a missing file, another format or an unreadable one is a ``DataError`` naming the file and ``what``
    it should be (``"result file"``, ``"observation cache"``)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, f"{what} not found")
    try:
        with h5py.File(path, "r") as f:
            if f.attrs.get("format") != fmt:
                raise DataError(path, f"not a motionkit {what} (format={f.attrs.get('format')!r})")
            yield f
    except OSError as exc:
        raise DataError(path, f"cannot read HDF5: {exc}") from exc
