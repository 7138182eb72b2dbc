"""Aria closed-loop trajectory and the CPF head anchor (docs/conventions.md, "Aria").

``T_world_device`` is the pose of the LEFT SLAM camera; the head anchor is
``T_world_cpf = T_world_device @ T_device_cpf``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motionkit.geometry.interpolation import bracket, lerp, slerp_quat
from motionkit.geometry.rotations import make_transform, matrix_to_quat_xyzw, quat_xyzw_to_matrix

# CAD defaults (projectaria_tools core/calibration/ConfigData.cpp)
R_DEVICE_CPF_CAD = np.array(
    [[-0.031860, -0.998630, -0.041521], [0.793353, 0.000000, -0.608761], [0.607927, -0.052336, 0.792266]]
)
T_DEVICE_CPF_CAD = {
    "DVT-S": make_transform(R_DEVICE_CPF_CAD, np.array([0.004953, -0.049148, -0.049185])),
    "DVT-L": make_transform(R_DEVICE_CPF_CAD, np.array([0.004993, -0.051460, -0.049950])),
}
DEFAULT_CPF_SOURCE = "cad_assumed"
DEFAULT_MAX_GAP_NS = 5_000_000  # "no pose" when the nearest sample is more than 5 ms away


def cad_T_device_cpf(subtype: str = "DVT-S") -> np.ndarray:
    """CAD ``T_device_cpf`` (4, 4) for ``"DVT-S"`` (default) or ``"DVT-L"``; re-orthonormalised."""
    T = T_DEVICE_CPF_CAD[subtype].copy()
    U, _, Vt = np.linalg.svd(T[:3, :3])
    T[:3, :3] = U @ Vt
    return T


@dataclass(frozen=True)
class AriaTrajectory:
    """Device poses on the Aria clock.

    ``t_us (N,)`` int64 device microseconds (sorted), ``position (N, 3)`` metres (world, z up),
    ``quat_xyzw (N, 4)`` unit quaternions of ``T_world_device``, ``quality (N,)``.
    """

    t_us: np.ndarray
    position: np.ndarray
    quat_xyzw: np.ndarray
    quality: np.ndarray

    def __len__(self) -> int:
        return len(self.t_us)

    def device_pose_at(self, ts_ns: np.ndarray, max_gap_ns: int = DEFAULT_MAX_GAP_NS):
        """Interpolated ``T_world_device`` at device timestamps (nanoseconds).

        Linear translation and SLERP between the bracketing samples. Returns
        ``(T (..., 4, 4), valid (...))``; T is NaN where the nearest sample is farther than
        ``max_gap_ns`` or the time is outside the trajectory or NaN.
        """
        ts = np.asarray(ts_ns, dtype=np.float64)
        t = self.t_us.astype(np.float64) * 1e3
        flat = ts.reshape(-1)
        b = bracket(t, flat)
        with np.errstate(invalid="ignore"):
            nearest = np.minimum(np.abs(flat - t[b.i0]), np.abs(t[b.i1] - flat))
            valid = b.inside & (nearest <= max_gap_ns)
        T = np.full((len(flat), 4, 4), np.nan)
        T[valid] = make_transform(quat_xyzw_to_matrix(slerp_quat(self.quat_xyzw, b)), lerp(self.position, b))[valid]
        return T.reshape(*ts.shape, 4, 4), valid.reshape(ts.shape)

    def head_anchor_at(self, ts_ns: np.ndarray, T_device_cpf: np.ndarray | None = None, **kw) -> HeadAnchor:
        """CPF head anchor at device timestamps (ns); see ``HeadAnchor``."""
        T_wd, valid = self.device_pose_at(ts_ns, **kw)
        T_dc = cad_T_device_cpf() if T_device_cpf is None else np.asarray(T_device_cpf, dtype=np.float64)
        T = T_wd @ T_dc
        return HeadAnchor(position=T[..., :3, 3], rotation=T[..., :3, :3], valid=valid)

    @staticmethod
    def from_poses(t_us: np.ndarray, T_world_device: np.ndarray, quality: np.ndarray | None = None):
        q = matrix_to_quat_xyzw(T_world_device[..., :3, :3])
        qual = np.ones(len(t_us)) if quality is None else quality
        return AriaTrajectory(np.asarray(t_us, np.int64), T_world_device[..., :3, 3].copy(), q, qual)


@dataclass(frozen=True)
class HeadAnchor:
    """CPF head anchor: ``position (..., 3)`` world metres, ``rotation (..., 3, 3)`` (CPF axes:
    X left, Y up, Z forward), ``valid (...)``. Invalid entries are NaN."""

    position: np.ndarray
    rotation: np.ndarray
    valid: np.ndarray
