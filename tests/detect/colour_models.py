"""Deterministic test models behind the detector interfaces (tests only): people found by the colours
of their rendered silhouettes, keypoints by the colours of the rendered landmark markers."""

from __future__ import annotations

import cv2
import numpy as np

from motionkit.synthetic.video import MARKER_COLOURS, PERSON_COLOURS


def _near(img: np.ndarray, bgr, tol: float) -> np.ndarray:
    """``(H, W)`` pixels of the RGB uint8 ``img`` within ``tol`` of the colour ``bgr`` in every channel."""
    rgb = np.asarray(bgr[::-1], np.float64)
    low, high = np.clip(np.ceil(rgb - tol), 0, 255), np.clip(np.floor(rgb + tol), 0, 255)
    return cv2.inRange(np.ascontiguousarray(img), low, high) > 0


class ColourPersonDetector:
    """One box per rendered person whose silhouette colours cover at least ``min_pixels`` pixels."""

    identity = "test-colour-detector"

    def __init__(self, tol: float = 30.0, min_pixels: int = 150) -> None:
        self.tol, self.min_pixels = tol, min_pixels

    def detect(self, frames):
        out = []
        for img in frames:
            boxes = []
            for palette in PERSON_COLOURS:
                mask = np.zeros(img.shape[:2], bool)
                for c in palette:
                    mask |= _near(img, c, self.tol)
                if mask.sum() >= self.min_pixels:
                    ys, xs = np.nonzero(mask)
                    boxes.append([xs.min(), ys.min(), xs.max(), ys.max()])
            out.append((np.asarray(boxes, np.float64).reshape(-1, 4), np.ones(len(boxes))))
        return out


class MarkerKeypoints:
    """Keypoint ``j`` = the centroid of the largest blob of marker colour ``j`` inside the person's box
    (anti-aliased edges elsewhere can blend into a marker's colour for a pixel or two)."""

    identity = "test-marker-keypoints"

    def __init__(self, input_size: int = 256, tol: float = 25.0) -> None:
        self.input_size, self.tol = input_size, tol

    def estimate_crops(self, crops, boxes):
        out = []
        for img, box in zip(crops, np.asarray(boxes).reshape(-1, 4), strict=True):
            h, w = img.shape[:2]
            x0, y0, x1, y1 = box
            pad = 0.1 * max(x1 - x0, y1 - y0)
            # the pixels within the padded box: a window of the crop
            c0, r0 = max(int(np.ceil(x0 - pad)), 0), max(int(np.ceil(y0 - pad)), 0)
            c1, r1 = min(int(np.floor(x1 + pad)), w - 1) + 1, min(int(np.floor(y1 + pad)), h - 1) + 1
            window = img[r0:r1, c0:c1]
            ys, xs = np.mgrid[r0:r1, c0:c1]
            kp, cf = np.full((17, 2), np.nan), np.zeros(17)
            for j, c in enumerate(MARKER_COLOURS if window.size else ()):
                m = _near(window, c, self.tol)
                n, labels, stats, _ = cv2.connectedComponentsWithStats(m.astype(np.uint8), connectivity=8)
                if n < 2:
                    continue
                best = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
                if stats[best, cv2.CC_STAT_AREA] >= 3:
                    blob = labels == best
                    kp[j] = xs[blob].mean(), ys[blob].mean()
                    cf[j] = 1.0
            out.append((kp, cf))
        return out
