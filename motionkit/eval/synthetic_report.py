"""The realised difficulty of a synthetic dataset, measured against its ground truth (docs/synthetic.md).

Every accuracy figure should come with these numbers: how far the wearer's 2D keypoints are from the
projection of the true landmarks through the dataset's (imperfect) calibration, how correlated those
errors are in time, how often they are swapped, gross or missing, how far the landmarks sit from
the joint centres, and how wrong the calibration is.
"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from motionkit.body.quality import judged_flags
from motionkit.common.errors import DataError
from motionkit.conventions import (
    COCO17_BODY,
    COCO17_HIPS,
    COCO17_LR_PAIRS,
    COCO17_PARTS,
    COCO17_SHOULDERS,
    SMPLX_TO_COCO17,
)
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.observations import read_observations
from motionkit.data.store import read_result, result_path
from motionkit.eval.metrics import pa_mpjpe
from motionkit.eval.protocol import video_time_coverage
from motionkit.geometry.camera import Camera, CameraRig
from motionkit.geometry.interpolation import bracket, lerp
from motionkit.synthetic.scene import OBS_CLEAN, OBS_MISSED, OBS_OUTLIER, OBS_SWAPPED

FAR_PX = 50.0
NEAR_PX = 15.0


def lag1_autocorrelation(err: np.ndarray) -> float:
    """Pooled lag-1 autocorrelation of error series ``(T, ...)`` along axis 0 (NaN pairs skipped)."""
    a, b = err[1:], err[:-1]
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 10:
        return float("nan")
    a, b = a[ok], b[ok]
    a, b = a - a.mean(), b - b.mean()
    return float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))


GT_NEEDS = ("wearer/coco17_world", "wearer/joints_smplx", "detections/person_id")  # what read_gt cannot do without


def read_gt(root: str | Path, uid: str) -> dict:
    """What ``gt/<uid>.h5`` of a synthetic dataset holds that the difficulty figures use (camera names,
    preset and generator options, landmarks, joints, observation kinds, true cameras, person ids), camera
    axes in gt order."""
    p = Path(root) / "gt" / f"{uid}.h5"
    if not p.is_file():
        raise DataError(p, "no ground truth: not a synthetic dataset written by motionkit synth")
    try:
        with h5py.File(p, "r") as f:
            missing = [k for k in GT_NEEDS if not isinstance(f.get(k), h5py.Dataset)]
            missing += [] if "camera_names" in f.attrs else ["attribute camera_names"]
            if missing:
                raise DataError(p, f"damaged ground truth: no {', '.join(missing)}")

            def optional(name: str) -> np.ndarray | None:
                return f[name][()] if name in f else None

            g = {
                "names": json.loads(f.attrs["camera_names"]),
                "preset": str(f.attrs.get("preset", "clean")),
                "config": json.loads(f.attrs["config"]) if "config" in f.attrs else {},
                "landmarks": f["wearer/coco17_world"][()],
                "joints": f["wearer/joints_smplx"][()],
                "obs_kind": optional("wearer/obs_kind"),
                "true_T": optional("cameras/T_world_cam"),
                "true_params": optional("cameras/params"),
                "person_id": f["detections/person_id"][()],
                "visible": optional("wearer/visible"),
                "scenario": str(f.attrs.get("scenario", "generic")),
                "fittable_views": optional("wearer/fittable_views"),
                "landmark_views": optional("wearer/landmark_views"),
            }
    except OSError as exc:
        raise DataError(p, f"cannot read HDF5: {exc}") from exc
    return g


def gt_views(gt: dict, rig: CameraRig) -> list[int]:
    """Index into the gt's camera axis of each camera of ``rig`` (a calibration may skip gt cameras)."""
    return [gt["names"].index(n) for n in rig.names]


def true_rig(gt: dict, rig: CameraRig) -> CameraRig | None:
    """The cameras that rendered the take, in the order of ``rig`` (its calibration); None without them."""
    if gt["true_T"] is None:
        return None
    return CameraRig([Camera(n, c.width, c.height, gt["true_params"][v], gt["true_T"][v])
                      for n, c, v in zip(rig.names, rig, gt_views(gt, rig), strict=True)])  # fmt: skip


