"""SMPL-X parameter sequences in the AMASS layout, one ``.npz`` per take: ``poses (T, 165)`` (root 3, body
63, jaw 3, eyes 6, hands 90; axis-angle) or the split keys ``root_orient``, ``pose_body``, ...; ``trans
(T, 3)``; ``betas`` (the first 10 used); ``mocap_frame_rate`` (or ``fps``); ``gender``;
``surface_model_type``. What the HumanML3D pipeline, TMR and the Blender SMPL-X add-on read.

motionkit's export (``write_take``) adds ``motionkit_*`` keys: the take (``motionkit_take_uid``,
``motionkit_take_name``), each sample's 30 fps take-frame position (``motionkit_frame_pos``, the first
is ``motionkit_first_take_frame``), the fit's validity (``motionkit_valid``; invalid samples hold the
parameters interpolated from the valid ones around them, so the sequence plays continuously), the
take's learned landmark offsets (``motionkit_landmark_offset_m (17, 3)``, joint frames) and the body
model's identity. Read back, a file with those offsets scores as the fit itself; without them, as any
other SMPL-X source (joint centres).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from motionkit import __version__
from motionkit.common.errors import DataError
from motionkit.common.files import save_npz_atomic
from motionkit.common.safe_pickle import load_npz
from motionkit.conventions import TAKE_FPS
from motionkit.data.releases.record import SampledJoints
from motionkit.data.releases.smplx_body import smplx_coco17
from motionkit.data.store import TakeResult
from motionkit.geometry.interpolation import fill_gaps_bracket, lerp, slerp_rotvec

POSE_SIZES = (("root_orient", 3), ("pose_body", 63), ("pose_jaw", 3), ("pose_eye", 6), ("pose_hand", 90))


def export_arrays(result: TakeResult) -> dict[str, np.ndarray]:
    """The AMASS-layout arrays of a fitted take (``write_take``)."""
    result.require_fit()
    go, bp, tr = result["smplx/global_orient"], result["smplx/body_pose"].reshape(-1, 63), result["smplx/transl"]
    valid = result["valid"].astype(bool) & np.isfinite(go).all(-1) & np.isfinite(tr).all(-1)
    if not valid.any():
        raise DataError(result.path, f"take {result.attrs.get('take_uid')}: no valid frame to export")
    b = fill_gaps_bracket(valid)  # invalid samples: SLERP / linear between the valid ones, held at the ends
    go_f, tr_f = slerp_rotvec(go[valid], b), lerp(tr[valid], b)
    bp_f = slerp_rotvec(bp[valid].reshape(-1, 21, 3), b).reshape(-1, 63)
    T = len(go)
    fps = float(result.fps)
    poses = np.concatenate([go_f, bp_f, np.zeros((T, 99))], 1)
    offsets = result["fit/landmark_offset_m"] if "fit/landmark_offset_m" in result.arrays else np.zeros((17, 3))
    frame_pos = result["grid/frame_pos"]
    return {
        "poses": poses,
        "root_orient": go_f,
        "pose_body": bp_f,
        "pose_jaw": np.zeros((T, 3)),
        "pose_eye": np.zeros((T, 6)),
        "pose_hand": np.zeros((T, 90)),
        "trans": tr_f,
        "betas": np.asarray(result["smplx/betas"], dtype=np.float64),
        "num_betas": np.array(10),
        "gender": np.array("neutral"),
        "surface_model_type": np.array("smplx"),
        "mocap_frame_rate": np.array(fps),
        "mocap_time_length": np.array(T / fps),
        "motionkit_take_uid": np.array(str(result.attrs["take_uid"])),
        "motionkit_take_name": np.array(str(result.attrs.get("take_name", ""))),
        "motionkit_frame_pos": np.asarray(frame_pos, dtype=np.float64),
        "motionkit_first_take_frame": np.array(float(frame_pos[0])),
        "motionkit_valid": valid,
        "motionkit_landmark_offset_m": np.asarray(offsets, dtype=np.float64),
        "motionkit_body_model": np.array(json.dumps(result.body_model, sort_keys=True, default=str)),
        "motionkit_version": np.array(__version__),
    }


def write_take(result: TakeResult, out_dir: Path) -> Path:
    """``<out_dir>/<take_name>.npz`` (atomic, the same fit gives the same bytes); returns its path."""
    name = str(result.attrs.get("take_name") or result.attrs["take_uid"])
    return save_npz_atomic(Path(out_dir) / f"{name}.npz", export_arrays(result))


def _poses(z: dict, path: Path) -> np.ndarray:
    if "poses" in z:
        poses = np.asarray(z["poses"], dtype=np.float64)
        if poses.ndim != 2 or poses.shape[1] < 66:
            raise DataError(path, f"poses must be (T, 165) (or at least root + body, 66); got {poses.shape}")
        return poses[:, :66]
    if "root_orient" in z and "pose_body" in z:
        return np.concatenate([np.asarray(z["root_orient"], np.float64), np.asarray(z["pose_body"], np.float64)], 1)
    raise DataError(path, f"no poses (or root_orient + pose_body); keys: {sorted(z)}")


def read_file(path: Path, body_model: str | None, take_uid: str = "", take_name: str = "") -> SampledJoints:
    """One file's COCO-17 joints (``smplx_body.smplx_coco17``)."""
    z = load_npz(path)
    poses = _poses(z, path)
    T = len(poses)
    if "trans" not in z or np.shape(z["trans"]) != (T, 3):
        raise DataError(path, f"trans must be ({T}, 3); got {np.shape(z.get('trans'))}")
    if "betas" not in z or np.size(z["betas"]) < 10:
        raise DataError(path, "betas must hold at least 10 values")
    betas = np.asarray(z["betas"], dtype=np.float64).reshape(-1, np.shape(z["betas"])[-1])[..., :10]
    betas = betas[0] if len(betas) == 1 or len(betas) != T else betas
    fps = float(np.asarray(z.get("mocap_frame_rate", z.get("mocap_framerate", z.get("fps", 0.0)))))
    if not fps > 0:
        raise DataError(path, "no frame rate (mocap_frame_rate or fps)")
    first = float(np.asarray(z.get("motionkit_first_take_frame", 0.0)))
    frame_pos = np.asarray(z["motionkit_frame_pos"], np.float64) if "motionkit_frame_pos" in z else (
        first + np.arange(T) * TAKE_FPS / fps)  # fmt: skip
    trans = np.asarray(z["trans"], dtype=np.float64)
    valid = np.isfinite(poses).all(-1) & np.isfinite(trans).all(-1)
    if "motionkit_valid" in z:
        valid &= np.asarray(z["motionkit_valid"]).astype(bool).reshape(T)
    offsets = z.get("motionkit_landmark_offset_m")
    body_pose = np.nan_to_num(poses[:, 3:66]).reshape(T, 21, 3)
    joints, parent_rot = smplx_coco17(body_model, np.nan_to_num(poses[:, :3]), body_pose, betas, np.nan_to_num(trans),
                                      offsets)  # fmt: skip
    joints[~valid] = np.nan
    uid = str(np.asarray(z.get("motionkit_take_uid", take_uid)))
    name = str(np.asarray(z.get("motionkit_take_name", take_name)))
    return SampledJoints(uid, name, frame_pos, joints, valid, fps, parent_rot,
                         {"format": "smplx-npz", "path": str(path), "body_model": body_model,
                          "landmark_offsets": offsets is not None})  # fmt: skip


def read_take(root: Path, take_uid: str, take_name: str, body_model: str | None) -> SampledJoints | None:
    """The take's file in folder ``root`` (``<take_name>.npz`` or ``<take_uid>.npz``), or None."""
    for name in (take_name, take_uid):
        path = Path(root) / f"{name}.npz"
        if path.is_file():
            return read_file(path, body_model, take_uid, take_name)
    return None
