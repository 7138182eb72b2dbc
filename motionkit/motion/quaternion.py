"""Quaternions (w, x, y, z), Hamilton, as in HumanML3D's code; numpy float64, leading batch dims."""

from __future__ import annotations

import numpy as np


def qmul(q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Hamilton product ``(..., 4)``."""
    w1, x1, y1, z1 = np.moveaxis(q, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(r, -1, 0)
    return np.stack(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ],
        axis=-1,
    )


def qinv(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def qrot(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v (..., 3)`` by unit quaternions ``q (..., 4)`` (broadcasting)."""
    qv = q[..., 1:]
    uv = np.cross(qv, v)
    uuv = np.cross(qv, uv)
    return v + 2.0 * (q[..., :1] * uv + uuv)


def qnormalize(q: np.ndarray) -> np.ndarray:
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def qbetween(a: np.ndarray, b: np.ndarray, *, cross_axis: int = -1) -> np.ndarray:
    """Minimal rotation taking ``a`` onto ``b``: normalise(|a||b| + a.b, a x b). ``(..., 3)`` -> ``(..., 4)``.

    ``cross_axis`` reproduces HumanML3D's ``torch.cross`` without ``dim`` (quirk Q9) when set to
    the first axis of size 3.
    """
    v = np.cross(a, b, axis=cross_axis)
    w = np.sqrt((a * a).sum(-1, keepdims=True) * (b * b).sum(-1, keepdims=True)) + (a * b).sum(-1, keepdims=True)
    return qnormalize(np.concatenate([w, v], axis=-1))


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """``(..., 4)`` (w, x, y, z) -> ``(..., 3, 3)``."""
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )
