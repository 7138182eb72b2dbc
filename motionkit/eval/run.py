"""Evaluate a folder of fits against a dataset's manual body annotations (``motionkit eval``)."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from motionkit.body.fitting import FACE_KEYPOINTS
from motionkit.common.errors import DataError
from motionkit.conventions import COCO17_OFFSET_PARENT, SMPLX_TO_COCO17, TAKE_FPS
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.fitted_body import fitted_body, fitted_valid
from motionkit.data.store import TakeResult, read_result, result_path
from motionkit.eval.metrics import foot_sliding_gt_free, jitter
from motionkit.eval.protocol import (
    EvalConfig,
    FitSamples,
    MatchedFrames,
    estimate_offsets,
    match_to_annotation,
    score_take,
    segment_coverage,
    soma_windows,
    summarize,
    video_time_coverage,
)


def fit_samples(result: TakeResult) -> FitSamples:
    """COCO-17 joints and offset-frame rotations of a fitted take (forward kinematics of its SMPL-X)."""
    J, GR = fitted_body(result, FACE_KEYPOINTS, return_transforms=True)
    valid = fitted_valid(result)
    joints = J[:, SMPLX_TO_COCO17]
    if "joints/coco17" in result.arrays:  # trust the stored joints (identical by construction)
        joints = np.where(np.isfinite(result["joints/coco17"]), result["joints/coco17"], joints)
    joints[~valid] = np.nan
    return FitSamples(result["time_s"], joints, valid, GR[:, COCO17_OFFSET_PARENT], GR[:, 0])


@dataclass
class TakeInput:
    uid: str
    split: str
    fit: FitSamples
    fps: float
    n_frames: int
    match: MatchedFrames
    joints_smplx: np.ndarray | None
    body_model: dict
    detections_source: str  # "observations", "rfdetr", "annotation" (circular: fitted to the annotations)


def _circular(t: TakeInput) -> bool:
    return t.detections_source == "annotation"


def _load_take(ds: EgoExoDataset, info, fits_dir: Path, cfg: EvalConfig, unreadable: list[str]) -> TakeInput | None:
    """The take's fit and its match to the annotations; None without a fit or annotations, and for a
    damaged result file (appended to ``unreadable``, with a warning: one file does not stop the scores)."""
    p = result_path(fits_dir, info.take_uid)
    if not p.is_file():
        return None
    try:
        res = read_result(p)
    except DataError as exc:
        warnings.warn(f"{exc}; left out of the scores", stacklevel=3)
        unreadable.append(str(p))
        return None
    if not res.has_fit:
        return None
    ann = ds.take(info.take_uid).body_annotation("annotation")
    if ann is None or len(ann.frames) == 0:
        return None
    fit = fit_samples(res)
    fps = res.fps
    if cfg.offset_frame == "root":
        fit.parent_rot = np.repeat(fit.root_rot[:, None], 17, axis=1)
    m = match_to_annotation(fit, ann.frames, ann.joints3d, ann.num_views, cfg, fps)
    js = res["joints/smplx"] if "joints/smplx" in res.arrays else None
    source = str(res.group_attrs.get("detections", {}).get("source", "unknown"))
    return TakeInput(info.take_uid, info.split, fit, fps, info.n_frames, m, js, res.body_model, source)


def evaluate(
    root,
    fits_dir,
    *,
    split: str = "val",
    offsets_from: str | None = "train",
    offsets: np.ndarray | None = None,
    cfg: EvalConfig | None = None,
    method: str = "motionkit",
    allow_circular: bool = False,
) -> tuple[dict, np.ndarray | None]:
    """Score the fits of ``split`` takes; offsets come from ``offsets`` or are fitted on the
    ``offsets_from`` split's fits. Returns (report, offsets).

    A fit whose detections came from ``annotation2D`` was fitted to the annotations it would be
    scored against: such **circular** takes are listed in the report (``circular_takes``) and left
    out of every figure, offsets included, unless ``allow_circular``.
    """
    cfg = cfg or EvalConfig()
    ds = EgoExoDataset(root)
    fits_dir = Path(fits_dir)

    def usable(info):
        return not info.excluded_scenario

    n_offset_takes, unreadable = 0, []
    if offsets is None and offsets_from:
        train = [t for t in (_load_take(ds, i, fits_dir, cfg, unreadable) for i in ds.takes(offsets_from)
                             if usable(i)) if t]  # fmt: skip
        train = [t for t in train if allow_circular or not _circular(t)]
        n_offset_takes = len(train)
        if train:
            offsets = estimate_offsets([t.match for t in train], cfg.offset_frame)
        else:
            warnings.warn(
                f"no fitted {offsets_from} takes with annotations in {fits_dir}: no corrected figures", stacklevel=2
            )
    loaded = [t for t in (_load_take(ds, i, fits_dir, cfg, unreadable) for i in ds.takes(split) if usable(i)) if t]
    takes = [t for t in loaded if allow_circular or not _circular(t)]
    scores, jit, slide, seg_n, seg_i = [], [], [], [], []
    for t in takes:
        cov = video_time_coverage(t.fit.time_s, t.fit.valid, t.n_frames, t.fps)
        scores.append(score_take(t.uid, t.match, cfg, offsets, cov))
        ok = t.fit.valid
        if ok.sum() > 3:
            jit.append(float(np.nanmean(jitter(t.fit.joints[ok], t.fps))))
        if t.joints_smplx is not None and ok.sum() > 1:
            slide.append(foot_sliding_gt_free(t.joints_smplx[ok]))
        segs = soma_windows(t.n_frames / TAKE_FPS)
        seg_n += segment_coverage(t.fit.time_s, t.fit.valid, segs, t.fps, mode="native").tolist()
        seg_i += segment_coverage(t.fit.time_s, t.fit.valid, segs, t.fps, mode="interpolated").tolist()
    report = summarize(scores, cfg, split, method)
    report["detections_source"] = {t.uid: t.detections_source for t in loaded}
    report["circular_takes"] = [t.uid for t in loaded if _circular(t)]
    report["circular_included"] = allow_circular
    report["unreadable_fits"] = unreadable
    for row in report["per_take"]:
        row["detections_source"] = report["detections_source"][row["take_uid"]]
    report["body_models"] = list({json.dumps(t.body_model, sort_keys=True): t.body_model for t in takes}.values())
    report["coverage"]["segment_native"] = float(np.mean(seg_n)) if seg_n else None
    report["coverage"]["segment_interp"] = float(np.mean(seg_i)) if seg_i else None
    thresholds = [0.5, 0.8, 0.9, 0.95, 1.0]
    report["coverage"]["segments_at_least"] = {
        str(x): float(np.mean(np.array(seg_n) >= x - 1e-9)) if seg_n else None for x in thresholds
    }
    report["temporal"] = {
        "jitter_10m_per_s3": float(np.mean(jit)) if jit else None,
        "foot_sliding_gt_free_mm": float(np.mean(slide)) if slide else None,
    }
    report["offsets"] = {
        "from_split": offsets_from if n_offset_takes else None,
        "n_takes": n_offset_takes,
        "frame": cfg.offset_frame,
        "values_m": None if offsets is None else np.asarray(offsets).tolist(),
    }
    return report, offsets
