"""Person boxes and COCO-17 keypoints from the exo videos, top-down, cached per take.

Frames decoded at the take frames a run needs, every camera in its own read-ahead thread
(``frames.iter_frames``, a status per frame); for each group of take frames, person boxes on 448p
copies of the frames of all cameras in one batch, then keypoints on crops of the full frames around
the candidates (the wearer's candidates first: nearest to the projected Aria head) in one batch,
mapped to raw (calibration-resolution) pixels. A camera whose video is missing, unreadable or of another shape
is recorded (``video_errors``) and its frames marked ``VIDEO_UNUSABLE``; the other cameras go on.
The result is written in the observation cache format and reused when the same models, options and
frames are asked for again.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import Take
from motionkit.data.observations import Observations, observations_from_rows, read_observations, write_observations
from motionkit.detect.frames import VIDEO_UNUSABLE, camera_for_video, exo_video_path, iter_frames, video_info
from motionkit.detect.rfdetr_backend import RFDETRDetector, RFDETRKeypoints
from motionkit.detect.topdown import CropKeypointModel, PersonDetector, detect_people, scale_points, topdown_keypoints

MAX_PEOPLE_PER_FRAME = 4  # keypoints for this many candidates per frame (nearest to the Aria head first)


def detect_videos(
    take: Take,
    frames: np.ndarray,
    cache_path: Path,
    *,
    variant: str = "nano",
    detector_weights: str | None = None,
    keypoint_weights: str | None = None,
    allow_download: bool = False,
    threshold: float = 0.5,
    downscaled: bool = False,
    device: str = "cpu",
    head_world: np.ndarray | None = None,
    detector: PersonDetector | None = None,
    keypoint_model: CropKeypointModel | None = None,
    max_per_frame: int = MAX_PEOPLE_PER_FRAME,
    frames_per_batch: int = 8,
) -> Observations:
    """Boxes and keypoints at take ``frames (M,)`` of every calibrated exo camera, in raw pixels.

    ``head_world (M, 3)``: the Aria head (world, NaN where unknown) that orders the candidates.
    ``detector`` / ``keypoint_model``: any objects with the ``motionkit.detect.topdown`` interfaces
    (default: RF-DETR ``variant`` and RFDETRKeypointPreview from local checkpoints, or fetched by rfdetr with
    ``allow_download``). The observations' ``attrs`` hold ``checkpoints`` (JSON: each model's checkpoint
    file and SHA-256), ``frame_status`` (JSON ``(V, M)`` codes of ``frames.FRAME_STATUS``) and
    ``video_errors`` (JSON camera -> reason). The models see ``frames_per_batch`` take frames of every
    usable camera at once.
    """
    frames = np.asarray(frames, dtype=np.int64)
    if detector is None:
        detector = RFDETRDetector(variant, detector_weights, threshold, device, allow_download=allow_download)
    if keypoint_model is None:
        keypoint_model = RFDETRKeypoints(keypoint_weights, device=device, allow_download=allow_download)
    ident = [getattr(detector, "identity", type(detector).__name__), getattr(keypoint_model, "identity",
             type(keypoint_model).__name__)]  # fmt: skip
    key = json.dumps([*ident, threshold, downscaled, max_per_frame, frames.tolist()])
    if cache_path.is_file():
        cached = read_observations(cache_path)
        if cached.attrs.get("run_key") == key:
            return cached
    rows = {k: [] for k in ("frame_index", "camera", "box", "score", "keypoints", "keypoint_conf")}
    rig = take.rig
    status = np.full((len(rig), len(frames)), VIDEO_UNUSABLE, np.int8)
    errors: dict[str, str] = {}
    col = {int(f): m for m, f in enumerate(frames)}
    streams = []  # (view, frame batches, scale of the video, Aria head in video pixels)
    for v, cam in enumerate(rig):
        video = exo_video_path(take, cam.name, downscaled)
        try:
            _, w, h = video_info(video)
            vcam = camera_for_video(cam, w, h)
            batches = iter_frames(video, frames, batch_size=frames_per_batch)
        except (DataError, ValueError) as exc:
            errors[cam.name] = f"{video.name}: {exc}"
            continue
        head_px = None
        if head_world is not None:
            head_px = vcam.project(np.nan_to_num(head_world, nan=0.0))
            head_px[~np.isfinite(head_world).all(1)] = np.nan
        streams.append((v, batches, vcam.width / cam.width, head_px))
    # the same take frames from every camera at once (each decoded ahead in its own thread): one
    # detector batch and one keypoint batch across cameras and frames
    for group in zip(*(st[1] for st in streams), strict=True):
        imgs, where = [], []  # (view, take frame, video scale, head pixel)
        for (v, _, s, head_px), b in zip(streams, group, strict=True):
            status[v, [col[int(i)] for i in b.indices]] = b.status
            for i in np.flatnonzero(b.ok):
                m = col[int(b.indices[i])]
                imgs.append(b.frames[i])
                where.append((v, int(b.indices[i]), s, None if head_px is None else head_px[m]))
        if not imgs:
            continue
        dets = detect_people(imgs, detector)
        prio = None
        if head_world is not None:
            prio = [np.nan_to_num(np.linalg.norm(0.5 * (bx[:, :2] + bx[:, 2:]) - hp, axis=1), nan=0.0)
                    for (bx, _), (_, _, _, hp) in zip(dets, where, strict=True)]  # fmt: skip
        kps = topdown_keypoints(imgs, [bx for bx, _ in dets], keypoint_model, prio, max_per_frame)
        for (v, f, s, _), (bx, sc), (kp, cf) in zip(where, dets, kps, strict=True):
            for n in range(len(bx)):
                rows["frame_index"].append(f)
                rows["camera"].append(v)
                rows["box"].append(scale_points(bx[n].reshape(2, 2), 1.0 / s).reshape(4))
                rows["score"].append(sc[n])
                rows["keypoints"].append(scale_points(kp[n], 1.0 / s))
                rows["keypoint_conf"].append(cf[n])
    attrs = {
        "detector": ident[0],
        "keypoint_model": ident[1],
        "checkpoints": json.dumps(
            {
                "detector": getattr(detector, "checkpoint", None),
                "keypoints": getattr(keypoint_model, "checkpoint", None),
            }
        ),  # fmt: skip
        "run_key": key,
        "frame_status": json.dumps(status.tolist()),
        "video_errors": json.dumps(errors),
    }
    obs = observations_from_rows(rig.names, rows, frames, attrs)
    write_observations(cache_path, obs, take_uid=take.uid)
    return obs
