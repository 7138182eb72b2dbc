"""Where detections and 2D keypoints come from: the observation cache (synthetic takes ship it; real
detector runs write it), Ego-Exo4D annotation2D, or the RF-DETR models on video frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import Take
from motionkit.data.observations import Observations, observations_from_rows, read_observations
from motionkit.geometry.camera import CameraRig
from motionkit.geometry.undistort import annotation_to_raw, undistorted_new_K


def dataset_observation_path(take: Take) -> Path:
    """Where a dataset ships precomputed observations (synthetic takes): ``<root>/observations/<uid>.h5``."""
    return take.dataset.root / "observations" / f"{take.uid}.h5"


def load_observation_cache(path: Path, rig: CameraRig) -> Observations:
    obs = read_observations(path)
    if not set(rig.names) & set(obs.camera_names):
        raise DataError(path, f"no camera of the rig ({', '.join(rig.names)}) in the observation cache")
    return obs


def annotation_observations(take: Take, rig: CameraRig, kind: str = "annotation") -> Observations:
    """Ego-Exo4D ``annotation2D`` (undistorted new-K pixels) converted to raw fisheye pixels, one
    'detection' per annotated camera-frame, with a box around the keypoints (score 1)."""
    ann = take.body_annotation(kind)
    if ann is None:
        raise DataError(take.take_dir, f"take {take.uid} has no body {kind} file")
    rows = {k: [] for k in ("frame_index", "camera", "box", "score", "keypoints", "keypoint_conf")}
    for v, cam in enumerate(rig):
        if cam.name not in ann.joints2d:
            continue
        und = ann.joints2d[cam.name]  # (K, 17, 2)
        raw = annotation_to_raw(und, cam, undistorted_new_K(cam))
        ok = np.isfinite(raw).all(-1)
        for k in np.flatnonzero(ok.any(-1)):
            pts = raw[k][ok[k]]
            lo, hi = pts.min(0), pts.max(0)
            pad = 0.1 * (hi - lo) + 10
            rows["frame_index"].append(ann.frames[k])
            rows["camera"].append(v)
            rows["box"].append(np.r_[lo - pad, hi + pad])
            rows["score"].append(1.0)
            rows["keypoints"].append(np.where(ok[k][:, None], raw[k], np.nan))
            rows["keypoint_conf"].append(ok[k].astype(np.float32))
    attrs = {"detector": f"egoexo4d-{kind}2d", "keypoint_model": f"egoexo4d-{kind}2d"}
    return observations_from_rows(rig.names, rows, np.unique(ann.frames), attrs)