def take_difficulty(root: str | Path, take_uid: str, fits: str | Path | None = None) -> dict:
    """Difficulty figures of one synthetic take (see the module docstring); with ``fits``, also the
    PA-MPJPE of raw triangulation and of the fit against the true landmarks at the fit grid (mm)."""
    root = Path(root)
    take = EgoExoDataset(root).take(take_uid)
    gt = read_gt(root, take_uid)
    rig = take.rig  # the dataset's calibration
    vids = gt_views(gt, rig)
    lm = gt["landmarks"]  # (F, 17, 3)
    proj = calib_proj = rig.project(lm)  # (F, V, 17, 2) through the calibration
    obs = read_observations(root / "observations" / f"{take_uid}.h5")
    wearer = gt["person_id"] == 0
    kp = np.full(proj.shape, np.nan)
    cam_of = {obs.camera_names.index(n): v for v, n in enumerate(rig.names) if n in obs.camera_names}
    rows = np.flatnonzero(wearer & np.isin(obs.camera, list(cam_of)))
    v_idx = np.array([cam_of[c] for c in obs.camera[rows]], dtype=int)
    kp[obs.frame_index[rows], v_idx] = obs.keypoints[rows]
    detected = np.zeros(proj.shape[:2], dtype=bool)  # (F, V) the detector found the wearer
    detected[obs.frame_index[rows], v_idx] = True
    source = "wearer detections"
    res = None
    if fits is not None and result_path(fits, take_uid).is_file():
        res = read_result(result_path(fits, take_uid))
        fi = res["association/frame_index"]
        kp = np.where((res["association/det_index"] >= 0)[..., None, None], res["association/keypoints"], np.nan)
        proj, source = proj[fi], "selected keypoints (fit grid)"
    err = kp - proj
    dist = np.linalg.norm(err, axis=-1)
    have = np.isfinite(dist)
    out = {
        "take_uid": take_uid,
        "preset": gt["preset"],
        "scenario": gt["scenario"],
        "keypoints_scored": source,
        "median_2d_error_px": float(np.nanmedian(dist)) if have.any() else None,
        # of the errors that are not gross (swaps and outliers are scored below)
        "lag1_autocorrelation": lag1_autocorrelation(np.where(dist[..., None] <= FAR_PX, err, np.nan)),
        "share_over_50px": float((dist[have] > FAR_PX).mean()) if have.any() else None,
    }
    kind = gt["obs_kind"]
    if kind is not None:
        k = kind[:, vids]
        seen = k != OBS_MISSED
        out["swap_rate"] = float((k == OBS_SWAPPED)[seen].mean())
        out["outlier_rate"] = float((k == OBS_OUTLIER)[seen].mean())
        out["miss_rate"] = float((k == OBS_MISSED).mean())

    def landmark_offset(coco: tuple[int, ...]) -> float:  # limb landmarks vs the subject's joint centres
        idx = list(coco)
        return float(np.median(np.linalg.norm(lm[:, idx] - gt["joints"][:, SMPLX_TO_COCO17[idx]], axis=-1)))

    out["landmark_offset_hips_m"] = landmark_offset(COCO17_HIPS)
    out["landmark_offset_shoulders_m"] = landmark_offset(COCO17_SHOULDERS)
    true = true_rig(gt, rig)
    if true is not None:
        out["calibration_reprojection_px"] = float(np.nanmedian(np.linalg.norm(true.project(lm) - calib_proj, axis=-1)))
    if res is not None:
        frames = res["grid/frame_index"]
        truth = lm[frames]  # at the frames the observations come from (triangulation's time)
        fit_truth = truth_at_samples(lm, res["grid/frame_pos"])  # at the fit's own sample times
        tri = res["triangulation/points"]
        fit = res["joints/coco17"] if "joints/coco17" in res.arrays else None
        out["triangulation_pa_mpjpe_mm"] = float(np.nanmean(pa_mpjpe(tri, truth)))
        if fit is not None:
            out["fit_pa_mpjpe_mm"] = float(np.nanmean(pa_mpjpe(fit, fit_truth)))
            out["fit_world_offset_mm"] = world_offset_mm(fit, fit_truth)
        if "fit/obs_weight" in res.arrays and true is not None and kind is not None:
            out.update(_weight_checks(res, true.project(truth), kind[frames][:, vids], gt["person_id"]))
        if gt["visible"] is not None:
            fi = res["association/frame_index"]
            out.update(selection_checks(res, gt["visible"][fi][:, vids], detected[fi], gt["person_id"]))
        if gt["fittable_views"] is not None and "fit/joint_trusted" in res.arrays:
            shown = None if kind is None else np.isin(kind[frames][:, vids], DETECTED_KINDS).sum(1)
            out.update(trust_checks(res, fit_truth, gt["fittable_views"][frames], gt["landmark_views"][frames],
                                    take.n_frames, shown))  # fmt: skip
    return out


