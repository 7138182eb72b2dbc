"""Top-down keypoints: person boxes on a downscaled frame, then a keypoint model on square crops around
the candidates, at the crop resolution the model wants, mapped back to frame pixels exactly.

Small interfaces, so that other models plug in:

* a ``PersonDetector`` has ``detect(frames) -> [(boxes (N, 4) xyxy, scores (N,)), ...]`` for RGB uint8
  frames, boxes in the given frames' pixels;
* a ``CropKeypointModel`` has ``input_size`` (pixels of the square crop) and
  ``estimate_crops(crops, boxes) -> [(keypoints (17, 2), conf (17,)), ...]``: one person per crop,
  ``boxes (C, 4)`` where the person's box lies in each crop, keypoints in crop pixels.

Pixel convention: integer pixel centres (docs/conventions.md). A crop of side ``L`` frame pixels with
its top-left edge at ``(x0, y0)`` (edge coordinates, i.e. pixel centre - 0.5) resized to ``S`` pixels
maps a frame point ``u`` to ``s (u + 0.5 - x0) - 0.5`` with ``s = S / L``, and back with
``(u_c + 0.5) / s + x0 - 0.5``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np

CROP_PAD = 1.25  # crop side = pad x the box's longer side
DETECT_SHORT_SIDE = 448  # the detector sees frames downscaled to this short side (the release's 448p)


class PersonDetector(Protocol):
    def detect(self, frames: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]: ...


class CropKeypointModel(Protocol):
    input_size: int

    def estimate_crops(self, crops: list[np.ndarray], boxes: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]: ...


@dataclass(frozen=True)
class Crop:
    """A square crop: top-left edge ``(x0, y0)`` and side ``length`` in frame pixels, ``size`` pixels out."""

    x0: float
    y0: float
    length: float
    size: int

    @property
    def scale(self) -> float:
        return self.size / self.length

    def affine(self) -> np.ndarray:
        """``(2, 3)`` matrix taking frame pixel centres to crop pixel centres (``cv2.warpAffine``)."""
        s = self.scale
        return np.array([[s, 0.0, s * (0.5 - self.x0) - 0.5], [0.0, s, s * (0.5 - self.y0) - 0.5]])

    def to_crop(self, pts: np.ndarray) -> np.ndarray:
        """Frame pixels ``(..., 2)`` -> crop pixels."""
        return self.scale * (pts + 0.5 - np.array([self.x0, self.y0])) - 0.5

    def to_frame(self, pts: np.ndarray) -> np.ndarray:
        """Crop pixels ``(..., 2)`` -> frame pixels."""
        return (pts + 0.5) / self.scale + np.array([self.x0, self.y0]) - 0.5


def crop_for_box(box: np.ndarray, size: int, pad: float = CROP_PAD) -> Crop:
    """The square crop centred on ``box`` (xyxy, frame pixel centres) with side ``pad`` x its longer side."""
    x0, y0, x1, y1 = (float(v) for v in box)
    cx, cy = 0.5 * (x0 + x1) + 0.5, 0.5 * (y0 + y1) + 0.5  # centre in edge coordinates
    length = max(pad * max(x1 - x0, y1 - y0), 8.0)
    return Crop(cx - 0.5 * length, cy - 0.5 * length, length, int(size))


def extract_crop(frame: np.ndarray, crop: Crop) -> np.ndarray:
    """The crop's pixels ``(size, size, 3)``, bilinear, black outside the frame."""
    import cv2

    return cv2.warpAffine(frame, crop.affine(), (crop.size, crop.size), flags=cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0)  # fmt: skip


def downscale_for_detection(frame: np.ndarray, short_side: int = DETECT_SHORT_SIDE) -> tuple[np.ndarray, float]:
    """The frame resized so that its short side is ``short_side`` (never enlarged), and the scale."""
    import cv2

    h, w = frame.shape[:2]
    s = min(1.0, short_side / min(h, w))
    if s == 1.0:
        return frame, 1.0
    k = int(1.0 / s)  # OpenCV's area resize is ~4x faster by a whole factor: that first (same pixel centres)
    if k >= 2 and h % k == 0 and w % k == 0:
        frame = cv2.resize(frame, (w // k, h // k), interpolation=cv2.INTER_AREA)
    return cv2.resize(frame, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA), s


def scale_points(pts: np.ndarray, s: float) -> np.ndarray:
    """Pixel coordinates of an image resized by ``s`` (pixel-centre rule ``s (u + 0.5) - 0.5``)."""
    return s * (np.asarray(pts, dtype=np.float64) + 0.5) - 0.5


def detect_people(frames: list[np.ndarray], detector: PersonDetector,
                  short_side: int = DETECT_SHORT_SIDE) -> list[tuple[np.ndarray, np.ndarray]]:  # fmt: skip
    """Person boxes on downscaled copies of ``frames``, returned in the frames' own pixels."""
    if not frames:
        return []
    with ThreadPoolExecutor(min(len(frames), os.cpu_count() or 1, 8)) as pool:  # OpenCV frees the GIL
        small, scales = zip(*pool.map(lambda f: downscale_for_detection(f, short_side), frames), strict=True)
    out = []
    for (boxes, scores), s in zip(detector.detect(list(small)), scales, strict=True):
        b = np.asarray(boxes, np.float64).reshape(-1, 4)
        out.append((scale_points(b.reshape(-1, 2), 1.0 / s).reshape(-1, 4), np.asarray(scores, np.float64)))
    return out


def topdown_keypoints(frames: list[np.ndarray], boxes: list[np.ndarray], model: CropKeypointModel,
                      priority: list[np.ndarray] | None = None, max_per_frame: int | None = None,
                      batch_size: int = 16) -> list[tuple[np.ndarray, np.ndarray]]:  # fmt: skip
    """Keypoints of every box (``boxes[i] (N_i, 4)`` in ``frames[i]`` pixels), from crops batched across
    frames: per frame ``(keypoints (N_i, 17, 2) frame pixels, conf (N_i, 17))``, NaN / 0 for boxes
    left out. ``priority[i] (N_i,)``: lower first (e.g. distance to the projected Aria head, so that the
    wearer's candidates come first); ``max_per_frame``: keypoints for that many boxes per frame at most."""
    jobs = []  # (frame index, box index, crop)
    for i, bx in enumerate(boxes):
        bx = np.asarray(bx, np.float64).reshape(-1, 4)
        order = np.argsort(priority[i], kind="stable") if priority is not None else np.arange(len(bx))
        for j in order[:max_per_frame] if max_per_frame is not None else order:
            jobs.append((i, int(j), crop_for_box(bx[j], model.input_size)))
    out = [(np.full((len(np.reshape(b, (-1, 4))), 17, 2), np.nan), np.zeros((len(np.reshape(b, (-1, 4))), 17)))
           for b in boxes]  # fmt: skip
    for k in range(0, len(jobs), batch_size):
        chunk = jobs[k : k + batch_size]
        crops = [extract_crop(frames[i], c) for i, _, c in chunk]
        in_crop = np.stack([c.to_crop(np.reshape(boxes[i], (-1, 4))[j].reshape(2, 2)).reshape(4) for i, j, c in chunk])
        for (i, j, c), (kp, cf) in zip(chunk, model.estimate_crops(crops, in_crop), strict=True):
            out[i][0][j] = c.to_frame(np.asarray(kp, np.float64))
            out[i][1][j] = cf
    return out
