"""A fitted take as a BVH file (``motionkit export --format bvh``): the SMPL-X body's kinematic tree (the
pelvis and the 21 body joints), rest offsets from the take's fitted shape, the root's translation, and
each joint's local rotation per frame.

* Units: centimetres (what Blender's and Maya's BVH importers assume for a human); frame time ``1 / fps``.
* Axes: ``up="y"`` (default; Blender, Maya, Unity) turns the Ego-Exo4D world (z up) into y up with
  ``conventions.R_ZUP_TO_YUP``; ``up="z"`` keeps the Ego-Exo4D world. Offsets are in the body's rest frame
  (SMPL-X canonical: y up, facing +z), so the body stands upright either way.
* Rotations: channels ``Zrotation Xrotation Yrotation`` (degrees), i.e. ``R = Rz Rx Ry`` of the local
  rotation, intrinsic, as the channels are listed.
* A BVH has no gaps: invalid frames are filled from the valid ones around them (SLERP, held at the ends)
  and listed, with the valid runs, in the side-car ``<name>.bvh.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from scipy.spatial.transform import Rotation

from motionkit.body.model import BodyModel
from motionkit.common.errors import DataError
from motionkit.common.files import write_json_atomic, write_text_atomic
from motionkit.conventions import COCO17_NAMES, R_ZUP_TO_YUP, SMPLX_JOINT_NAMES, SMPLX_PARENTS
from motionkit.data.fitted_body import fit_model_path
from motionkit.data.store import TakeResult
from motionkit.geometry.interpolation import bracket, fill_gaps_bracket, lerp, slerp_rotvec, valid_runs

BODY_JOINTS = 22  # the pelvis and the 21 body joints
CM = 100.0
EULER_ORDER = "ZXY"  # BVH channels Zrotation Xrotation Yrotation
LEAVES_END_SITE_CM = 5.0  # an End Site this far along the last bone of each chain


def filled_parameters(result: TakeResult, fps: float | None) -> tuple[np.ndarray, ...]:
    """Root rotation vectors ``(T, 3)``, body pose ``(T, 21, 3)``, translation ``(T, 3)``, validity ``(T,)``
    and the rate, gaps filled from the valid frames; resampled to ``fps`` when given."""
    result.require_fit()
    go, tr = result["smplx/global_orient"], result["smplx/transl"]
    bp = result["smplx/body_pose"].reshape(-1, 21, 3)
    valid = result["valid"].astype(bool) & np.isfinite(go).all(-1) & np.isfinite(tr).all(-1)
    if not valid.any():
        raise DataError(result.path, f"take {result.attrs.get('take_uid')}: no valid frame to export")
    b = fill_gaps_bracket(valid)
    go, bp, tr = slerp_rotvec(go[valid], b), slerp_rotvec(bp[valid], b), lerp(tr[valid], b)
    rate = float(result.fps)
    if fps is not None and abs(fps - rate) > 1e-9:
        t = np.arange(len(go)) / rate
        q = np.arange(0.0, t[-1] + 1e-9, 1.0 / fps)
        b = bracket(t, q)
        go, bp, tr = slerp_rotvec(go, b), slerp_rotvec(bp, b), lerp(tr, b)
        valid = valid[b.i0] & valid[b.i1]
        rate = float(fps)
    return go, bp, tr, valid, rate


def joint_trust(result: TakeResult) -> dict[str, float] | None:
    """Per COCO landmark, the share of the fit's valid frames in which it is trusted
    (``fit/joint_trusted``): what an export's joints rest on. None for fits without per-joint trust."""
    if "fit/joint_trusted" not in result.arrays:
        return None
    valid = result["valid"].astype(bool)
    trusted = result["fit/joint_trusted"].astype(bool)[valid]
    share = trusted.mean(0) if len(trusted) else np.zeros(trusted.shape[1])
    return {name: round(float(v), 4) for name, v in zip(COCO17_NAMES, share, strict=True)}


