"""Exo video frames, read only at the frames a run needs, in batches, as RGB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import Take
from motionkit.geometry.camera import Camera


def exo_video_path(take: Take, camera: str, downscaled: bool = False) -> Path:
    """``frame_aligned_videos/<cam>.mp4`` or ``frame_aligned_videos/downscaled/448/<cam>.mp4``."""
    rel = take.info.raw.get("frame_aligned_videos", {}).get(camera, {}).get("0", {}).get("relative_path")
    name = Path(rel).name if rel else f"{camera}.mp4"
    base = take.take_dir / "frame_aligned_videos"
    return base / "downscaled" / "448" / name if downscaled else base / name


def camera_for_video(camera: Camera, width: int, height: int) -> Camera:
    """The camera model for a video of another resolution (pixel-centre scaling rule)."""
    s = width / camera.width
    if abs(height / camera.height - s) > 0.01:
        raise ValueError(f"video {width}x{height} does not have the aspect of {camera.width}x{camera.height}")
    return camera.scaled(s)


def read_frames(path: str | Path, frame_indices, batch_size: int = 8) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
    """Yield ``(indices, [rgb uint8 (H, W, 3), ...])`` batches for the requested frame indices
    (sorted, unique). Seeks only when the next wanted frame is far ahead; decodes sequentially otherwise."""
    import cv2

    path = Path(path)
    if not path.is_file():
        raise DataError(path, "video not found")
    cap = cv2.VideoCapture(str(path))
    if not cap.isOpened():
        raise DataError(path, "cannot open video")
    want = np.unique(np.asarray(frame_indices, dtype=np.int64))
    n_total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    if len(want) and n_total > 0 and want[-1] >= n_total:
        cap.release()
        raise DataError(path, f"frame {int(want[-1])} requested but the video has {n_total} frames")
    pos = 0
    batch_idx, batch = [], []
    try:
        for f in want:
            if f - pos > 30:
                cap.set(cv2.CAP_PROP_POS_FRAMES, int(f))
                pos = int(f)
            while pos < f:
                if not cap.grab():
                    raise DataError(path, f"cannot decode frame {pos}")
                pos += 1
            ok, bgr = cap.read()
            if not ok:
                raise DataError(path, f"cannot decode frame {int(f)}")
            pos += 1
            batch_idx.append(int(f))
            batch.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
            if len(batch) == batch_size:
                yield np.asarray(batch_idx), batch
                batch_idx, batch = [], []
        if batch:
            yield np.asarray(batch_idx), batch
    finally:
        cap.release()
