"""Exo video frames as RGB, read only at the frames a run needs, with a status per frame.

``iter_frames`` decodes the wanted frames in increasing order: sequentially (``grab``) across gaps of
up to ``SEEK_GAP`` frames, by seeking beyond; a background thread decodes up to ``read_ahead`` batches
ahead of the consumer (OpenCV releases the GIL while decoding, so decoding overlaps the detector).
A frame that cannot be decoded, or lies past the container's end (real containers are sometimes a
frame shorter than the take), gets a status instead of failing the take:

* ``OK`` (0), ``FRAME_DECODE_ERROR`` (1), ``BEYOND_END`` (2) - ``FRAME_STATUS[code]``; callers mark the
  frames of a video that is missing, unreadable or of the wrong shape ``VIDEO_UNUSABLE`` (3).

``read_frames`` returns the frames of any list of indices (any order, repeats allowed) at once.
Decoding is OpenCV's FFmpeg backend on the CPU (measured against PyAV and torchvision in
``benchmarks/bench_detect.py``); GPU decoding is not used.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import Take
from motionkit.geometry.camera import Camera

FRAME_OK, FRAME_DECODE_ERROR, BEYOND_END, VIDEO_UNUSABLE = 0, 1, 2, 3
FRAME_STATUS = ("OK", "FRAME_DECODE_ERROR", "BEYOND_END", "VIDEO_UNUSABLE")
SEEK_GAP = 30  # frames: decode through shorter gaps, seek across longer ones


def exo_video_path(take: Take, camera: str, downscaled: bool = False) -> Path:
    """``frame_aligned_videos/<cam>.mp4`` or ``frame_aligned_videos/downscaled/448/<cam>.mp4``."""
    rel = take.info.raw.get("frame_aligned_videos", {}).get(camera, {}).get("0", {}).get("relative_path")
    name = Path(rel).name if rel else f"{camera}.mp4"
    base = take.take_dir / "frame_aligned_videos"
    return base / "downscaled" / "448" / name if downscaled else base / name


def camera_for_video(camera: Camera, width: int, height: int) -> Camera:
    """The camera model for a video of another resolution (pixel-centre scaling rule); ``ValueError``
    when the video's aspect differs (e.g. a portrait video for a landscape calibration)."""
    s = width / camera.width
    if abs(height / camera.height - s) > 0.01:
        raise ValueError(
            f"video {width}x{height} does not have the aspect of the calibration {camera.width}x{camera.height}"
        )
    return camera.scaled(s)


@dataclass
class FrameBatch:
    """Frames ``indices (B,)``, the decoded RGB uint8 ``frames`` (None where not decoded) and their
    ``status (B,)`` codes (``FRAME_STATUS``)."""

    indices: np.ndarray
    frames: list[np.ndarray | None]
    status: np.ndarray

    @property
    def ok(self) -> np.ndarray:
        return self.status == FRAME_OK


def _open(path: Path):
    import cv2

    if not path.is_file():
        raise DataError(path, "video not found")
    cap = cv2.VideoCapture(str(path))
    if not cap.isOpened():
        raise DataError(path, "cannot open video (unreadable container or codec)")
    return cap


def video_info(path: str | Path) -> tuple[int, int, int]:
    """``(frames, width, height)`` as the container states them."""
    import cv2

    cap = _open(Path(path))
    try:
        return tuple(
            int(cap.get(p)) for p in (cv2.CAP_PROP_FRAME_COUNT, cv2.CAP_PROP_FRAME_WIDTH, cv2.CAP_PROP_FRAME_HEIGHT)
        )
    finally:
        cap.release()


def _decode(path: Path, want: np.ndarray, batch_size: int, stop: threading.Event) -> Iterator[FrameBatch]:
    """Decode ``want`` (sorted, unique) in order; the generator behind ``iter_frames``."""
    import cv2

    cap = _open(path)
    n_total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    pos, broken = 0, False
    idx, frames, status = [], [], []
    try:
        for f in want:
            if stop.is_set():
                return
            f = int(f)
            img, st = None, FRAME_DECODE_ERROR
            if n_total > 0 and f >= n_total:
                st = BEYOND_END
            else:
                if broken or f < pos or f - pos > SEEK_GAP:
                    cap.set(cv2.CAP_PROP_POS_FRAMES, f)
                    pos, broken = f, False
                while pos < f and cap.grab():
                    pos += 1
                if pos == f:
                    ok, bgr = cap.read()
                    if ok and bgr is not None:
                        img, st = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), FRAME_OK
                        pos += 1
                broken = st != FRAME_OK  # after a failure, seek again before the next wanted frame
            idx.append(f)
            frames.append(img)
            status.append(st)
            if len(idx) == batch_size:
                yield FrameBatch(np.asarray(idx), frames, np.asarray(status, np.int8))
                idx, frames, status = [], [], []
        if idx:
            yield FrameBatch(np.asarray(idx), frames, np.asarray(status, np.int8))
    finally:
        cap.release()


def iter_frames(path: str | Path, frame_indices, batch_size: int = 8, read_ahead: int = 2) -> Iterator[FrameBatch]:
    """``FrameBatch`` es of the wanted frames (sorted, unique), decoded ``read_ahead`` batches ahead in a
    background thread (0: in the caller's thread). ``DataError`` if the video is missing or unreadable."""
    path = Path(path)
    want = np.unique(np.asarray(frame_indices, dtype=np.int64))
    if len(want) and want[0] < 0:
        raise ValueError(f"{path}: negative frame index {int(want[0])}")
    stop = threading.Event()
    if read_ahead <= 0:
        yield from _decode(path, want, batch_size, stop)
        return
    _open(path).release()  # fail here, in the caller's thread, if the video cannot be opened
    q: queue.Queue = queue.Queue(maxsize=read_ahead)
    done = object()

    def produce() -> None:
        try:
            for b in _decode(path, want, batch_size, stop):
                while not stop.is_set():
                    try:
                        q.put(b, timeout=0.1)
                        break
                    except queue.Full:
                        continue
            q.put(done)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            q.put(exc)

    t = threading.Thread(target=produce, name=f"decode-{path.name}", daemon=True)
    t.start()
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while t.is_alive():  # unblock a producer waiting on a full queue
            try:
                q.get_nowait()
            except queue.Empty:
                t.join(timeout=0.05)


def read_frames(path: str | Path, frame_indices) -> FrameBatch:
    """The frames at ``frame_indices`` (any order, repeats allowed), in that order, with their status;
    RGB uint8 ``(H, W, 3)`` (None where the status is not ``OK``)."""
    want = np.asarray(frame_indices, dtype=np.int64).reshape(-1)
    got: dict[int, tuple[np.ndarray | None, int]] = {}
    for b in iter_frames(path, want, batch_size=32, read_ahead=0):
        got.update({int(i): (f, int(s)) for i, f, s in zip(b.indices, b.frames, b.status, strict=True)})
    return FrameBatch(want, [got[int(i)][0] for i in want], np.asarray([got[int(i)][1] for i in want], np.int8))
