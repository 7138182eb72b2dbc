"""The Ego-Exo4D body-pose prediction JSON (the official baselines' and challenge's format, one file):
``{take_uid: {"take_name": ..., "body": {"<frame>": [[x, y, z] x 17]}}}``, world frame, COCO-17 order,
NaN (or null) for a missing joint; frames are 30 fps take frames."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from motionkit.common.errors import DataError
from motionkit.common.files import read_json
from motionkit.data.releases.record import SampledJoints

NATIVE_FPS = 30.0


def read_file(path: Path) -> dict:
    """The whole prediction file, checked to be a JSON object of takes."""
    path = Path(path)
    if path.is_dir():
        found = ", ".join(sorted(p.name for p in path.glob("*.json"))) or "none"
        raise DataError(
            path, f"a folder: coco17-json reads one prediction file, give its path (JSON files here: {found})"
        )
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(path, "expected an object {take_uid: {take_name, body: {frame: 17 x 3}}}")
    return data


def read_take(data: dict, path: Path, take_uid: str, take_name: str) -> SampledJoints | None:
    """One take of a prediction file (``read_file``), by take_uid (or take_name); None when absent."""
    entry = data.get(take_uid) or next((v for v in data.values() if isinstance(v, dict)
                                        and v.get("take_name") == take_name), None)  # fmt: skip
    if entry is None:
        return None
    body = entry.get("body") if isinstance(entry, dict) else None
    if not isinstance(body, dict):
        raise DataError(path, f"take {take_uid}: no 'body' object")
    try:
        frames = sorted(int(k) for k in body)
    except ValueError:
        raise DataError(path, f"take {take_uid}: frame keys must be integers") from None
    joints = np.full((len(frames), 17, 3), np.nan)
    for i, f in enumerate(frames):
        pts = body[str(f)] if str(f) in body else body[f]
        try:
            a = np.array([[math.nan if v is None else float(v) for v in p] for p in pts], dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError(path, f"take {take_uid}, frame {f}: joints must be 17 x 3 numbers") from None
        if a.shape != (17, 3):
            raise DataError(path, f"take {take_uid}, frame {f}: joints of shape {a.shape}, expected (17, 3)")
        joints[i] = a
    valid = np.isfinite(joints).all(-1).any(-1)
    return SampledJoints(take_uid, str(entry.get("take_name", take_name)), np.asarray(frames, dtype=np.float64),
                         joints, valid, NATIVE_FPS, None, {"format": "coco17-json", "path": str(path)})  # fmt: skip
