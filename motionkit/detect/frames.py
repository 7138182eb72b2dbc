"""Exo video frames as RGB, read only at the frames a run needs, with a status per frame.

``iter_frames`` decodes the wanted frames in increasing order: sequentially (``grab``) across gaps of
up to ``SEEK_GAP`` frames, by seeking beyond; a background thread decodes up to ``read_ahead`` batches
ahead of the consumer (OpenCV releases the GIL while decoding, so decoding overlaps the detector).
A frame that cannot be decoded, or lies past the container's end (real containers are sometimes a
frame shorter than the take), gets a status instead of failing the take:

* ``OK`` (0), ``FRAME_DECODE_ERROR`` (1), ``BEYOND_END`` (2) - ``FRAME_STATUS[code]``; callers mark the
  frames of a video that is missing, unreadable or of the wrong shape ``VIDEO_UNUSABLE`` (3).

``read_frames`` returns the frames of any list of indices (any order, repeats allowed) at once.

Decoders (``decoder=``): ``pyav`` (FFmpeg through PyAV with frame threading; the default where PyAV is
installed) and ``opencv`` (FFmpeg through OpenCV). On 2 cores and a 1080p MPEG-4 video they are within
~20 % of each other (PyAV ahead on every frame, OpenCV's ``grab`` ahead when frames are skipped;
``benchmarks/bench_detect.py``); PyAV's frame threading is the one that scales with the cores of a
GPU node. Frames are identified by their presentation time
(``round(pts x time_base x frame rate)``), so both decoders return the same frame for an index. GPU
decoding is not used.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:  # a dependency of motionkit; the OpenCV decoder remains where it is missing
    import av
except ImportError:  # pragma: no cover
    av = None

from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import Take
from motionkit.geometry.camera import Camera

FRAME_OK, FRAME_DECODE_ERROR, BEYOND_END, VIDEO_UNUSABLE = 0, 1, 2, 3
FRAME_STATUS = ("OK", "FRAME_DECODE_ERROR", "BEYOND_END", "VIDEO_UNUSABLE")
SEEK_GAP = 30  # frames: decode through shorter gaps, seek across longer ones
DECODERS = ("pyav", "opencv")


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
    ``status (B,)`` codes (``FRAME_STATUS``). Also a sequence of its frames: ``batch[k]``, ``len``,
    iteration."""

    indices: np.ndarray
    frames: list[np.ndarray | None]
    status: np.ndarray

    @property
    def ok(self) -> np.ndarray:
        return self.status == FRAME_OK

    def __len__(self) -> int:
        return len(self.frames)

    def __getitem__(self, k: int) -> np.ndarray | None:
        return self.frames[k]

    def __iter__(self):
        return iter(self.frames)


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


def default_decoder() -> str:
    """``pyav`` where PyAV is installed, else ``opencv``."""
    return "opencv" if av is None else "pyav"


def _batches(items: Iterator[tuple[int, np.ndarray | None, int]], batch_size: int) -> Iterator[FrameBatch]:
    idx, frames, status = [], [], []
    for f, img, st in items:
        idx.append(f)
        frames.append(img)
        status.append(st)
        if len(idx) == batch_size:
            yield FrameBatch(np.asarray(idx), frames, np.asarray(status, np.int8))
            idx, frames, status = [], [], []
    if idx:
        yield FrameBatch(np.asarray(idx), frames, np.asarray(status, np.int8))