def truth_at_samples(truth: np.ndarray, frame_pos: np.ndarray) -> np.ndarray:
    """Ground truth ``(F, ...)`` on the take's 30 fps frames, linearly interpolated at the fit's sample
    positions ``frame_pos (M,)`` (``grid/frame_pos``, fractional frames). The fit models each observation
    at its own frame's time (``FitInputs``), so its samples sit at ``frame_pos``, not at the nearest frame:
    at 20 fps every other sample is half a frame (17 ms) from it, 50 mm for a wrist at 3 m/s."""
    return lerp(truth, bracket(np.arange(len(truth), dtype=np.float64), np.asarray(frame_pos, np.float64)))


def world_offset_mm(fit: np.ndarray, truth: np.ndarray) -> float:
    """How far the fitted body sits from the truth as a whole (mm): the norm of the mean, over the frames
    where ``fit (M, 17, 3)`` is finite, of the mean offset ``fit - truth`` of the 12 body landmarks
    (world metres). A calibration's world error shows here and not in PA-MPJPE (docs/result_file.md,
    "The fitted world"). NaN without a finite frame."""
    d = (fit - truth)[:, list(COCO17_BODY)].mean(1)  # (M, 3)
    ok = np.isfinite(d).all(-1)
    return float(np.linalg.norm(d[ok].mean(0)) * 1000.0) if ok.any() else float("nan")


DETECTED_KINDS = (OBS_CLEAN, OBS_OUTLIER, OBS_SWAPPED)  # a detection of the wearer shows the unoccluded landmark
FRAME_FAIL_MM = 100.0  # a frame whose PA-MPJPE against the true landmarks is above this is a failure
JOINT_FAIL_MM = 50.0  # a joint farther than this from its true landmark is wrong
TRUST_KEYS = (
    "false_trust",
    "missed_failures",
    "coverage_fittable",
    "coverage_video_time",
    "joint_false_trust",
    "joint_missed_failures",
    "joint_coverage",
    "joint_coverage_detected",
)  # the shares of trust_checks that the report also gives pooled at its top level


