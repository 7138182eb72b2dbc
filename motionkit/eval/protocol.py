"""The SOMA evaluation protocol (docs/pipeline.md, "evaluate"): time matching of a fit to sparse
30 fps annotation frames, per-joint convention offsets in the parent frame, take-averaged
PA-MPJPE, and coverage of the video timeline."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from motionkit.common.errors import DataError
from motionkit.common.files import write_json_atomic
from motionkit.conventions import COCO17_NAMES, COCO17_OFFSET_PARENT, TAKE_FPS
from motionkit.eval.metrics import DEFAULT_MIN_JOINTS, mpjpe, mpjpe_centroid, pa_mpjpe
from motionkit.geometry.interpolation import bracket, lerp, slerp_rotmat

OFFSET_FRAMES = ("parent", "root", "world")


@dataclass(frozen=True)
class EvalConfig:
    min_views_gt: int = 0  # 0 = off; preset 3
    min_joints_pa: int = DEFAULT_MIN_JOINTS
    max_interp_gap_s: float | None = None  # None = one source frame period (adjacent samples)
    offset_frame: str = "parent"

    def to_dict(self) -> dict:
        return {
            "averaging": "take-averaged (mean of per-take means); median over takes; frame-pooled",
            "min_views_gt": self.min_views_gt,
            "min_joints_pa": self.min_joints_pa,
            "max_interp_gap_s": self.max_interp_gap_s,
            "offset_frame": self.offset_frame,
            "offset_alignment": "world",
            "offset_source": "own train fits",
        }


@dataclass
class FitSamples:
    """A fit as needed for scoring: ``time_s (N,)``, ``joints (N, 17, 3)`` COCO-17 world metres,
    ``valid (N,)``, and ``parent_rot (N, 17, 3, 3)`` (each joint's offset frame, see
    ``COCO17_OFFSET_PARENT``), ``root_rot (N, 3, 3)``."""

    time_s: np.ndarray
    joints: np.ndarray
    valid: np.ndarray
    parent_rot: np.ndarray | None = None
    root_rot: np.ndarray | None = None


@dataclass
class MatchedFrames:
    """Fit interpolated at annotation frames: ``frames (K,)``, ``pred (K, 17, 3)``, ``gt (K, 17, 3)``
    (NaN where absent or filtered), ``ok (K,)`` (scored), ``rot (K, 17, 3, 3)`` offset frames."""

    frames: np.ndarray
    pred: np.ndarray
    gt: np.ndarray
    ok: np.ndarray
    rot: np.ndarray | None
    skipped: dict[str, int] = field(default_factory=dict)


def match_to_annotation(
    fit: FitSamples, ann_frames: np.ndarray, gt: np.ndarray, num_views: np.ndarray | None, cfg: EvalConfig, fps: float
) -> MatchedFrames:
    """Interpolate the fit at annotation frames ``k / 30`` s (linear for joints, SLERP for offset frames).

    An annotation frame is scored only if both bracketing fit frames are valid and at most
    ``max_interp_gap_s`` apart (default: one fit period); otherwise it counts as uncovered.
    """
    tk = np.asarray(ann_frames, dtype=np.float64) / TAKE_FPS
    gap = cfg.max_interp_gap_s if cfg.max_interp_gap_s is not None else 1.0 / fps
    b = bracket(fit.time_s, tk, atol=1e-6)
    ok = b.inside & fit.valid[b.i0] & fit.valid[b.i1] & (b.span <= gap + 1e-6)
    pred = lerp(fit.joints, b)
    rot = None
    if fit.parent_rot is not None:
        R = fit.parent_rot
        R = np.where(np.isfinite(R).all((-1, -2))[..., None, None], R, np.eye(3))  # invalid frames: unused
        rot = slerp_rotmat(R, b)
    g = np.asarray(gt, dtype=np.float64).copy()
    if cfg.min_views_gt and num_views is not None:
        g[num_views < cfg.min_views_gt] = np.nan
    skipped = {"not_covered_by_fit": int((~ok).sum())}
    pred[~ok] = np.nan
    return MatchedFrames(np.asarray(ann_frames), pred, g, ok, rot, skipped)


def estimate_offsets(matches: list[MatchedFrames], frame: str = "parent") -> np.ndarray:
    """Per-joint convention offset ``(17, 3)`` pooled over all scored frames of all given takes:
    ``o_j = mean R^T (g_j - p_j)`` in each joint's offset frame (``parent``), the root frame, or world."""
    if frame not in OFFSET_FRAMES:
        raise ValueError(f"offset_frame must be one of {OFFSET_FRAMES}")
    acc = np.zeros((17, 3))
    cnt = np.zeros(17)
    for m in matches:
        r = m.gt - m.pred  # (K, 17, 3), NaN where not scored or absent
        if frame != "world":
            if m.rot is None:
                raise ValueError("offset estimation in a body frame needs the fit's joint rotations")
            r = np.einsum("kjba,kjb->kja", m.rot, r)
        ok = np.isfinite(r).all(-1)
        acc += np.where(ok[..., None], r, 0.0).sum(0)
        cnt += ok.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt[:, None] > 0, acc / cnt[:, None], 0.0)


