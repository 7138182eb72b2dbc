"""The body model that made a fit, evaluated on the SMPL-X parameters stored in its result file, and the
cameras the fit used."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import torch

from motionkit.body.model import BodyModel
from motionkit.body.model_file import ENV_VAR, default_synthetic_model_path, load_model_file
from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import EgoExoDataset, Take
from motionkit.data.store import TakeResult
from motionkit.geometry.camera import Camera, CameraRig


def fit_model_path(result: TakeResult) -> str:
    """The body model file that made a fit, found on this machine: the file its config names, the synthetic
    model where the fit was made with that, else ``$MOTIONKIT_BODY_MODEL`` (a fit made on a
    cluster node, looked at elsewhere). The first of them whose SHA-256 is the one the result records
    (``body_model``) is used; ``DataError`` where none is, naming what was tried: another SMPL-X file would
    pose a different body with the same parameters. A result that records no identity gets the file its config
    names, or the default (``body.model_file.resolve_model_path``)."""
    recorded, identity = result.config.get("body_model"), result.body_model
    if not identity:  # a result that does not say: the file its config names, or the default
        return load_model_file(recorded).path
    candidates = [recorded] if recorded is not None and Path(recorded).expanduser().exists() else []
    if identity.get("synthetic"):  # generated the same way on every machine
        candidates.append(str(default_synthetic_model_path()))
    if os.environ.get(ENV_VAR):
        candidates.append(os.environ[ENV_VAR])
    want, candidates = identity.get("sha256"), list(dict.fromkeys(candidates))  # each file once
    for candidate in candidates:
        model = load_model_file(candidate)
        if want is None or model.sha256 == want:
            return model.path
    tried = ", ".join(candidates) or "none"
    raise DataError(result.path, f"the body model that made this fit ({identity.get('file') or recorded}, sha256 "
                                 f"{str(want)[:12]}...) is not on this machine (tried: {tried}); set ${ENV_VAR} "
                                 "to your copy of it")  # fmt: skip


def fitted_body(
    result: TakeResult, vertex_keypoints: tuple[str, ...] = (), *, return_transforms: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Forward kinematics (float64) of a fitted take with the body model that made it.

    Returns ``joints (M, 55 + K, 3)`` world metres (``K = len(vertex_keypoints)``) and, with
    ``return_transforms``, the joints' world rotations ``(M, 55, 3, 3)``. Frames without a fit
    (NaN parameters) are evaluated at the zero pose: mask them with ``result["valid"]``.
    """
    result.require_fit()
    go = result["smplx/global_orient"]
    bm = BodyModel.load(fit_model_path(result), vertex_keypoints=vertex_keypoints, dtype=torch.float64)
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


def take_of_result(result: TakeResult, root: str | os.PathLike | None = None) -> Take | None:
    """The dataset take a fit was made from, for its videos, calibration and annotations: in ``root`` when
    given (``DataError`` where it is not there: the user named that dataset), else in the dataset the
    result records (``dataset_root``); None, with a warning, where that is not on this machine or no
    longer holds the take."""
    uid = str(result.attrs.get("take_uid"))
    if root is not None:
        if not Path(root).is_dir():
            raise DataError(root, "dataset folder not found")
        return EgoExoDataset(root).take(uid)
    recorded = result.attrs.get("dataset_root")
    why = str(DataError(recorded, "dataset folder not found"))
    if recorded and Path(recorded).is_dir():
        try:
            return EgoExoDataset(recorded).take(uid)
        except DataError as exc:
            why = str(exc)
    warnings.warn(f"{result.path or uid}: the dataset it was fitted from is not here ({why}); going on without "
                  "its videos and annotations", stacklevel=2)  # fmt: skip
    return None
