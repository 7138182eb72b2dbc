"""Axis-aligned boxes in the image: ``(..., 4)`` as ``x0, y0, x1, y1`` pixels."""

from __future__ import annotations

import numpy as np


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of boxes ``a (..., 4)`` and ``b (..., 4)``, broadcast against each other:
    one box against many (``(4,)`` with ``(N, 4)``), row by row (``(N, 4)`` with ``(N, 4)``), or a matrix
    (``a[:, None]`` with ``b[None]``). 0 for disjoint boxes; degenerate boxes give 0, not NaN."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    x0, y0 = np.maximum(a[..., 0], b[..., 0]), np.maximum(a[..., 1], b[..., 1])
    x1, y1 = np.minimum(a[..., 2], b[..., 2]), np.minimum(a[..., 3], b[..., 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    union = (
        (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1]) + (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]) - inter
    )
    return inter / np.maximum(union, 1e-9)