def apply_offsets(m: MatchedFrames, offsets: np.ndarray, frame: str = "parent") -> np.ndarray:
    """Corrected predictions ``p + R o`` ``(K, 17, 3)``."""
    o = np.asarray(offsets, dtype=np.float64).reshape(17, 3)
    if frame == "world":
        return m.pred + o
    return m.pred + np.einsum("kjab,jb->kja", m.rot, o)


def column_means(values: np.ndarray) -> np.ndarray:
    """Mean of each column of ``values (N, J)`` over its finite entries; NaN (without a warning) for a
    column with none, e.g. a joint that no annotated frame has."""
    finite = np.isfinite(values)
    n = finite.sum(0)
    total = np.where(finite, values, 0.0).sum(0)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def video_time_coverage(sample_time_s: np.ndarray, sample_valid: np.ndarray, n_frames: int, rate: float) -> np.ndarray:
    """Which 30 fps frames ``(n_frames,)`` are covered by a valid sample of a ``rate`` source:
    ``s - 1/(2 rate) <= k/30 < s + 1/(2 rate)``."""
    s = np.sort(np.asarray(sample_time_s)[np.asarray(sample_valid, bool)])
    tk = np.arange(n_frames) / TAKE_FPS
    if len(s) == 0:
        return np.zeros(n_frames, bool)
    h = 1.0 / (2 * rate)
    j = np.searchsorted(s, tk - h, side="right")  # first sample with s > tk - h, i.e. tk < s + h
    ok = j < len(s)
    return ok & (s[np.minimum(j, len(s) - 1)] <= tk + h + 1e-12)  # and s - h <= tk


SEGMENT_S = 3.2  # the SOMA windows: 64 frames at 20 fps
SEGMENT_FPS = 20.0


def soma_windows(duration_s: float) -> list[tuple[float, float]]:
    """Consecutive ``SEGMENT_S`` windows ``(start_s, end_s)`` over ``[0, duration_s]``, the last one cut
    at the end."""
    return [(a, min(a + SEGMENT_S, duration_s)) for a in np.arange(0, duration_s - 1e-9, SEGMENT_S)]


