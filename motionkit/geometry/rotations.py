"""Rotation helpers on numpy arrays (float64). Torch code uses ``roma`` directly.

Quaternions are stored **x, y, z, w** (Hamilton), as in the Ego-Exo4D CSVs, scipy and roma.
All functions accept leading batch dimensions.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation


def quat_xyzw_to_matrix(q: np.ndarray) -> np.ndarray:
    """``(..., 4)`` unit quaternions (x, y, z, w) -> ``(..., 3, 3)`` rotation matrices."""
    q = np.asarray(q, dtype=np.float64)
    shape = q.shape[:-1]
    return Rotation.from_quat(q.reshape(-1, 4)).as_matrix().reshape(*shape, 3, 3)


def matrix_to_quat_xyzw(R: np.ndarray) -> np.ndarray:
    """``(..., 3, 3)`` rotation matrices -> ``(..., 4)`` quaternions (x, y, z, w) with w >= 0."""
    R = np.asarray(R, dtype=np.float64)
    shape = R.shape[:-2]
    q = Rotation.from_matrix(R.reshape(-1, 3, 3)).as_quat().reshape(*shape, 4)
    return np.where(q[..., 3:4] < 0, -q, q)


def rotvec_to_matrix(rv: np.ndarray) -> np.ndarray:
    """``(..., 3)`` axis-angle (radians) -> ``(..., 3, 3)``."""
    rv = np.asarray(rv, dtype=np.float64)
    return Rotation.from_rotvec(rv.reshape(-1, 3)).as_matrix().reshape(*rv.shape[:-1], 3, 3)


def matrix_to_rotvec(R: np.ndarray) -> np.ndarray:
    """``(..., 3, 3)`` -> ``(..., 3)`` axis-angle (radians)."""
    R = np.asarray(R, dtype=np.float64)
    return Rotation.from_matrix(R.reshape(-1, 3, 3)).as_rotvec().reshape(*R.shape[:-2], 3)


def axis_rotation(axis: str, angle: np.ndarray) -> np.ndarray:
    """Rotation about a coordinate axis ``"x" | "y" | "z"`` by ``angle (...)`` radians -> ``(..., 3, 3)``."""
    a = np.asarray(angle, dtype=np.float64)
    c, s = np.cos(a), np.sin(a)
    o, z = np.ones_like(a), np.zeros_like(a)
    rows = {
        "x": ((o, z, z), (z, c, -s), (z, s, c)),
        "y": ((c, z, s), (z, o, z), (-s, z, c)),
        "z": ((c, -s, z), (s, c, z), (z, z, o)),
    }[axis]
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def quat_slerp(q0: np.ndarray, q1: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Spherical interpolation between unit quaternions (any storage order, same for both).

    ``q0, q1 (..., 4)``, ``w (...)`` in [0, 1] -> ``(..., 4)`` unit quaternions (shortest arc).
    """
    q0 = np.asarray(q0, dtype=np.float64)
    q1 = np.asarray(q1, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)[..., None]
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0, -q1, q1)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_t = np.sin(theta)
    small = sin_t < 1e-8
    safe = np.where(small, 1.0, sin_t)
    a = np.where(small, 1.0 - w, np.sin((1.0 - w) * theta) / safe)
    b = np.where(small, w, np.sin(w * theta) / safe)
    q = a * q0 + b * q1
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def make_transform(R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``R (..., 3, 3)``, ``t (..., 3)`` -> homogeneous ``(..., 4, 4)``."""
    R = np.asarray(R, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    T = np.zeros(np.broadcast_shapes(R.shape[:-2], t.shape[:-1]) + (4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = t
    T[..., 3, 3] = 1.0
    return T


def invert_transform(T: np.ndarray) -> np.ndarray:
    """Inverse of rigid transforms ``(..., 4, 4)``."""
    R = T[..., :3, :3]
    t = T[..., :3, 3]
    Rt = np.swapaxes(R, -1, -2)
    return make_transform(Rt, -np.einsum("...ij,...j->...i", Rt, t))


def transform_points(T: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Apply ``T (..., 4, 4)`` to points ``p (..., 3)`` (broadcasting)."""
    return np.einsum("...ij,...j->...i", T[..., :3, :3], p) + T[..., :3, 3]
