"""Per-point operations on arrays of 2D points ``(..., 2)`` (pixels). numpy's general reductions over a
last axis of two are slow (``np.linalg.norm(axis=-1)``, ``np.isfinite(...).all(-1)``); these give the same
results bit for bit, many times faster."""

from __future__ import annotations

import numpy as np


def finite_points(points: np.ndarray) -> np.ndarray:
    """``(...)`` bool: both coordinates of ``points (..., 2)`` are finite."""
    return np.isfinite(points[..., 0]) & np.isfinite(points[..., 1])


def point_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(...)`` Euclidean distance between ``a (..., 2)`` and ``b (..., 2)`` (broadcast), equal to
    ``np.linalg.norm(a - b, axis=-1)``; NaN where a coordinate is NaN."""
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, as numpy's norm gives it
        diff = np.subtract(a, b)
        dx, dy = diff[..., 0], diff[..., 1]
        return np.sqrt(dx * dx + dy * dy)