def bvh_text(result: TakeResult, up: str = "y", fps: float | None = None) -> tuple[str, dict]:
    """The BVH file of a fitted take and its side-car record (valid runs, filled frames)."""
    if up not in ("y", "z"):
        raise ValueError(f"up must be 'y' or 'z', not {up!r}")
    go, bp, tr, valid, rate = filled_parameters(result, fps)
    body = BodyModel.load(fit_model_path(result), vertex_keypoints=(), dtype=torch.float64)
    with torch.no_grad():
        rest = body.rest_joints(torch.as_tensor(result["smplx/betas"], dtype=torch.float64)).numpy()[:BODY_JOINTS]
    A = R_ZUP_TO_YUP if up == "y" else np.eye(3)
    R_root = A @ Rotation.from_rotvec(go).as_matrix()  # body rest frame -> output world
    root_pos = (rest[0] + tr) @ A.T  # the pelvis: SMPL-X rotates the body about it, then translates
    children = {j: [c for c in range(1, BODY_JOINTS) if SMPLX_PARENTS[c] == j] for j in range(BODY_JOINTS)}
    lines = ["HIERARCHY"]

    def joint(j: int, depth: int) -> None:
        pad = "  " * depth
        off = np.zeros(3) if j == 0 else (rest[j] - rest[SMPLX_PARENTS[j]]) * CM
        lines.append(f"{pad}{'ROOT' if j == 0 else 'JOINT'} {SMPLX_JOINT_NAMES[j]}")
        lines.append(f"{pad}{{")
        lines.append(f"{pad}  OFFSET {off[0]:.6f} {off[1]:.6f} {off[2]:.6f}")
        rot = "Zrotation Xrotation Yrotation"
        lines.append(f"{pad}  CHANNELS 6 Xposition Yposition Zposition {rot}" if j == 0 else f"{pad}  CHANNELS 3 {rot}")
        for c in children[j]:
            joint(c, depth + 1)
        if not children[j]:
            bone = rest[j] - rest[SMPLX_PARENTS[j]]
            end = LEAVES_END_SITE_CM * bone / max(np.linalg.norm(bone), 1e-9)
            lines.extend([f"{pad}  End Site", f"{pad}  {{", f"{pad}    OFFSET {end[0]:.6f} {end[1]:.6f} {end[2]:.6f}",
                          f"{pad}  }}"])  # fmt: skip
        lines.append(f"{pad}}}")

    joint(0, 0)
    order = []

    def visit(j: int) -> None:
        order.append(j)
        for c in children[j]:
            visit(c)

    visit(0)
    local = Rotation.from_rotvec(bp.reshape(-1, 3)).as_matrix().reshape(len(bp), 21, 3, 3)
    euler = {0: Rotation.from_matrix(R_root).as_euler(EULER_ORDER, degrees=True)}
    for j in range(1, BODY_JOINTS):
        euler[j] = Rotation.from_matrix(local[:, j - 1]).as_euler(EULER_ORDER, degrees=True)
    lines += ["MOTION", f"Frames: {len(go)}", f"Frame Time: {1.0 / rate:.8f}"]
    cols = [root_pos * CM] + [euler[j] for j in order]
    frames = np.concatenate(cols, axis=1)
    lines += [" ".join(f"{v:.6f}" for v in row) for row in frames]
    side = {"take_uid": str(result.attrs.get("take_uid")), "take_name": str(result.attrs.get("take_name", "")),
            "fps": rate, "up": up, "units": "cm", "rotation_channels": "Zrotation Xrotation Yrotation",
            "frames": int(len(go)), "valid_runs": [list(r) for r in valid_runs(valid)],
            "filled_frames": np.flatnonzero(~valid).tolist(), "joint_trust": joint_trust(result),
            "body_model": result.body_model}  # fmt: skip
    return "\n".join(lines) + "\n", side


def write_take(result: TakeResult, out_dir: Path, up: str = "y", fps: float | None = None) -> Path:
    """``<out_dir>/<take_name>.bvh`` and its side-car ``.bvh.json`` (atomic; the same fit, the same bytes)."""
    name = str(result.attrs.get("take_name") or result.attrs["take_uid"])
    text, side = bvh_text(result, up, fps)
    path = Path(out_dir) / f"{name}.bvh"
    write_text_atomic(path, text)
    write_json_atomic(path.with_suffix(".bvh.json"), json.loads(json.dumps(side, default=str)), indent=1)
    return path
