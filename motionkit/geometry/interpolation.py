"""Interpolation in time: one bracketing rule, then linear for vectors and SLERP for rotations.

Every place that samples a time series at other times (the Aria trajectory at frame timestamps, a fit
at annotation frames, a fit resampled to another rate, gaps filled inside the fit) goes through
``bracket`` and then ``lerp`` / ``slerp_quat`` / ``slerp_rotvec`` / ``slerp_rotmat``.

The bracketing rule (docs/conventions.md, "Time"):

* ``times (N,)`` must be increasing. For a query ``q``, ``i0`` is the last sample with
  ``times[i0] <= q`` and ``i1 = i0 + 1``; ``w = (q - times[i0]) / (times[i1] - times[i0])`` in [0, 1].
* A query within ``atol`` of a sample is an **exact hit**: ``i0 = i1 =`` that sample, ``w = 0``, so
  only that sample's validity matters.
* Outside ``[times[0] - atol, times[-1] + atol]`` the nearest end sample is held (``i0 = i1``,
  ``w = 0``) and ``inside`` is False: callers decide whether holding is allowed.
* ``span = times[i1] - times[i0]`` (0 for exact hits and held ends) lets callers refuse to
  interpolate across gaps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motionkit.geometry.rotations import (
    matrix_to_quat_xyzw,
    matrix_to_rotvec,
    quat_slerp,
    quat_xyzw_to_matrix,
    rotvec_to_matrix,
)


@dataclass(frozen=True)
class Bracket:
    """Where queries ``(Q,)`` fall between samples: indices ``i0, i1 (Q,)``, weight ``w (Q,)`` of
    ``i1``, ``span (Q,)`` = time between the two samples, ``inside (Q,)`` within the sampled range."""

    i0: np.ndarray
    i1: np.ndarray
    w: np.ndarray
    span: np.ndarray
    inside: np.ndarray


def bracket(times: np.ndarray, queries: np.ndarray, atol: float = 1e-9) -> Bracket:
    """Bracket ``queries (...)`` between increasing sample ``times (N,)`` (N >= 1); see the module rule.

    NaN queries get ``inside = False``. Output arrays have the queries' shape.
    """
    t = np.asarray(times, dtype=np.float64)
    q = np.asarray(queries, dtype=np.float64)
    if t.ndim != 1 or len(t) == 0:
        raise ValueError(f"times must be a non-empty 1-D array; got shape {t.shape}")
    n = len(t)
    qf = np.where(np.isfinite(q), q, t[0])
    i0 = np.clip(np.searchsorted(t, qf, side="right") - 1, 0, n - 1)
    i1 = np.minimum(i0 + 1, n - 1)
    hit0 = np.abs(qf - t[i0]) <= atol
    hit1 = np.abs(t[i1] - qf) <= atol
    below, above = qf < t[0], qf > t[-1]
    i0 = np.where(hit1 & ~hit0, i1, i0)
    i1 = np.where(hit0 | hit1 | below | above, i0, i1)
    span = t[i1] - t[i0]
    w = np.where(span > 0, (qf - t[i0]) / np.where(span > 0, span, 1.0), 0.0)
    inside = np.isfinite(q) & (q >= t[0] - atol) & (q <= t[-1] + atol)
    return Bracket(i0, i1, np.clip(w, 0.0, 1.0), span, inside)


def _expand(w: np.ndarray, ndim: int) -> np.ndarray:
    return w.reshape(w.shape + (1,) * (ndim - w.ndim))


def lerp(x: np.ndarray, b: Bracket) -> np.ndarray:
    """Linear interpolation of samples ``x (N, ...)`` -> ``(Q, ...)``."""
    x = np.asarray(x, dtype=np.float64)
    w = _expand(b.w, x[b.i0].ndim)
    return (1 - w) * x[b.i0] + w * x[b.i1]


def slerp_quat(q: np.ndarray, b: Bracket) -> np.ndarray:
    """SLERP of unit quaternions ``q (N, ..., 4)`` -> ``(Q, ..., 4)`` (shortest arc)."""
    q0, q1 = q[b.i0], q[b.i1]
    return quat_slerp(q0, q1, np.broadcast_to(_expand(b.w, q0.ndim - 1), q0.shape[:-1]))


def slerp_rotmat(R: np.ndarray, b: Bracket) -> np.ndarray:
    """SLERP of rotation matrices ``R (N, ..., 3, 3)`` -> ``(Q, ..., 3, 3)``."""
    return quat_xyzw_to_matrix(slerp_quat(matrix_to_quat_xyzw(R), b))


def slerp_rotvec(rv: np.ndarray, b: Bracket) -> np.ndarray:
    """SLERP of axis-angle rotations ``rv (N, ..., 3)`` -> ``(Q, ..., 3)``."""
    return matrix_to_rotvec(slerp_rotmat(rotvec_to_matrix(np.asarray(rv, dtype=np.float64)), b))


def blend_bracket(n: int, w: np.ndarray) -> Bracket:
    """The bracket that blends two aligned sequences of length ``n`` sample by sample: stack them as
    ``np.concatenate([a, b])`` and interpolate with weight ``w (n,)`` of ``b``."""
    i = np.arange(n)
    w = np.asarray(w, dtype=np.float64)
    return Bracket(i, i + n, w, np.ones(n), np.ones(n, bool))


def fill_gaps_bracket(ok: np.ndarray) -> Bracket:
    """Bracket that fills frames where ``ok (M,)`` is False from the nearest valid frames (interpolated
    inside, held at the ends), indexing the valid frames only: use with ``x[ok]``.

    Raises ``ValueError`` when no frame is valid.
    """
    idx = np.flatnonzero(ok)
    if len(idx) == 0:
        raise ValueError("no valid frame to interpolate from")
    return bracket(idx.astype(np.float64), np.arange(len(ok), dtype=np.float64))


def valid_runs(valid: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of True as ``[(start, stop), ...]`` (stop exclusive)."""
    v = np.asarray(valid, dtype=bool)
    edges = np.diff(np.r_[0, v.astype(np.int8), 0])
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))
