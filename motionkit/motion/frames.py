"""Axis frames and time resampling for SMPL-X sequences.

The one z-up -> y-up conversion is ``conventions.R_ZUP_TO_YUP`` (a rotation, never a reflection).
Because SMPL-X rotates about the pelvis rest joint J0(beta), the translation changes as
``transl' = R (transl + J0) - J0`` (docs/conventions.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motionkit.conventions import R_ZUP_TO_YUP
from motionkit.geometry.interpolation import bracket, lerp, slerp_rotvec
from motionkit.geometry.rotations import matrix_to_rotvec, rotvec_to_matrix


def zup_to_yup_points(p: np.ndarray) -> np.ndarray:
    """``(..., 3)`` Ego-Exo4D world (z up) -> y-up world."""
    return np.asarray(p, dtype=np.float64) @ R_ZUP_TO_YUP.T


def zup_to_yup_smplx(global_orient: np.ndarray, transl: np.ndarray, j0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SMPL-X root parameters from the z-up world to a y-up world.

    ``global_orient (T, 3)`` axis-angle, ``transl (T, 3)``, ``j0 (3,)`` the shaped pelvis rest joint
    -> (global_orient', transl').
    """
    R = R_ZUP_TO_YUP
    go = matrix_to_rotvec(R @ rotvec_to_matrix(global_orient))
    tr = (np.asarray(transl) + j0) @ R.T - j0
    return go, tr


@dataclass
class SmplxSequence:
    """SMPL-X parameters on a time axis: ``time_s (T,)``, ``global_orient (T, 3)`` and
    ``body_pose (T, 21, 3)`` axis-angle, ``transl (T, 3)``, ``valid (T,)``, ``betas (10,)``."""

    time_s: np.ndarray
    global_orient: np.ndarray
    body_pose: np.ndarray
    transl: np.ndarray
    valid: np.ndarray
    betas: np.ndarray


def resample_smplx(seq: SmplxSequence, times: np.ndarray, max_gap_s: float | None = None) -> SmplxSequence:
    """Resample to ``times (M,)``: SLERP for rotations, linear for translation.

    A target time is valid only if both bracketing source frames are valid and at most
    ``max_gap_s`` apart (default: 1.5 source frame periods), so gaps stay gaps.
    """
    t = np.asarray(seq.time_s, dtype=np.float64)
    times = np.asarray(times, dtype=np.float64)
    if len(t) < 2:
        raise ValueError("need at least 2 source frames to resample")
    if np.any(np.diff(t) <= 0):
        raise ValueError("source times must be strictly increasing")
    if max_gap_s is None:
        max_gap_s = 1.5 * float(np.median(np.diff(t)))
    b = bracket(t, times, atol=1e-9)
    ok = b.inside & seq.valid[b.i0] & seq.valid[b.i1] & (b.span <= max_gap_s + 1e-9)
    go = slerp_rotvec(seq.global_orient, b)
    bp = slerp_rotvec(seq.body_pose, b)
    tr = lerp(seq.transl, b)
    nan = ~ok
    go[nan], bp[nan], tr[nan] = np.nan, np.nan, np.nan
    return SmplxSequence(times, go, bp, tr, ok, seq.betas)
