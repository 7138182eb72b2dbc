"""First-frame-anchored person-centric trajectory (docs/motion.md).

Input is in a y-up world. Output axes: +x = the subject's initial left, +y = up, +z = the initial
forward direction, origin at the frame-0 root. Angles are relative to frame 0, in degrees, yaw
unwrapped (a 400 degree spin reads 400).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from motionkit.geometry.rotations import axis_rotation, rotvec_to_matrix

HEADING_MIN_NORM = 0.2
GIMBAL_DEG = 80.0


@dataclass
class Trajectory:
    """``pos_m (T, 3)`` in the anchored frame; ``yaw_deg``, ``pitch_deg``, ``roll_deg (T,)``."""

    time_s: np.ndarray
    pos_m: np.ndarray
    yaw_deg: np.ndarray
    pitch_deg: np.ndarray
    roll_deg: np.ndarray
    heading0_deg: float
    origin_world: np.ndarray
    frame: str = "person"
    heading_source: str = "global_orient"
    camera: str | None = None
    flags: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "frames": int(len(self.time_s)),
            "time_s": self.time_s.tolist(),
            "pos_m": self.pos_m.tolist(),
            "yaw_deg": self.yaw_deg.tolist(),
            "pitch_deg": self.pitch_deg.tolist(),
            "roll_deg": self.roll_deg.tolist(),
            "heading0_deg": self.heading0_deg,
            "origin_world": self.origin_world.tolist(),
            "frame": self.frame,
            "heading_source": self.heading_source,
            "camera": self.camera,
            "flags": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.flags.items()},
        }


def heading(R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Heading angle ``atan2(f_x, f_z)`` of the body +z axis ``f = R e_z`` and ``|(f_x, f_z)|``."""
    f = R[..., :, 2]
    return np.arctan2(f[..., 0], f[..., 2]), np.hypot(f[..., 0], f[..., 2])


def joints_heading(joints: np.ndarray) -> float | None:
    """Heading from hips and shoulders (SMPL ids 1, 2, 16, 17) of one frame ``(>=18, 3)``; None if degenerate."""
    left = (joints[1] - joints[2]) + (joints[16] - joints[17])
    left[1] = 0.0
    fwd = np.cross(left, [0.0, 1.0, 0.0])
    if np.linalg.norm(fwd) < 1e-6:
        return None
    return float(np.arctan2(fwd[0], fwd[2]))


def anchor_trajectory(
    transl: np.ndarray,
    global_orient: np.ndarray,
    *,
    fps: float = 20.0,
    frame: str = "person",
    joints: np.ndarray | None = None,
    camera_R_world: np.ndarray | None = None,
    camera_name: str | None = None,
    camera_depth_sign: int = 1,
) -> Trajectory:
    """Anchor a root trajectory at frame 0.

    Args:
        transl: ``(T, 3)`` root (pelvis) positions or SMPL-X ``transl``, metres, y-up world.
        global_orient: ``(T, 3)`` axis-angle or ``(T, 3, 3)`` root orientation, y-up world.
        fps: frame rate of the samples.
        frame: ``"person"`` (the subject's initial heading) or ``"camera"`` (``camera_R_world``'s
            optical axis heading, y-up world, camera-to-world rotation).
        joints: optional ``(T, >=18, 3)`` joints for the heading fallback.
        camera_depth_sign: ``-1`` makes +z point toward the camera (public HumanMoveVQA labelling).
    """
    p = np.asarray(transl, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3 or len(p) < 1:
        raise ValueError(f"transl must have shape (T, 3); got {p.shape}")
    go = np.asarray(global_orient, dtype=np.float64)
    R = go if go.ndim == 3 else rotvec_to_matrix(go)
    if R.shape != (len(p), 3, 3):
        raise ValueError(f"global_orient must have shape (T, 3) or (T, 3, 3) with T = {len(p)}; got {go.shape}")
    if not (np.isfinite(p).all() and np.isfinite(R).all()):
        raise ValueError("transl and global_orient must be finite (split sequences at invalid frames first)")
    flags: dict = {}
    source = "global_orient"
    psi, norm = heading(R[0])
    psi0 = float(psi)
    if frame == "camera":
        if camera_R_world is None:
            raise ValueError("frame='camera' needs camera_R_world")
        f = np.asarray(camera_R_world)[:, 2] * camera_depth_sign
        psi0 = float(np.arctan2(f[0], f[2]))
        source = "camera"
    elif frame != "person":
        raise ValueError(f"frame must be 'person' or 'camera', got {frame!r}")
    elif norm < HEADING_MIN_NORM:
        h = joints_heading(np.asarray(joints)[0]) if joints is not None else None
        if h is None:
            psi0, source = 0.0, "degenerate"
            flags["HEADING_DEGENERATE"] = True
        else:
            psi0, source = h, "joints"
    H0 = axis_rotation("y", psi0)
    pos = (p - p[0]) @ H0  # H0^T (p - p0) for row vectors
    Q = np.einsum("ji,tjk->tik", H0, R)
    with warnings.catch_warnings():  # gimbal lock is reported through the GIMBAL flag
        warnings.simplefilter("ignore", UserWarning)
        eul = Rotation.from_matrix(Q).as_euler("YXZ")  # intrinsic Y-X-Z: a, b, c
    a = np.unwrap(eul[:, 0])
    b = eul[:, 1]
    c = np.unwrap(eul[:, 2])
    flags["GIMBAL"] = np.abs(np.rad2deg(b)) > GIMBAL_DEG
    return Trajectory(
        time_s=np.arange(len(p)) / fps,
        pos_m=pos,
        yaw_deg=np.rad2deg(a - a[0]),
        pitch_deg=np.rad2deg(b - b[0]),
        roll_deg=-np.rad2deg(c - c[0]),
        heading0_deg=float(np.rad2deg(psi0)),
        origin_world=p[0].copy(),
        frame=frame,
        heading_source=source,
        camera=camera_name,
        flags=flags,
    )
