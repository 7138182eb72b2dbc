"""The body model evaluated on the SMPL-X parameters stored in a result file, and the cameras the fit used."""

from __future__ import annotations

import json

import numpy as np
import torch

from motionkit.body.model import BodyModel
from motionkit.common.errors import DataError
from motionkit.data.store import TakeResult
from motionkit.geometry.camera import Camera, CameraRig


def fitted_body(
    result: TakeResult, vertex_keypoints: tuple[str, ...] = (), *, return_transforms: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Forward kinematics (float64) of a fitted take with the body model that made it.

    Returns ``joints (M, 55 + K, 3)`` world metres (``K = len(vertex_keypoints)``) and, with
    ``return_transforms``, the joints' world rotations ``(M, 55, 3, 3)``. Frames without a fit
    (NaN parameters) are evaluated at the zero pose: mask them with ``result["valid"]``.
    """
    if "smplx/global_orient" not in result.arrays:
        raise DataError(
            None, f"result of take {result.attrs.get('take_uid')} has no fit (stages: {', '.join(result.stages)})"
        )
    go = result["smplx/global_orient"]
    bm = BodyModel.load(result.config.get("body_model"), vertex_keypoints=vertex_keypoints, dtype=torch.float64)
    with torch.no_grad():
        out = bm(
            torch.as_tensor(result["smplx/betas"]).expand(len(go), 10),
            torch.as_tensor(np.nan_to_num(go)),
            torch.as_tensor(np.nan_to_num(result["smplx/body_pose"]).reshape(-1, 21, 3)),
            torch.as_tensor(np.nan_to_num(result["smplx/transl"])),
            return_transforms=return_transforms,
        )
    if return_transforms:
        return out[0].numpy(), out[1].numpy()
    return out.numpy()


def fitted_valid(result: TakeResult) -> np.ndarray:
    """``(M,)`` bool: frames with a valid fit (the stored mask, or finite parameters)."""
    if "valid" in result.arrays:
        return result["valid"].astype(bool)
    return np.isfinite(result["smplx/global_orient"]).all(-1)


def fitted_rig(result: TakeResult) -> CameraRig:
    """The cameras a fit used, in the result's camera order: the calibration's intrinsics and sizes with
    the poses of ``fit/T_cam_world`` (the calibration's own poses when the fit has none)."""
    names = json.loads(result.group_attrs["cameras"]["names"])
    poses = result["cameras/T_world_cam"]
    if "fit/T_cam_world" in result.arrays:
        poses = np.linalg.inv(result["fit/T_cam_world"])
    sizes, params = result["cameras/size"], result["cameras/params"]
    return CameraRig(
        [Camera(n, int(s[0]), int(s[1]), p, T) for n, s, p, T in zip(names, sizes, params, poses, strict=True)]
    )