def failures(fit: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(error (M,), frame (M,), joint (M, 17))``: the PA-MPJPE (mm) of each frame of ``fit (M, 17, 3)``
    against ``truth (M, 17, 3)`` (world metres), the frames where it is over ``FRAME_FAIL_MM``, and the
    joints farther than ``JOINT_FAIL_MM`` from their true landmark (no failure where NaN)."""
    error = pa_mpjpe(fit, truth)
    frame = np.nan_to_num(error, nan=0.0) > FRAME_FAIL_MM
    joint = np.nan_to_num(np.linalg.norm(fit - truth, axis=-1) * 1000.0, nan=0.0) > JOINT_FAIL_MM
    return error, frame, joint


def trust_checks(res, truth: np.ndarray, fittable_views: np.ndarray, landmark_views: np.ndarray,
                 n_frames: int, detected_views: np.ndarray | None = None) -> dict:  # fmt: skip
    """The fit's validity, flags and per-joint trust against the truth, per frame of the fit grid.

    ``truth (M, 17, 3)`` true landmarks, ``fittable_views (M,)`` cameras that see >= 8 landmarks
    unoccluded, ``landmark_views (M, 17)`` cameras that see each landmark unoccluded; ``n_frames`` of
    the take's 30 fps video. Frame error: PA-MPJPE of the fit at every grid frame (``fit/coco17_all``,
    invalid frames included) against the truth; joint error: distance to the true landmark (m -> mm).
    Shares (``None`` when their denominator is empty): ``false_trust`` (valid frames with error over
    100 mm), ``missed_failures`` (frames over 100 mm neither invalid nor flagged), ``coverage_fittable``
    (frames with >= 2 fittable views that are valid), ``coverage_video_time`` (30 fps frames covered by
    a valid sample), ``valid_unfittable_failures`` (count of valid frames with < 2 fittable views and an
    error over 100 mm), and per joint ``joint_false_trust`` (trusted joints over 50 mm off),
    ``joint_missed_failures`` (joints over 50 mm off that are trusted), ``joint_coverage`` (joints seen
    unoccluded by >= 2 cameras that are trusted); with ``detected_views (M, 17)`` (the calibrated
    cameras whose detection of the wearer shows the landmark unoccluded) also ``joint_coverage_detected``
    (joints that two such detections show that are trusted: what the fit could have trusted, as an
    undetected person or a camera without calibration gives it nothing); the three joint shares per body
    part (``COCO17_PARTS``) as counts only, ``trust_counts["joint_false_trust:legs"]`` etc., which
    ``pooled_checks`` pools."""
    fit = res["fit/coco17_all"] if "fit/coco17_all" in res.arrays else res["joints/coco17"]
    err, fail, jfail = failures(fit, truth)
    valid = res["valid"].astype(bool)
    flagged = judged_flags(res.group("flags"), len(valid))
    fittable = fittable_views >= 2
    trusted = res["fit/joint_trusted"].astype(bool)
    seen = landmark_views >= 2

    cov = video_time_coverage(res["time_s"], valid, n_frames, res.fps)
    counts = {
        "false_trust": ((valid & fail).sum(), valid.sum()),
        "missed_failures": ((fail & valid & ~flagged).sum(), fail.sum()),
        "coverage_fittable": ((valid & fittable).sum(), fittable.sum()),
        "coverage_video_time": (cov.sum(), len(cov)),
        **joint_counts(trusted, jfail, seen),
        "unfittable_share": ((~fittable).sum(), len(fittable)),
        "occluded_share": ((~seen).sum(), seen.size),
    }
    if detected_views is not None:
        shown = detected_views >= 2
        counts["joint_coverage_detected"] = ((trusted & shown).sum(), shown.sum())
    out = _shares(counts, "trust_counts")
    for part, idx in COCO17_PARTS.items():  # the joint shares per body part: counts only, pooled over takes
        part_counts = joint_counts(trusted[:, idx], jfail[:, idx], seen[:, idx])
        out["trust_counts"] |= {f"{k}:{part}": [int(n), int(d)] for k, (n, d) in part_counts.items()}
    out["valid_unfittable_failures"] = int((valid & ~fittable & fail).sum())
    out["valid_pa_mpjpe_mm"] = float(np.nanmean(err[valid])) if valid.any() else None
    return out


def joint_counts(trusted: np.ndarray, wrong: np.ndarray, seen: np.ndarray) -> dict[str, tuple[int, int]]:
    """``(count, of)`` of the joint shares of ``trust_checks`` from ``(..., J)`` bool arrays: trusted
    joints, joints over ``JOINT_FAIL_MM`` off, joints that >= 2 cameras see unoccluded."""
    return {
        "joint_false_trust": ((trusted & wrong).sum(), trusted.sum()),
        "joint_missed_failures": ((trusted & wrong).sum(), wrong.sum()),
        "joint_coverage": ((trusted & seen).sum(), seen.sum()),
    }


def _selected(res, person_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(M, V)`` camera-frames with a selection, and those whose selection is the wearer."""
    det = res["association/det_index"]
    sel = det >= 0
    return sel, sel & (person_id[np.maximum(det, 0)] == 0)


def _shares(counts: dict, key: str) -> dict:
    """``{name: (count, of)}`` -> each share, and the counts under ``key`` (for ``pooled_checks``)."""
    out = {k: float(n / max(d, 1)) for k, (n, d) in counts.items()}
    out[key] = {k: [int(n), int(d)] for k, (n, d) in counts.items()}
    return out


def selection_checks(res, visible: np.ndarray, detected: np.ndarray, person_id: np.ndarray) -> dict:
    """How the association chose, per camera-frame of the fit grid (``visible``, ``detected (M, V)`` in
    the result's camera order): the share of the camera-frames where the wearer is visible whose
    selection is the wearer (a detector miss counts as a failure), the same where the detector found the
    wearer, and the share of selections that are someone else (a bystander or a junk box)."""
    sel, wearer = _selected(res, person_id)
    counts = {
        "wearer_selected_where_visible": ((wearer & visible).sum(), visible.sum()),
        "wearer_selected_where_detected": ((wearer & detected).sum(), detected.sum()),
        "selections_not_the_wearer": ((sel & ~wearer).sum(), sel.sum()),
    }
    return _shares(counts, "selection_counts")