def _decode_pyav(path: Path, want: np.ndarray, stop: threading.Event) -> Iterator[tuple[int, np.ndarray | None, int]]:
    """``(index, rgb or None, status)`` of the wanted frames (sorted, unique), decoded with PyAV."""
    if av is None:
        raise RuntimeError("decoder='pyav' needs PyAV (pip install av)")
    if not path.is_file():
        raise DataError(path, "video not found")
    try:
        container = av.open(str(path))
        stream = container.streams.video[0]
    except (av.error.FFmpegError, IndexError) as exc:
        raise DataError(path, f"cannot open video (unreadable container or codec): {exc}") from exc
    stream.thread_type = "AUTO"
    tb = float(stream.time_base)
    rate = float(stream.average_rate or stream.guessed_rate or 30)
    n_total = int(stream.frames or 0)
    frames_it, last, ended = None, -1, False
    try:
        for f in want:
            if stop.is_set():
                return
            f = int(f)
            if n_total > 0 and f >= n_total:
                yield f, None, BEYOND_END
                continue
            if frames_it is None or f <= last or f - last > SEEK_GAP:
                container.seek(int(round(f / rate / tb)), stream=stream, backward=True, any_frame=False)
                frames_it, last, ended = container.decode(stream), -1, False
            img, st = None, FRAME_DECODE_ERROR
            while True:
                try:
                    fr = next(frames_it)
                except StopIteration:
                    ended = True
                    break
                except av.error.FFmpegError:
                    frames_it = None  # seek again before the next wanted frame
                    break
                i = int(round(fr.pts * tb * rate)) if fr.pts is not None else last + 1
                last = i
                if i == f:
                    img, st = fr.to_ndarray(format="rgb24"), FRAME_OK
                    break
                if i > f:  # the wanted frame is not in the stream
                    break
            if st != FRAME_OK and ended:
                st = BEYOND_END
            yield f, img, st
    finally:
        container.close()


def _decode_opencv(path: Path, want: np.ndarray, stop: threading.Event) -> Iterator[tuple[int, np.ndarray | None, int]]:
    """``(index, rgb or None, status)`` of the wanted frames (sorted, unique), decoded with OpenCV."""
    import cv2

    cap = _open(path)
    n_total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    pos, broken = 0, False
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
            yield f, img, st
    finally:
        cap.release()


def _decode(path: Path, want: np.ndarray, batch_size: int, stop: threading.Event, decoder: str):
    if decoder not in DECODERS:
        raise ValueError(f"decoder must be one of {DECODERS}, not {decoder!r}")
    items = _decode_pyav(path, want, stop) if decoder == "pyav" else _decode_opencv(path, want, stop)
    return _batches(items, batch_size)


def iter_frames(path: str | Path, frame_indices, batch_size: int = 8, read_ahead: int = 2,
                decoder: str | None = None) -> Iterator[FrameBatch]:  # fmt: skip
    """``FrameBatch`` es of the wanted frames (sorted, unique), decoded ``read_ahead`` batches ahead in a
    background thread (0: in the caller's thread) with ``decoder`` (default ``default_decoder()``).
    ``DataError`` if the video is missing or unreadable."""
    path = Path(path)
    decoder = decoder or default_decoder()
    want = np.unique(np.asarray(frame_indices, dtype=np.int64))
    if len(want) and want[0] < 0:
        raise ValueError(f"{path}: negative frame index {int(want[0])}")
    stop = threading.Event()
    if read_ahead <= 0:
        yield from _decode(path, want, batch_size, stop, decoder)
        return
    _open(path).release()  # fail here, in the caller's thread, if the video cannot be opened
    q: queue.Queue = queue.Queue(maxsize=read_ahead)
    done = object()

    def produce() -> None:
        try:
            for b in _decode(path, want, batch_size, stop, decoder):
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


def read_frames(path: str | Path, frame_indices, decoder: str | None = None) -> FrameBatch:
    """The frames at ``frame_indices`` (any order, repeats allowed), in that order, with their status;
    RGB uint8 ``(H, W, 3)`` (None where the status is not ``OK``)."""
    want = np.asarray(frame_indices, dtype=np.int64).reshape(-1)
    got: dict[int, tuple[np.ndarray | None, int]] = {}
    for b in iter_frames(path, want, batch_size=32, read_ahead=0, decoder=decoder):
        got.update({int(i): (f, int(s)) for i, f, s in zip(b.indices, b.frames, b.status, strict=True)})
    return FrameBatch(want, [got[int(i)][0] for i in want], np.asarray([got[int(i)][1] for i in want], np.int8))
