"""EE4D-Motion (UniEgoMotion's release): ``<root>/<take_name>/multiview_optim_2.pkl``, a joblib pickle
mapping a 30 fps take-frame index (multiples of 3 from 0: 10 fps) to ``{init_smpl_params,
tfix_smpl_params, final_smpl_params}``. ``final_smpl_params``: ``global_orient`` 6D, ``body_pose`` 21 x 6D
(or flat 126), ``betas`` (10), ``transl`` (3), optionally 12 hand PCA coefficients per hand (not fitted
in the release; ignored). 6D rotations follow pytorch3d (rows). SMPL-X neutral, 10 betas, in the take's
Ego-Exo4D world frame. The file is read with ``common.safe_pickle`` (no code runs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from motionkit.common.errors import DataError
from motionkit.common.safe_pickle import load_pickle
from motionkit.data.releases.record import SampledJoints, take_folder
from motionkit.data.releases.smplx_body import rotation_6d_to_matrix, smplx_coco17

FILE_NAME = "multiview_optim_2.pkl"
NATIVE_FPS = 10.0
FRAME_STEP = 3  # 30 fps frames per sample


def _param(params: dict, key: str, size: int, path: Path, frame: int) -> np.ndarray:
    if key not in params:
        raise DataError(path, f"frame {frame}: final_smpl_params has no {key!r} (keys: {sorted(params)})")
    a = np.asarray(params[key], dtype=np.float64).reshape(-1)
    if a.size != size:
        raise DataError(path, f"frame {frame}: {key} has {a.size} values, expected {size}")
    return a


def read_take(root: Path, take_uid: str, take_name: str, body_model: str | None) -> SampledJoints | None:
    """The take's fit, or None when the release has no folder for it."""
    folder = take_folder(root, take_name, take_uid)
    if folder is None:
        return None
    path = folder / FILE_NAME
    data = load_pickle(path)
    if not isinstance(data, dict) or not data:
        raise DataError(path, "expected a non-empty dict from take-frame index to fit parameters")
    frames = sorted(data)
    bad = [f for f in frames if not isinstance(f, int | np.integer) or f < 0 or f % FRAME_STEP]
    if bad:
        raise DataError(path, f"frame keys must be non-negative multiples of {FRAME_STEP}; got {bad[:5]}")
    go, bp, betas, tr = [], [], [], []
    for f in frames:
        entry = data[f]
        params = entry.get("final_smpl_params") if isinstance(entry, dict) else None
        if not isinstance(params, dict):
            raise DataError(path, f"frame {f}: no final_smpl_params")
        go.append(_param(params, "global_orient", 6, path, f))
        bp.append(_param(params, "body_pose", 126, path, f).reshape(21, 6))
        betas.append(_param(params, "betas", 10, path, f))
        tr.append(_param(params, "transl", 3, path, f))
    go, bp, betas, tr = (np.stack(x) for x in (go, bp, betas, tr))
    ok = np.isfinite(go).all(-1) & np.isfinite(bp).all((-1, -2)) & np.isfinite(betas).all(-1) & np.isfinite(tr).all(-1)
    if not ok.any():
        raise DataError(path, "no frame has finite parameters")
    joints, parent_rot = smplx_coco17(
        body_model, rotation_6d_to_matrix(np.nan_to_num(go)), rotation_6d_to_matrix(np.nan_to_num(bp)),
        np.nan_to_num(betas), np.nan_to_num(tr),
    )  # fmt: skip
    return SampledJoints(take_uid, take_name, np.asarray(frames, dtype=np.float64), np.where(ok[:, None, None], joints,
                         np.nan), ok, NATIVE_FPS, parent_rot,
                         {"format": "ee4d-motion", "path": str(path), "body_model": body_model})  # fmt: skip
