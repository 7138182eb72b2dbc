"""Difficulty presets of the synthetic world (docs/synthetic.md).

``clean`` is the world of motionkit <= 0.1: the people are made with the fitter's own body model, the
keypoints are its joint centres with 3 px i.i.d. noise, calibration and Aria are exact. Unit tests
that need a known, nearly noise-free answer use it. ``realistic`` (the default) is what real
detectors, annotators and calibrations give; ``hard`` turns everything up.
"""

from __future__ import annotations

PRESET_NAMES = ("clean", "realistic", "hard")

_CLEAN = {
    "cameras": 4,
    "bystanders": 2,
    "kp_noise_px": 3.0,
    "kp_noise_frac": None,
    "kp_noise_ar1": 0.0,
    "outlier_rate": 0.03,
    "swap_rate": 0.015,
    "limb_swap_rate": 0.0,
    "swap_mean_frames": 1.0,
    "miss_rate": 0.002,
    "false_positive_rate": 0.03,
    "conf_error_coupling": 0.0,
    "self_occlusion": False,
    "subject_model": False,
    "landmarks": False,
    "annotation_noise_m": 0.0,
    "calib_rot_deg": 0.0,
    "calib_trans_m": 0.0,
    "calib_focal_frac": 0.0,
    "aria_jitter_m": 0.0,
    "aria_drift_m": 0.0,
    "nan_timesync": False,
    "bystander_min_dist_m": 0.7,
    "companion_near_m": 0.8,
    "motions": "basic",
    "far_camera": False,
}

# Real 2D keypoint detectors on ~1,000 px tall people: about 1 % of the box height per axis for the
# median joint (more for hips and wrists), errors that persist over frames, confidences that drop
# with the error, limb-level left/right confusions that last a few frames, misses under occlusion.
_REALISTIC = {
    **_CLEAN,
    "kp_noise_px": 0.0,
    "kp_noise_frac": 0.010,
    "kp_noise_ar1": 0.8,
    "outlier_rate": 0.03,
    "swap_rate": 0.01,
    "limb_swap_rate": 0.03,
    "swap_mean_frames": 4.0,
    "miss_rate": 0.01,
    "false_positive_rate": 0.05,
    "conf_error_coupling": 1.0,
    "self_occlusion": True,
    "subject_model": True,
    "landmarks": True,
    "annotation_noise_m": 0.008,  # per axis: ~1.3 cm per joint, as triangulated manual annotations
    "calib_rot_deg": 0.05,  # besides the turn that keeps the scene in view after the ~2 cm move
    "calib_trans_m": 0.02,
    "calib_focal_frac": 0.003,
    "aria_jitter_m": 0.002,
    "aria_drift_m": 0.03,
    "nan_timesync": True,
    "bystander_min_dist_m": 0.3,
    "companion_near_m": 0.35,
    "motions": "extended",
}

_HARD = {
    **_REALISTIC,
    "cameras": 3,
    "bystanders": 3,
    "kp_noise_frac": 0.015,
    "kp_noise_ar1": 0.85,
    "outlier_rate": 0.06,
    "swap_rate": 0.02,
    "limb_swap_rate": 0.06,
    "swap_mean_frames": 6.0,
    "miss_rate": 0.03,
    "false_positive_rate": 0.1,
    "annotation_noise_m": 0.012,
    "calib_rot_deg": 0.1,
    "calib_trans_m": 0.035,
    "calib_focal_frac": 0.005,
    "aria_jitter_m": 0.003,
    "aria_drift_m": 0.05,
    "far_camera": True,
}

PRESETS: dict[str, dict] = {"clean": _CLEAN, "realistic": _REALISTIC, "hard": _HARD}
