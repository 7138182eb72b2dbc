"""Rules on a fitted sequence: which frames are valid, and per-frame quality flags
(docs/result_file.md, group ``flags``)."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.ndimage import convolve1d, maximum_filter1d

from motionkit.conventions import eye_midpoint
from motionkit.geometry.interpolation import valid_runs

SMOOTHING_TAPS = np.array([0.05, 0.25, 0.4, 0.25, 0.05])
FAST_JOINT_M_S = 5.0
HIGH_ACCEL_M_S2 = 40.0
EYE_ARIA_FAR_M = 0.30
MIN_CAMS = 3
STATIC_M_S = 0.1
STATIC_WINDOW_S = 1.5
HIGH_REPROJ_PX = 60.0
SHORT_SEGMENT_S = 2.0


def valid_frames(n_views: np.ndarray, fps: float, max_gap_s: float) -> np.ndarray:
    """Frames seen by >= 2 views, plus gaps of at most ``max_gap_s`` between such frames: ``(M,)`` bool."""
    seen = np.asarray(n_views) >= 2
    valid = seen.copy()
    idx = np.flatnonzero(seen)
    gaps = np.diff(idx) - 1
    for a, g in zip(idx[:-1][gaps > 0], gaps[gaps > 0], strict=True):
        if g / fps <= max_gap_s:
            valid[a + 1 : a + 1 + g] = True
    return valid


def quality_flags(joints, valid, n_views, fps, cpf, names, reproj_px=None) -> dict[str, np.ndarray]:
    """Per-frame flags ``(M,)`` bool (stored, never used to delete frames), computed on the 22 body
    joints after 5-tap smoothing; speeds in physical units, so the rules do not depend on the rate.

    ``joints (M, 55 + K, 3)`` world metres with ``K`` vertex keypoints named ``names`` (must include
    the eyes), ``valid (M,)``, ``n_views (M,)`` views with the wearer selected, ``cpf (M, 3)`` Aria head
    anchor, ``reproj_px (M, V)`` mean reprojection error per view (NaN where unused). Flags:
    ``FEW_CAMS`` (< 3 views), ``FAST_JOINT`` (a joint faster than 5 m/s), ``HIGH_ACCEL`` (above
    40 m/s^2), ``EYE_ARIA_FAR`` (eye midpoint more than 0.30 m from the anchor), ``STATIC`` (no joint
    faster than 0.1 m/s within 1.5 s; informational), ``HIGH_REPROJ`` (median over the used views
    above 60 px), ``SHORT_SEGMENT`` (in a valid run shorter than 2 s).
    """
    body = convolve1d(np.nan_to_num(joints[:, :22]), SMOOTHING_TAPS, axis=0, mode="nearest")
    vel = np.zeros(len(body))
    acc = np.zeros(len(body))
    if len(body) >= 2:
        vel[1:] = np.linalg.norm(np.diff(body, axis=0), axis=-1).max(-1) * fps
    if len(body) >= 3:
        acc[1:-1] = np.linalg.norm(body[2:] - 2 * body[1:-1] + body[:-2], axis=-1).max(-1) * fps**2
    eyes = eye_midpoint(joints, tuple(names))
    with np.errstate(invalid="ignore"):
        eye_far = np.linalg.norm(eyes - cpf, axis=-1) > EYE_ARIA_FAR_M
    window = max(1, int(round(STATIC_WINDOW_S * fps)))
    static = maximum_filter1d(vel, window, mode="nearest") < STATIC_M_S if len(vel) else np.zeros(0, bool)
    high_reproj = np.zeros(len(body), bool)
    if reproj_px is not None:
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # frames without any used view
            high_reproj = np.nanmedian(reproj_px, axis=1) > HIGH_REPROJ_PX
    short = np.zeros(len(body), bool)
    for a, b in valid_runs(valid):
        short[a:b] = (b - a) / fps < SHORT_SEGMENT_S
    return {
        "FEW_CAMS": n_views < MIN_CAMS,
        "FAST_JOINT": valid & (vel > FAST_JOINT_M_S),
        "HIGH_ACCEL": valid & (acc > HIGH_ACCEL_M_S2),
        "EYE_ARIA_FAR": valid & np.nan_to_num(eye_far, nan=False).astype(bool),
        "STATIC": valid & static,
        "HIGH_REPROJ": valid & high_reproj,
        "SHORT_SEGMENT": short,
    }
