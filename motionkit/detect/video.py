"""Person boxes and COCO-17 keypoints from the exo videos with RF-DETR, cached per take.

Plain arguments in, ``Observations`` out; the result is written in the observation cache format and
reused when the same models, options and frames are asked for again.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from motionkit.data.egoexo4d import Take
from motionkit.data.observations import Observations, observations_from_rows, read_observations, write_observations
from motionkit.detect.frames import camera_for_video, exo_video_path, read_frames
from motionkit.detect.rfdetr_backend import RFDETRDetector, RFDETRKeypoints


def detect_videos(
    take: Take,
    frames: np.ndarray,
    cache_path: Path,
    *,
    variant: str = "nano",
    detector_weights: str | None = None,
    keypoint_weights: str | None = None,
    threshold: float = 0.5,
    downscaled: bool = False,
    device: str = "cpu",
) -> Observations:
    """RF-DETR boxes and keypoints at take ``frames (M,)`` of every calibrated exo camera, in raw
    (calibration-resolution) pixels; cached in ``cache_path``."""
    key = json.dumps([variant, detector_weights, keypoint_weights, threshold, downscaled, np.asarray(frames).tolist()])
    if cache_path.is_file():
        cached = read_observations(cache_path)
        if cached.attrs.get("run_key") == key:
            return cached
    det = RFDETRDetector(variant, detector_weights, threshold, device)
    kps = RFDETRKeypoints(keypoint_weights, device=device)
    rows = {k: [] for k in ("frame_index", "camera", "box", "score", "keypoints", "keypoint_conf")}
    rig = take.rig
    for v, cam in enumerate(rig):
        video = exo_video_path(take, cam.name, downscaled)
        for idx, batch in read_frames(video, frames):
            h, w = batch[0].shape[:2]
            s = camera_for_video(cam, w, h).width / cam.width
            boxes = det.detect(batch)
            kp = kps.estimate(batch, [b for b, _ in boxes])
            for f, (b, sc), (k, c) in zip(idx, boxes, kp, strict=True):
                for i in range(len(b)):
                    rows["frame_index"].append(f)
                    rows["camera"].append(v)
                    rows["box"].append((b[i] + 0.5) / s - 0.5)
                    rows["score"].append(sc[i])
                    rows["keypoints"].append((k[i] + 0.5) / s - 0.5)
                    rows["keypoint_conf"].append(c[i])
    attrs = {"detector": det.identity, "keypoint_model": kps.identity, "run_key": key}
    obs = observations_from_rows(rig.names, rows, frames, attrs)
    write_observations(cache_path, obs, take_uid=take.uid)
    return obs
