"""RF-DETR person detection and COCO-17 keypoints (optional dependency ``motionkit[detect]``).

A checkpoint is a local file, given explicitly or found in rfdetr's model cache (``$RF_HOME``,
``$ROBOFLOW_HOME`` or ``~/.roboflow/models``) under the name the installed rfdetr publishes for that model
(its model configuration's ``pretrain_weights``, not a table kept here). Nothing is downloaded unless
``allow_download`` (``--allow-download``, for login nodes with internet): then rfdetr fetches its
published checkpoint into its cache. Every detector records its checkpoint's file name and SHA-256
(``checkpoint``). ``allow_random_init`` builds the real model classes without weights, for plumbing tests.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from motionkit.common.errors import DataError
from motionkit.geometry.boxes import box_iou

VARIANTS = {"nano": "RFDETRNano", "small": "RFDETRSmall", "medium": "RFDETRMedium", "large": "RFDETRLarge"}
MODEL_CLASSES = {**VARIANTS, "keypoints": "RFDETRKeypointPreview"}  # checkpoint kind -> rfdetr model class
OPTION_OF_KIND = {"keypoints": "--keypoint-weights"}  # the CLI option that names a checkpoint of that kind
COCO_PERSON = 1  # raw COCO category id used by COCO checkpoints


def cache_dir() -> Path:
    """rfdetr's model cache: where it downloads checkpoints to and looks for them."""
    return Path(os.environ.get("RF_HOME") or os.environ.get("ROBOFLOW_HOME") or "~/.roboflow/models").expanduser()


def _rfdetr():
    """The rfdetr module (an optional heavy dependency, imported on first use), without the deprecation
    warnings that its own imports raise under newer torch: not the user's to act on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated", category=FutureWarning)
        import rfdetr
    return rfdetr


def published_checkpoint(kind: str) -> str:
    """The checkpoint file name the installed rfdetr publishes for ``kind`` (a variant or ``keypoints``):
    the default ``pretrain_weights`` of that model's configuration."""
    if kind not in MODEL_CLASSES:
        raise ValueError(f"unknown RF-DETR checkpoint kind {kind!r}; choose from {', '.join(MODEL_CLASSES)}")
    cls = getattr(_rfdetr(), MODEL_CLASSES[kind])
    return str(cls.get_model_config(object.__new__(cls)).pretrain_weights)  # the model's default configuration


def checkpoint_identity(path: Path) -> dict:
    """``{"file": name, "sha256": hex}`` of a checkpoint, the provenance every detection records."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return {"file": path.name, "sha256": h.hexdigest()}


def resolve_weights(weights: str | os.PathLike | None, kind: str, allow_download: bool = False) -> Path:
    """An existing checkpoint path (absolute): ``weights`` as given (a path, or a file name in the cache),
    else rfdetr's published checkpoint for ``kind`` in its cache; with ``allow_download``, rfdetr fetches a
    published checkpoint that is missing. Otherwise a clear error that names both ways out."""
    name = published_checkpoint(kind) if not weights else None
    p = Path(weights).expanduser() if weights else cache_dir() / name
    if not p.is_absolute() and not p.exists():
        p = cache_dir() / p
    published = p.name in _published_names()
    if not p.is_file() and allow_download and published:
        from rfdetr.assets.model_weights import download_pretrain_weights

        cache_dir().mkdir(parents=True, exist_ok=True)
        cwd = os.getcwd()
        try:  # rfdetr downloads to the path it is given, relative to the working directory
            os.chdir(cache_dir())
            download_pretrain_weights(p.name)
        finally:
            os.chdir(cwd)
    if not p.is_file():
        option = OPTION_OF_KIND.get(kind, "--detector-weights")
        if not published:
            raise DataError(p, f"RF-DETR {kind} checkpoint not found; pass {option} with the path of a local "
                               f"checkpoint ({p.name} is not one of rfdetr's published checkpoints, so "
                               "--allow-download cannot fetch it)")  # fmt: skip
        raise DataError(p, f"RF-DETR {kind} checkpoint not found (looked in {cache_dir()}, rfdetr's cache: $RF_HOME). "
                           f"Either pass {option} with a local checkpoint, or --allow-download to let rfdetr fetch "
                           f"its published {p.name} into its cache (needs internet; compute nodes often have none: "
                           "download on a login node).")  # fmt: skip
    return p.resolve()


def _published_names() -> set[str]:
    try:
        from rfdetr.assets.model_weights import ModelWeights

        return set(ModelWeights.list_models())
    except (ImportError, AttributeError):  # an rfdetr without the registry: its own download decides
        return {published_checkpoint(k) for k in MODEL_CLASSES}


def checkpoints_report() -> dict:
    """For ``motionkit doctor``: rfdetr's cache, and per checkpoint kind the published file name and
    whether it is there."""
    try:
        names = {k: published_checkpoint(k) for k in MODEL_CLASSES}
    except ImportError:
        return {"rfdetr": None, "cache": str(cache_dir()), "checkpoints": {}}
    return {
        "rfdetr": importlib.metadata.version("rfdetr"),
        "cache": str(cache_dir()),
        "checkpoints": {k: {"file": n, "found": (cache_dir() / n).is_file()} for k, n in names.items()},
    }


PRECISIONS = ("auto", "float32", "float16", "bfloat16")


def _model(class_name: str, weights: Path | None, device: str, precision: str = "auto"):
    """The RF-DETR model; ``precision`` "auto" is float16 on CUDA (its inference mode, no tracing, so
    any batch size runs) and float32 elsewhere."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose from {', '.join(PRECISIONS)}")
    cls = getattr(_rfdetr(), class_name)
    model = cls(pretrain_weights=str(weights) if weights is not None else None, device=device)
    if precision == "auto":
        precision = "float16" if str(device).startswith("cuda") else "float32"
    if precision != "float32":
        model.inference(compile=False, dtype=getattr(torch, precision))
    return model


