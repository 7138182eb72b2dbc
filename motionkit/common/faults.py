"""Injected faults for batch rehearsals (``benchmarks/bench_batch.py``): a take that runs out of memory
or finds its output disk full, on chosen attempts, so that the retry and cleanup paths run as they
would on a cluster.

Inactive unless the environment variable ``MOTIONKIT_FAULT_PLAN`` names a JSON file
``{take_uid: {"fault": "memory" | "disk_full", "attempts": [1, ...]}}``. ``motionkit.distributed``
arms the plan for the take and attempt a one-take task runs (``armed``); then

- ``memory``: ``check_start`` raises ``MemoryError`` as the take starts;
- ``disk_full``: every atomic write of that task (``common.files.atomic_path``) fails after its
  temporary file was written, with ``OSError(ENOSPC)``, as a full disk fails a write: the temporary
  file is deleted and the target is left as it was.

Killed workers and drivers need no plan: the rehearsal kills the processes (their pids are in the
batch's running markers).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path

PLAN_ENV = "MOTIONKIT_FAULT_PLAN"
FAULTS = ("memory", "disk_full")

_armed: str | None = None  # the fault of the task running in this process, if any


def planned_fault(take_uid: str, attempt: int) -> str | None:
    """The fault the plan (``$MOTIONKIT_FAULT_PLAN``) sets for this take and attempt, or None."""
    path = os.environ.get(PLAN_ENV)
    if not path:
        return None
    entry = json.loads(Path(path).read_text()).get(take_uid)
    if not entry or attempt not in entry.get("attempts", [1]):
        return None
    if entry["fault"] not in FAULTS:
        raise ValueError(f"{path}: unknown fault {entry['fault']!r} for take {take_uid}; faults: {', '.join(FAULTS)}")
    return entry["fault"]


@contextlib.contextmanager
def armed(take_uid: str, attempt: int) -> Iterator[None]:
    """Arm the planned fault of ``take_uid`` at ``attempt`` (if any) while the block runs."""
    global _armed
    previous, _armed = _armed, planned_fault(take_uid, attempt)
    try:
        yield
    finally:
        _armed = previous


def check_start() -> None:
    """Raise the armed ``memory`` fault."""
    if _armed == "memory":
        raise MemoryError("injected by the fault plan (out of memory)")


def check_write(path: str | os.PathLike) -> None:
    """Raise the armed ``disk_full`` fault for a write of ``path``."""
    if _armed == "disk_full":
        raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (injected by the fault plan)", str(path))
