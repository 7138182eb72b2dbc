"""The observation cache: per-take person detections and 2D keypoints in one HDF5 file.

This is the format in which detector and keypoint output is cached (real runs), and in which
synthetic takes ship their simulated detector output. One row per detection:

=================  ==================  ==========================================================
dataset            shape, dtype        meaning
=================  ==================  ==========================================================
``frame_index``    (N,) int32          30 fps take frame index of the image
``camera``         (N,) int16          index into the ``camera_names`` attribute
``box``            (N, 4) float32      x0, y0, x1, y1, full-resolution raw (fisheye) pixels
``score``          (N,) float32        detector confidence
``keypoints``      (N, 17, 2) float32  COCO-17 raw pixels, NaN where not predicted
``keypoint_conf``  (N, 17) float32     per-keypoint confidence, 0 where not predicted
=================  ==================  ==========================================================

Attributes: ``format = "motionkit-observations"``, ``version``, ``take_uid``, ``camera_names``
(JSON list), ``keypoint_format = "coco17"``, ``pixel_convention = "center"`` (integer pixel
centres), ``detector``, ``keypoint_model``, ``frames_processed`` (the frames that were run, so
an empty frame is distinguishable from one never processed). Rows are sorted by (frame, camera).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from motionkit.common.errors import DataError
from motionkit.common.files import atomic_path
from motionkit.data.h5files import open_motionkit_h5

FORMAT = "motionkit-observations"
VERSION = 1
COLUMNS = ("frame_index", "camera", "box", "score", "keypoints", "keypoint_conf")


@dataclass
class Observations:
    """Detections of one take (see the module docstring for the columns)."""

    camera_names: list[str]
    frame_index: np.ndarray
    camera: np.ndarray
    box: np.ndarray
    score: np.ndarray
    keypoints: np.ndarray
    keypoint_conf: np.ndarray
    frames_processed: np.ndarray
    attrs: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.frame_index)
        shapes = {"camera": (n,), "box": (n, 4), "score": (n,), "keypoints": (n, 17, 2), "keypoint_conf": (n, 17)}
        for k, shp in shapes.items():
            if getattr(self, k).shape != shp:
                raise ValueError(f"observations: {k} must have shape {shp}, got {getattr(self, k).shape}")
        if n and (self.camera.min() < 0 or self.camera.max() >= len(self.camera_names)):
            raise ValueError("observations: camera index out of range")

    def __len__(self) -> int:
        return len(self.frame_index)

    def select(self, mask: np.ndarray) -> Observations:
        return Observations(
            self.camera_names,
            self.frame_index[mask],
            self.camera[mask],
            self.box[mask],
            self.score[mask],
            self.keypoints[mask],
            self.keypoint_conf[mask],
            self.frames_processed,
            dict(self.attrs),
        )


def observations_from_rows(
    camera_names: list[str], rows: dict[str, list], frames_processed, attrs: dict
) -> Observations:
    """Build ``Observations`` from per-detection lists (keys ``COLUMNS``), with the right dtypes."""
    n = len(rows["frame_index"])
    shapes = {
        "frame_index": ((n,), np.int32),
        "camera": ((n,), np.int16),
        "box": ((n, 4), np.float32),
        "score": ((n,), np.float32),
        "keypoints": ((n, 17, 2), np.float32),
        "keypoint_conf": ((n, 17), np.float32),
    }
    cols = [np.asarray(rows[k], dtype=dt).reshape(shp) for k, (shp, dt) in shapes.items()]
    return Observations(list(camera_names), *cols, np.asarray(frames_processed, np.int32), dict(attrs))


def write_observations(path: str | os.PathLike, obs: Observations, **attrs) -> Path:
    """Write atomically (temp file + rename)."""
    path = Path(path)
    with atomic_path(path, suffix=".h5") as tmp, h5py.File(tmp, "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["version"] = VERSION
        f.attrs["camera_names"] = json.dumps(list(obs.camera_names))
        f.attrs["keypoint_format"] = "coco17"
        f.attrs["pixel_convention"] = "center"
        for k, v in {**obs.attrs, **attrs}.items():
            f.attrs[k] = v
        for k in COLUMNS:
            f.create_dataset(k, data=getattr(obs, k), compression="gzip", compression_opts=4, shuffle=True)
        f.create_dataset("frames_processed", data=np.asarray(obs.frames_processed, dtype=np.int32))
    return path


def read_observations(path: str | os.PathLike) -> Observations:
    path = Path(path)
    with open_motionkit_h5(path, FORMAT, "observation cache") as f:
        missing = [k for k in COLUMNS if k not in f]
        if missing:
            raise DataError(path, f"missing datasets {missing}")
        names = json.loads(f.attrs["camera_names"])
        cols = {k: f[k][()] for k in COLUMNS}
        attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
        processed = f["frames_processed"][()] if "frames_processed" in f else np.unique(cols["frame_index"])
    try:
        return Observations(names, *(cols[k] for k in COLUMNS), processed, attrs)
    except ValueError as exc:
        raise DataError(path, str(exc)) from exc