def _weight_checks(res, true_px: np.ndarray, kind: np.ndarray, person_id: np.ndarray) -> dict:
    """How the fit weighted the selected observations, against their truth: the share that keeps a
    weight among those more than 50 px from the true projection (should be small) and within 15 px
    (should be large), the share of the observations of selections that are someone else that keep a
    weight (the second pass's view test drops them; all of their finite keypoints, whether or not the
    wearer's true projection is defined there: he is often out of that view), and the share of
    camera-frames with left/right-swapped wearer keypoints whose swapped pairs were undone
    (``association/swap``) or carry no weight."""
    sel, wearer = _selected(res, person_id)
    dist = np.linalg.norm(res["association/keypoints"] - true_px, axis=-1)
    kept = res["fit/obs_weight"] > 0
    scored = sel[..., None] & np.isfinite(dist)
    far, near = scored & (dist > FAR_PX), scored & (dist < NEAR_PX)
    other = (sel & ~wearer)[..., None] & np.isfinite(res["association/keypoints"]).all(-1)
    pair_of = np.full(17, -1)
    for p, (a, b) in enumerate(COCO17_LR_PAIRS):
        pair_of[a] = pair_of[b] = p
    bits = res["association/swap"][..., None] if "association/swap" in res.arrays else np.zeros((*sel.shape, 1), int)
    undone = (pair_of >= 0) & ((bits >> np.maximum(pair_of, 0)) & 1).astype(bool)
    swapped = wearer[..., None] & (kind == OBS_SWAPPED) & np.isfinite(dist)
    bad = swapped & ~undone & kept
    counts = {
        "far_obs_keeping_weight": ((kept & far).sum(), far.sum()),
        "near_obs_keeping_weight": ((kept & near).sum(), near.sum()),
        "other_person_obs_keeping_weight": ((kept & other).sum(), other.sum()),
        "swapped_camera_frames_handled": ((swapped.any(-1) & ~bad.any(-1)).sum(), swapped.any(-1).sum()),
    }
    return _shares(counts, "weight_check_counts")


def pooled_checks(takes: list[dict]) -> dict:
    """The shares of ``_weight_checks`` and ``selection_checks`` over every observation (camera-frame)
    of ``takes`` together (``take_difficulty`` results): with ~40 swapped camera-frames a take, per-take
    shares swing by +-10 points, and their median is a poor summary."""
    out = {}
    for key in ("weight_check_counts", "selection_counts", "trust_counts"):
        counts = [t[key] for t in takes if key in t]
        for k in counts[0] if counts else ():
            n, d = (sum(c[k][i] for c in counts) for i in (0, 1))
            out[k] = {"share": float(n / max(d, 1)), "count": n, "of": d}
    return out


def dataset_difficulty(root: str | Path, fits: str | Path | None = None) -> dict:
    """``take_difficulty`` of every take and their medians."""
    ds = EgoExoDataset(root)
    takes = [take_difficulty(root, t.take_uid, fits) for t in ds.takes()]
    keys = [k for k, v in takes[0].items() if isinstance(v, float)] if takes else []
    summary = {k: float(np.nanmedian([t[k] for t in takes if t.get(k) is not None])) for k in keys}
    pooled = pooled_checks(takes)
    quality = {k: pooled[k]["share"] for k in TRUST_KEYS if k in pooled}  # the quality control over all takes
    return {"root": str(root), "takes": takes, "median": summary, "pooled": pooled, **quality}


def format_difficulty(rep: dict) -> str:
    """A plain-text table of ``dataset_difficulty``."""
    rows = [("take", "preset", *rep["median"].keys())]
    for t in rep["takes"]:
        rows.append((t["take_uid"][:8], t["preset"], *(_fmt(t.get(k)) for k in rep["median"])))
    rows.append(("median", "", *(_fmt(v) for v in rep["median"].values())))
    text = "\n".join("  ".join(str(c) for c in r) for r in rows)
    pooled = rep.get("pooled") or {}
    whole = {k: p for k, p in pooled.items() if ":" not in k}
    if whole:
        text += "\npooled over the takes: " + "; ".join(f"{k} {_share_text(p)}" for k, p in whole.items())
    parts = [part for part in COCO17_PARTS if f"joint_false_trust:{part}" in pooled]
    if parts:
        keys = ("joint_false_trust", "joint_missed_failures", "joint_coverage")
        rows = [("per body part", *keys)]
        rows += [(part, *(_share_text(pooled[f"{k}:{part}"]) for k in keys)) for part in parts]
        widths = [max(len(r[i]) for r in rows) for i in range(len(keys) + 1)]
        text += "\n" + "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
    return text


def _share_text(p: dict) -> str:
    """A pooled share ``{share, count, of}`` as ``12.5% (1/8)``."""
    return f"{p['share']:.1%} ({p['count']}/{p['of']})"


def _fmt(x) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.3g}"
