"""Ego-Exo4D Human Meshes: ``<root>/<take_name>/points_triangulated_world_results_merged.npz`` with
``joints3d (1, T, 67, 3)`` in the take's world frame (OpenPose BODY_25, then 21 + 21 hand joints) and
``valid (1, T)``, one sample per 30 fps video frame from frame 0 (the tail may be a few frames short).
Only the joints are scored (BODY_25 -> COCO-17, ``BODY25_TO_COCO17``); the release's SMPL-H parameters
are not read. The npz is opened with ``common.safe_pickle.load_npz`` (no pickles)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from motionkit.common.errors import DataError
from motionkit.common.safe_pickle import load_npz
from motionkit.data.releases.record import SampledJoints, take_folder

FILE_NAME = "points_triangulated_world_results_merged.npz"
NATIVE_FPS = 30.0
# COCO-17 order (nose, eyes, ears, shoulders, elbows, wrists, hips, knees, ankles; left first) in
# OpenPose BODY_25 (0 nose, 2-4 right arm, 5-7 left arm, 9-11 right leg, 12-14 left leg, 15/16 eyes,
# 17/18 ears)
BODY25_TO_COCO17 = np.array([0, 16, 15, 18, 17, 5, 2, 6, 3, 7, 4, 12, 9, 13, 10, 14, 11])


def read_take(root: Path, take_uid: str, take_name: str, body_model: str | None = None) -> SampledJoints | None:
    """The take's joints, or None when the release has no folder for it."""
    folder = take_folder(root, take_name, take_uid)
    if folder is None:
        return None
    path = folder / FILE_NAME
    z = load_npz(path)
    if "joints3d" not in z:
        raise DataError(path, f"no joints3d (keys: {sorted(z)})")
    j = np.asarray(z["joints3d"], dtype=np.float64)
    if j.ndim == 4 and j.shape[0] == 1:
        j = j[0]
    if j.ndim != 3 or j.shape[1] < 25 or j.shape[2] != 3:
        raise DataError(path, f"joints3d must be (1, T, 67, 3); got {z['joints3d'].shape}")
    T = len(j)
    valid = np.ones(T, bool) if "valid" not in z else np.asarray(z["valid"]).reshape(-1).astype(bool)
    if valid.shape != (T,):
        raise DataError(path, f"valid has {valid.size} entries for {T} frames")
    joints = j[:, BODY25_TO_COCO17]
    valid &= np.isfinite(joints).any((-1, -2))
    joints[~valid] = np.nan
    return SampledJoints(take_uid, take_name, np.arange(T, dtype=np.float64), joints, valid, NATIVE_FPS, None,
                         {"format": "egoexo4d-hm", "path": str(path)})  # fmt: skip