def segment_coverage(
    sample_time_s: np.ndarray,
    sample_valid: np.ndarray,
    segments: list[tuple[float, float]],
    rate: float,
    target_fps: float = SEGMENT_FPS,
    mode: str = "native",
) -> np.ndarray:
    """Share of each segment's target points ``t_a + i / target_fps`` covered: ``native`` (a valid
    sample within 1/(2 target_fps)) or ``interpolated`` (between two valid consecutive samples at
    most 1/rate apart). Returns ``(S,)`` fractions."""
    t = np.asarray(sample_time_s, dtype=np.float64)
    v = np.asarray(sample_valid, bool)
    vt = np.sort(t[v])
    out = []
    for a, b in segments:
        pts = a + np.arange(int(math.floor((b - a) * target_fps + 1e-9))) / target_fps
        if len(pts) == 0 or len(vt) == 0:
            out.append(0.0)
            continue
        if mode == "native":
            j = np.clip(np.searchsorted(vt, pts), 1, len(vt) - 1) if len(vt) > 1 else np.zeros(len(pts), int)
            d = np.minimum(np.abs(vt[j] - pts), np.abs(vt[np.maximum(j - 1, 0)] - pts))
            cov = d <= 1.0 / (2 * target_fps) + 1e-9
        elif mode == "interpolated":
            b = bracket(t, pts)  # an exact hit needs its own sample; else both around, at most 1/rate apart
            cov = b.inside & v[b.i0] & v[b.i1] & (b.span <= 1.0 / rate + 1e-9)
        else:
            raise ValueError("mode must be 'native' or 'interpolated'")
        out.append(float(cov.mean()))
    return np.array(out)


@dataclass
class TakeScore:
    take_uid: str
    frames: np.ndarray  # scored annotation frames
    pa_mpjpe: np.ndarray  # per scored frame, mm
    mpjpe_world: np.ndarray
    mpjpe_centroid: np.ndarray
    pa_mpjpe_corrected: np.ndarray | None
    mpjpe_world_corrected: np.ndarray | None
    per_joint: np.ndarray  # (17,) mean world error per joint, mm
    per_joint_corrected: np.ndarray | None
    n_ann_frames: int
    skipped: dict[str, int]
    coverage_video_time: float
    covered_frames: int
    n_frames: int

    def row(self) -> dict:
        def mean(x):
            return None if x is None or not np.isfinite(x).any() else float(np.nanmean(x))

        return {
            "take_uid": self.take_uid,
            "frames_scored": int(np.isfinite(self.pa_mpjpe).sum()),
            "annotation_frames": self.n_ann_frames,
            "pa_mpjpe": mean(self.pa_mpjpe),
            "pa_mpjpe_corrected": mean(self.pa_mpjpe_corrected),
            "mpjpe_world": mean(self.mpjpe_world),
            "mpjpe_world_corrected": mean(self.mpjpe_world_corrected),
            "mpjpe_centroid": mean(self.mpjpe_centroid),
            "coverage_video_time": self.coverage_video_time,
            "skipped": self.skipped,
        }


def score_take(
    take_uid: str, m: MatchedFrames, cfg: EvalConfig, offsets: np.ndarray | None, coverage: np.ndarray
) -> TakeScore:
    """Per-frame errors of one take (uncorrected and, with ``offsets``, corrected)."""
    pa = pa_mpjpe(m.pred, m.gt, min_joints=cfg.min_joints_pa)
    scored = np.isfinite(pa)
    skipped = dict(m.skipped)
    skipped["too_few_joints"] = int((m.ok & ~scored).sum())
    world = mpjpe(m.pred, m.gt)
    cent = mpjpe_centroid(m.pred, m.gt)
    err_j = np.linalg.norm(m.pred - m.gt, axis=-1) * 1000.0
    per_joint = column_means(np.where(scored[:, None], err_j, np.nan))
    pa_c = world_c = pj_c = None
    if offsets is not None:
        pc = apply_offsets(m, offsets, cfg.offset_frame)
        pa_c = np.where(scored, pa_mpjpe(pc, m.gt, min_joints=cfg.min_joints_pa), np.nan)
        world_c = np.where(scored, mpjpe(pc, m.gt), np.nan)
        ej = np.linalg.norm(pc - m.gt, axis=-1) * 1000.0
        pj_c = column_means(np.where(scored[:, None], ej, np.nan))
    return TakeScore(
        take_uid,
        m.frames[scored],
        pa[scored],
        world[scored],
        cent[scored],
        None if pa_c is None else pa_c[scored],
        None if world_c is None else world_c[scored],
        per_joint,
        pj_c,
        len(m.frames),
        skipped,
        float(coverage.mean()) if len(coverage) else 0.0,
        int(coverage.sum()),
        len(coverage),
    )


