"""Weighted Procrustes alignment of point sets (Kabsch without scale, Umeyama with), batched numpy.

The compiled PA-MPJPE kernel (``eval.metrics``) solves the same problem with Horn's quaternion
method and is tested against this reference.
"""

from __future__ import annotations

import numpy as np


def procrustes(x: np.ndarray, y: np.ndarray, weights: np.ndarray, *, scaling: bool = False):
    """Best ``y ~ s R x + t`` over points with ``weights (..., N) >= 0`` (0 = unused; NaN points must
    have weight 0). ``x, y (..., N, 3)``.

    Returns ``(s (...), R (..., 3, 3), t (..., 3))``; ``R`` is a proper rotation, ``s = 1`` unless
    ``scaling``. Rows with fewer than 3 weighted points give an arbitrary (finite or NaN) result:
    callers check the count.
    """
    w = np.asarray(weights, dtype=np.float64)[..., None]
    n = np.maximum(w.sum(-2, keepdims=True), 1e-300)
    p = np.where(w > 0, x, 0.0)
    g = np.where(w > 0, y, 0.0)
    mp = (w * p).sum(-2, keepdims=True) / n
    mg = (w * g).sum(-2, keepdims=True) / n
    P = (p - mp) * w
    G = (g - mg) * np.where(w > 0, 1.0, 0.0)
    M = np.einsum("...ji,...jk->...ik", G, P)  # sum_j w_j g_j p_j^T
    U, S, Vt = np.linalg.svd(M)
    d = np.sign(np.linalg.det(U @ Vt))
    d = np.where(d == 0, 1.0, d)
    D = np.ones(S.shape)
    D[..., -1] = d
    R = (U * D[..., None, :]) @ Vt
    if scaling:
        var = (P * (p - mp)).sum((-1, -2))
        with np.errstate(invalid="ignore", divide="ignore"):
            s = (S * D).sum(-1) / var
    else:
        s = np.ones(S.shape[:-1])
    t = mg[..., 0, :] - s[..., None] * np.einsum("...ij,...j->...i", R, mp[..., 0, :])
    return s, R, t
