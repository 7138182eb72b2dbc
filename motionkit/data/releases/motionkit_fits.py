"""motionkit's own result files (``<fits>/<take_uid>.h5``) as ``SampledJoints``: the stored COCO-17
joints (the take's learned landmarks) at the fit grid, the fit's validity and its joint rotations."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from motionkit.body.fitting import FACE_KEYPOINTS
from motionkit.conventions import COCO17_OFFSET_PARENT, SMPLX_TO_COCO17
from motionkit.data.fitted_body import fitted_body, fitted_valid
from motionkit.data.releases.record import SampledJoints
from motionkit.data.store import TakeResult, read_result, result_path


def sampled_joints(result: TakeResult, path: Path | None = None) -> SampledJoints:
    """A fitted take's joints (frames without a fit NaN and invalid)."""
    J, GR = fitted_body(result, FACE_KEYPOINTS, return_transforms=True)
    valid = fitted_valid(result)
    joints = J[:, SMPLX_TO_COCO17]
    if "joints/coco17" in result.arrays:  # the stored landmarks (the fit's own COCO keypoints)
        joints = np.where(np.isfinite(result["joints/coco17"]), result["joints/coco17"], joints)
    joints[~valid] = np.nan
    return SampledJoints(str(result.attrs["take_uid"]), str(result.attrs.get("take_name", "")),
                         np.asarray(result["grid/frame_pos"], dtype=np.float64), joints, valid, float(result.fps),
                         GR[:, COCO17_OFFSET_PARENT],
                         {"format": "motionkit", "path": str(path or ""), "body_model": result.body_model})  # fmt: skip


def read_take(root: Path, take_uid: str, take_name: str = "", body_model: str | None = None) -> SampledJoints | None:
    """The take's fit in folder ``root``, or None when there is none (or it holds no fit)."""
    path = result_path(root, take_uid)
    if not path.is_file():
        return None
    result = read_result(path)
    if not result.has_fit:
        return None
    return sampled_joints(result, path)