def _check_rgb(frames) -> None:
    for f in frames:
        if f.ndim != 3 or f.shape[2] != 3 or f.dtype != np.uint8:
            raise ValueError(f"frames must be RGB uint8 (H, W, 3); got {f.shape} {f.dtype}")


@dataclass
class RFDETRDetector:
    """Person boxes in source-image pixels (xyxy) with scores, for RGB uint8 frames."""

    variant: str = "nano"
    weights: str | None = None
    threshold: float = 0.5
    device: str = "cpu"
    batch_size: int = 4
    allow_random_init: bool = False
    allow_download: bool = False
    person_class: int = COCO_PERSON
    pixel_offset: float = 0.0  # added to outputs to map the model's pixel convention to integer centres
    precision: str = "auto"  # "auto": float16 on CUDA, float32 elsewhere

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown RF-DETR variant {self.variant!r}; choose from {', '.join(VARIANTS)}")
        w = None if self.allow_random_init and self.weights is None else (
            resolve_weights(self.weights, self.variant, self.allow_download))  # fmt: skip
        self.model = _model(VARIANTS[self.variant], w, self.device, self.precision)
        self.identity = f"rfdetr-{self.variant}:{w.name if w else 'random-init'}"
        self.checkpoint = checkpoint_identity(w) if w else {"file": "random-init", "sha256": ""}

    def detect(self, frames: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """``frames``: RGB uint8 ``(H, W, 3)``. Returns per frame ``(boxes (N, 4), scores (N,))``."""
        _check_rgb(frames)
        out = []
        for i in range(0, len(frames), self.batch_size):
            # uint8 frames go to the device as they are (widened there); no copy of the source image
            dets = self.model.predict(list(frames[i : i + self.batch_size]), threshold=self.threshold,
                                      include_source_image=False)  # fmt: skip
            for d in dets:
                keep = d.class_id == self.person_class
                out.append((d.xyxy[keep].astype(np.float64) + self.pixel_offset, d.confidence[keep].astype(np.float64)))
        return out


@dataclass
class RFDETRKeypoints:
    """COCO-17 keypoints from ``RFDETRKeypointPreview``. Top-down (``estimate_crops``, the
    ``motionkit.detect.topdown.CropKeypointModel`` interface): the model runs on a square crop around
    each candidate at ``input_size`` pixels and the instance with the highest IoU (>= ``min_iou``) with
    the candidate's box gives its keypoints. ``estimate`` does the same on whole frames."""

    weights: str | None = None
    threshold: float = 0.3
    device: str = "cpu"
    allow_random_init: bool = False
    allow_download: bool = False
    min_iou: float = 0.3
    pixel_offset: float = 0.0
    input_size: int = 576  # the keypoint model's input resolution
    batch_size: int = 16  # images per model call
    precision: str = "auto"  # "auto": float16 on CUDA, float32 elsewhere

    def __post_init__(self) -> None:
        w = None if self.allow_random_init and self.weights is None else (
            resolve_weights(self.weights, "keypoints", self.allow_download))  # fmt: skip
        self.model = _model(MODEL_CLASSES["keypoints"], w, self.device, self.precision)
        self.identity = f"rfdetr-keypoints:{w.name if w else 'random-init'}"
        self.checkpoint = checkpoint_identity(w) if w else {"file": "random-init", "sha256": ""}

    def estimate_crops(self, crops: list[np.ndarray], boxes: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per crop ``(keypoints (17, 2), conf (17,))`` in crop pixels of the person in ``boxes[c]``."""
        return [(k[0], c[0]) for k, c in self.estimate(crops, [np.asarray(b).reshape(1, 4) for b in boxes])]

    def estimate(self, frames: list[np.ndarray], boxes: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per frame ``(keypoints (N, 17, 2), conf (N, 17))`` for that frame's ``boxes (N, 4)``; the frames
        with boxes go through the model ``batch_size`` at a time."""
        if len(frames) != len(boxes):
            raise ValueError(f"{len(frames)} frames but {len(boxes)} box arrays")
        _check_rgb(frames)
        busy = [i for i, bx in enumerate(boxes) if len(bx)]
        preds = {}
        for s in range(0, len(busy), self.batch_size):
            idx = busy[s : s + self.batch_size]
            res = self.model.predict([frames[i] for i in idx], threshold=self.threshold, include_source_image=False)
            preds.update(zip(idx, res, strict=True))
        out = []
        for i, bx in enumerate(boxes):
            n = len(bx)
            kp = np.full((n, 17, 2), np.nan)
            cf = np.zeros((n, 17))
            if n:
                k = preds[i]
                inst_boxes = np.asarray(k.data.get("xyxy", np.zeros((0, 4))), dtype=np.float64).reshape(-1, 4)
                if len(inst_boxes):
                    iou = box_iou(np.asarray(bx, np.float64)[:, None], inst_boxes[None])
                    best = iou.argmax(1)
                    ok = iou[np.arange(n), best] >= self.min_iou
                    kp[ok] = k.xy[best[ok]] + self.pixel_offset
                    cf[ok] = k.keypoint_confidence[best[ok]]
            out.append((kp, cf))
        return out