def summarize(scores: list[TakeScore], cfg: EvalConfig, split: str, method: str = "motionkit") -> dict:
    """The report of one (method, split) in the SOMA paper's layout."""

    def stats(get):
        takes = [float(np.mean(get(s))) for s in scores if get(s) is not None and len(get(s))]
        pooled = (
            np.concatenate([get(s) for s in scores if get(s) is not None and len(get(s))]) if takes else np.zeros(0)
        )
        return {
            "take_mean": float(np.mean(takes)) if takes else None,
            "take_median": float(np.median(takes)) if takes else None,
            "frame_pooled": float(pooled.mean()) if len(pooled) else None,
            "n_takes": len(takes),
        }

    skipped: dict[str, int] = {}
    for s in scores:
        for k, v in s.skipped.items():
            skipped[k] = skipped.get(k, 0) + v
    pj = np.array([s.per_joint for s in scores if np.isfinite(s.per_joint).any()])
    pjc = np.array([s.per_joint_corrected for s in scores if s.per_joint_corrected is not None])
    covered = sum(s.covered_frames for s in scores)
    total = sum(s.n_frames for s in scores)
    return {
        "method": method,
        "split": split,
        "protocol": cfg.to_dict(),
        "n_takes": len(scores),
        "n_takes_scored": sum(1 for s in scores if len(s.pa_mpjpe)),
        "n_frames_scored": int(sum(len(s.pa_mpjpe) for s in scores)),
        "n_frames_skipped": skipped,
        "pa_mpjpe": {"uncorrected": stats(lambda s: s.pa_mpjpe), "corrected": stats(lambda s: s.pa_mpjpe_corrected)},
        "mpjpe_world": {
            "uncorrected": stats(lambda s: s.mpjpe_world),
            "corrected": stats(lambda s: s.mpjpe_world_corrected),
        },
        "mpjpe_centroid": {"uncorrected": stats(lambda s: s.mpjpe_centroid)},
        "per_joint": {
            "names": list(COCO17_NAMES),
            "uncorrected": column_means(np.asarray(pj)).tolist() if len(pj) else None,
            "corrected": column_means(np.asarray(pjc)).tolist() if len(pjc) else None,
        },
        "coverage": {
            "video_time": covered / total if total else 0.0,
            "takes": sum(1 for s in scores if s.covered_frames > 0) / len(scores) if scores else 0.0,
        },
        "per_take": [s.row() for s in scores],
    }


def save_offsets(path: str | Path, offsets: np.ndarray, frame: str, source: dict) -> None:
    write_json_atomic(
        path,
        {
            "offset_frame": frame,
            "joints": list(COCO17_NAMES),
            "parent_smplx_joint": COCO17_OFFSET_PARENT.tolist(),
            "offsets_m": np.asarray(offsets).tolist(),
            "source": source,
        },
        indent=1,
    )


def load_offsets(path: str | Path) -> tuple[np.ndarray, str]:
    try:
        d = json.loads(Path(path).read_text())
        o = np.asarray(d["offsets_m"], dtype=np.float64)
        frame = d.get("offset_frame", "parent")
    except (OSError, ValueError, KeyError) as exc:
        raise DataError(path, f"cannot read offsets: {exc}") from exc
    if o.shape != (17, 3) or not np.isfinite(o).all():
        raise DataError(path, f"offsets must be a finite (17, 3) array; got {o.shape}")
    return o, frame
