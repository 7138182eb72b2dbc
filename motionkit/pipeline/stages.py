"""The stages of one take, in order (docs/pipeline.md): each reads what earlier stages put in the
result and adds its own groups (docs/result_file.md). ``STAGES`` maps a stage name to its function
and the result groups it owns; ``runner.run_take`` runs them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from motionkit.body.fitting import (
    FACE_KEYPOINTS,
    BodyFitConfig,
    FitInputs,
    FitOutput,
    coco_landmark_offsets,
    coco_rows,
    fit_batch_calls,
    fit_body_model,
    fit_take,
    use_fused_kernels,
)
from motionkit.body.model import BodyModel
from motionkit.body.objective import head_turn_residual
from motionkit.body.quality import (
    ObservationSupport,
    aria_held_gaps,
    dropped_views,
    eye_anchor_distance,
    eyes_off_anchor,
    head_held_by_aria,
    joint_trusted,
    neck_twisted,
    observation_support,
    quality_flags,
    valid_frames,
    view_pair_sine,
    weighted_views,
)
from motionkit.body.world_anchor import aria_world_shift, camera_distance_m, shifted_cameras
from motionkit.common.device import resolve_device
from motionkit.common.errors import DataError
from motionkit.conventions import (
    COCO17_LR_PAIRS,
    TAKE_FPS,
    eye_midpoint,
    fit_grid_frames,
    nearest_take_frames,
)
from motionkit.data.aria import DEFAULT_CPF_SOURCE
from motionkit.data.egoexo4d import Take
from motionkit.data.observations import write_observations
from motionkit.data.store import TakeResult
from motionkit.detect.frames import FRAME_STATUS, exo_video_path
from motionkit.detect.sources import annotation_observations, dataset_observation_path, load_observation_cache
from motionkit.detect.timesync import check_timesync
from motionkit.detect.video import detect_videos
from motionkit.detect.wearer import associate_wearer
from motionkit.eval.protocol import EvalConfig, match_to_annotation, score_take, video_time_coverage
from motionkit.eval.run import fit_samples
from motionkit.geometry.refine import CameraRefinement
from motionkit.geometry.rotations import invert_transform
from motionkit.geometry.swaps import swap_bits, swapped_pair_count
from motionkit.geometry.triangulation import prune_far_cameras, triangulate, view_outliers
from motionkit.motion.derive import FEATURE_FPS, derive_motion, event_counts
from motionkit.pipeline.config import PipelineConfig
from motionkit.pipeline.fit_inputs import build_fit_inputs, observed_views, selected_views


@dataclass
class StageContext:
    """What a stage works on: the take, the run's options, the result being built, a line of
    information per stage (``info``), and the take's observations once detected."""

    take: Take
    config: PipelineConfig
    result: TakeResult
    info: dict = field(default_factory=dict)
    obs: object = None  # Observations of the take, once detected


def stage_load(ctx: StageContext) -> None:
    take = ctx.take
    rig = take.rig
    status = take.camera_status
    ctx.result.put(
        "cameras",
        {"params": rig.params, "T_world_cam": np.stack([c.T_world_cam for c in rig]), "size": rig.sizes},
        names=json.dumps(rig.names),
        status=json.dumps(status),
    )
    pos = fit_grid_frames(take.n_frames, ctx.config.fps)
    ctx.result.put("cameras", {"active": take.camera_active(nearest_take_frames(pos))})
    ctx.result.put(
        "grid",
        {"frame_pos": pos, "frame_index": nearest_take_frames(pos), "time_s": pos / TAKE_FPS},
        fps=ctx.config.fps,
        n_take_frames=take.n_frames,
    )
    ctx.info["load"] = f"{len(rig)} cameras ({', '.join(rig.names)}), {len(pos)} frames at {ctx.config.fps:g} fps"


def stage_anchor(ctx: StageContext) -> None:
    frames = ctx.result["grid/frame_index"]
    ts, reason = ctx.take.frame_device_ns(frames)  # at the frames the detections come from (association)
    anchor = ctx.take.trajectory.head_anchor_at(ts)
    reason = np.where((reason == "") & ~anchor.valid, "NO_ARIA_POSE", reason)
    at_sample = ctx.take.trajectory.head_anchor_at(ctx.take.sample_device_ns(ctx.result["grid/frame_pos"]))
    ctx.result.put(
        "aria",
        {
            "device_time_ns": ts,
            "position": anchor.position,
            "rotation": anchor.rotation,
            "valid": anchor.valid,
            "reason": reason.astype(str),
            "position_at_sample": at_sample.position,  # at the samples' own times (the fit's), NaN unknown
            "rotation_at_sample": at_sample.rotation,  # (M, 3, 3) world from CPF, likewise
        },
        cpf_source=DEFAULT_CPF_SOURCE,
        T_device_cpf="CAD DVT-S",
    )
    ctx.info["anchor"] = f"head anchor valid on {anchor.valid.mean():.1%} of frames"


def _detection_source(ctx: StageContext) -> str:
    src = ctx.config.detector
    if src == "auto":
        if dataset_observation_path(ctx.take).is_file():
            return "observations"
        if ctx.config.detector_weights or any(exo_video_path(ctx.take, n).is_file() for n in ctx.take.rig.names):
            return "rfdetr"
        raise DataError(
            dataset_observation_path(ctx.take),
            "no detections for this take: no observation cache and no exo videos "
            "(frame_aligned_videos); provide the videos and --detector-weights (RF-DETR), or an observation cache",
        )
    if src not in ("observations", "annotation", "rfdetr"):
        raise ValueError(f"unknown detector {src!r}")
    return src


def _cache_path(ctx: StageContext) -> Path:
    return Path(ctx.info["out_dir"]) / "cache" / f"{ctx.take.uid}.observations.h5"


def _aria_head(r: TakeResult) -> np.ndarray | None:
    """The Aria head anchor ``(M, 3)`` (NaN where invalid), or None before the anchor stage."""
    if "aria/position" not in r.arrays:
        return None
    return np.where(r["aria/valid"].astype(bool)[:, None], r["aria/position"], np.nan)


def stage_detect(ctx: StageContext) -> None:
    rig = ctx.take.rig
    src = _detection_source(ctx)
    frames = ctx.result["grid/frame_index"]
    if src == "observations":
        path = dataset_observation_path(ctx.take)
        obs = load_observation_cache(path, rig)
    elif src == "annotation":
        obs = annotation_observations(ctx.take, rig)
        path = _cache_path(ctx)
        write_observations(path, obs, take_uid=ctx.take.uid)
    else:
        path = _cache_path(ctx)
        cfg = ctx.config
        obs = detect_videos(
            ctx.take,
            frames,
            path,
            variant=cfg.detector_variant,
            detector_weights=cfg.detector_weights,
            keypoint_weights=cfg.keypoint_weights,
            allow_download=cfg.allow_download,
            threshold=cfg.detector_threshold,
            downscaled=cfg.downscaled_video,
            device=str(resolve_device(cfg.device)),
            head_world=_aria_head(ctx.result),
            **dict(zip(("detector", "keypoint_model"), ctx.info.get("video_models") or (), strict=False)),
        )
    ctx.obs = obs
    in_frames = np.isin(obs.frame_index, frames)
    count = np.array(
        [
            int((in_frames & (obs.camera == obs.camera_names.index(n))).sum()) if n in obs.camera_names else 0
            for n in rig.names
        ]
    )
    arrays, extra = {"count": count}, {}
    if "frame_status" in obs.attrs:  # decoded from videos: a status per frame and camera, and video errors
        arrays["frame_status"] = np.asarray(json.loads(obs.attrs["frame_status"]), np.int8).T
        extra = {"frame_status_codes": json.dumps(FRAME_STATUS), "video_errors": obs.attrs.get("video_errors", "{}")}
    if "checkpoints" in obs.attrs:  # the models' checkpoint files and SHA-256
        extra["checkpoints"] = obs.attrs["checkpoints"]
    ctx.result.put("detections", arrays, source=src, path=str(path), camera_names=json.dumps(rig.names), **extra)
    ctx.info["detect"] = f"{src}: {int(count.sum())} person detections on {len(frames)} frames x {len(rig)} cameras"
    if "frame_status" in arrays:
        lost = int((arrays["frame_status"] != 0).sum())
        errs = json.loads(extra["video_errors"])
        ctx.info["detect"] += f"; {lost} camera-frames not decoded" + (
            f" (unusable: {', '.join(errs)})" if errs else ""
        )


def _observations(ctx: StageContext):
    obs = getattr(ctx, "obs", None)
    if obs is None:  # the detect stage was reused from an earlier run: reload its cache
        obs = load_observation_cache(Path(ctx.result.group_attrs["detections"]["path"]), ctx.take.rig)
        ctx.obs = obs
    return obs


def stage_keypoints(ctx: StageContext) -> None:
    """Bookkeeping: keypoints arrive with the detections (``detect``); this records which model made
    them and how many detections have them (the ``keypoints`` group)."""
    obs = _observations(ctx)
    have = np.isfinite(obs.keypoints[..., 0]).any(-1).mean() if len(obs) else 0.0
    ctx.result.put("keypoints", {}, model=str(obs.attrs.get("keypoint_model", "unknown")), format="coco17")
    ctx.info["keypoints"] = f"{obs.attrs.get('keypoint_model', 'unknown')}: keypoints on {have:.1%} of detections"


def stage_associate(ctx: StageContext) -> None:
    """Records ``detect.wearer.associate_wearer`` (the order of the rules is documented there)."""
    obs = _observations(ctx)
    r, cfg = ctx.result, ctx.config
    w = associate_wearer(
        obs, ctx.take.rig, r["grid/frame_index"], r["grid/time_s"], r["aria/position"], r["aria/valid"].astype(bool),
        r["aria/reason"].astype(str), cfg.fps, mode=cfg.association, selection=cfg.selection,
        cross_view=cfg.cross_view_rule if cfg.cross_view else None, swaps=cfg.swaps,
        anchor_rotation=r["aria/rotation"],
    )  # fmt: skip
    a = w.association
    arrays = a.to_arrays()
    arrays["keypoints"], arrays["confidence"], arrays["swap"] = w.keypoints, w.confidence, swap_bits(w.swap)
    sync = check_timesync(ctx.take, a)
    r.put(
        "association",
        arrays,
        camera_names=json.dumps(a.camera_names),
        floor_z=a.floor_z,
        swap_pairs=json.dumps([list(p) for p in COCO17_LR_PAIRS]),
        timesync_check=json.dumps(sync.to_dict()),
    )
    taus = ", ".join(f"{n} {t:.0f}px" for n, t in zip(a.camera_names, a.tau_px, strict=True))
    n_swapped = int(w.swap.any(-1).sum())
    ctx.info["associate"] = (
        f"wearer selected in {a.selected.mean():.1%} of camera-frames; tau {taus}; "
        f"left/right labels corrected in {n_swapped} camera-frames"
        + (f"; TIMESYNC SUSPECT: best shift {sync.best_shift:+d} frame(s)" if sync.suspect else "")
    )


def stage_triangulate(ctx: StageContext) -> None:
    r = ctx.result
    rig = ctx.take.rig
    anchor = r["aria/position"][r["aria/valid"].astype(bool)]
    prune = prune_far_cameras(rig, anchor) if len(anchor) else None
    kept = np.array([prune is None or n in prune.kept for n in rig.names])
    conf = np.where(observed_views(r)[..., None] & kept[None, :, None], r["association/confidence"], 0.0)
    tcfg = ctx.config.triangulation
    tri = triangulate(r["association/keypoints"], conf, rig, tcfg)
    # (M, V) VIEW_OUTLIER: the whole view disagrees (a bystander, say)
    outlier = view_outliers(tri, tcfg, rig=rig, confidence=conf)
    if outlier.any():  # solve again without them: they may have been inliers at a few joints
        tri = triangulate(r["association/keypoints"], np.where(outlier[..., None], 0.0, conf), rig, tcfg)
    r.put(
        "triangulation",
        {
            "points": tri.points,
            "status": tri.status,
            "n_views": tri.n_views,
            "inlier": tri.inlier,
            "residual_px": tri.residual_px,
            "camera_kept": kept,
            "view_outlier": outlier,
        },
        pruned=json.dumps({} if prune is None else prune.dropped),
    )
    ok = tri.status == 0
    ctx.info["triangulate"] = (
        f"{ok.mean():.1%} of joints triangulated; {int(outlier.sum())} camera-frames VIEW_OUTLIER; pruned: "
        f"{', '.join(prune.dropped) if prune and prune.dropped else 'none'}"
    )


@dataclass
class FitJob:
    """What one take's fit needs, prepared from its earlier stages (``prepare_fit``)."""

    inputs: FitInputs
    config: BodyFitConfig
    body: BodyModel


def prepare_fit(ctx: StageContext) -> FitJob:
    """The fit inputs, body model and fit configuration of a take whose stages up to ``triangulate``
    are done; ``DataError`` when the take cannot be fitted."""
    r = ctx.result
    take = ctx.take
    kept = r["triangulation/camera_kept"].astype(bool)
    if kept.sum() < 2:
        raise DataError(take.calibration_path, f"fewer than 2 usable cameras ({int(kept.sum())}): cannot fit")
    n_views = selected_views(r).sum(1)
    if not (n_views >= 2).any():
        raise DataError(take.take_dir, "no wearer found: no frame has the wearer selected in 2 or more views")
    cfg = ctx.config
    bcfg = dataclasses.replace(cfg.body_fit, device=str(resolve_device(cfg.device)), kernels=cfg.kernels)
    body = fit_body_model(cfg.body_model)
    inputs = build_fit_inputs(r, take.rig, cfg.fps, cfg.weighting, cfg.triangulation)
    return FitJob(inputs, bcfg, body)


def fit_progress_total(jobs: list[FitJob]) -> int:
    """Adam iterations ``fit_takes`` runs for these jobs (one batch, more with long takes; all of it
    again after each round of camera refinement)."""
    cfg = jobs[0].config
    fits = 1 + (cfg.camera_refine_rounds if cfg.refine_cameras else 0)
    calls = fit_batch_calls([len(j.inputs.keypoints) for j in jobs], cfg) * fits
    return (sum(cfg.iters) + cfg.second_pass_iters * cfg.second_pass_rounds) * calls


def stage_fit(ctx: StageContext) -> None:
    """Fit the take, or store the output a batched fit of several takes left in ``ctx.info["prefit"]``."""
    r = ctx.result
    job = prepare_fit(ctx)
    inp, bcfg, body = job.inputs, job.config, job.body
    device = torch.device(bcfg.device)
    kernels = "fused" if use_fused_kernels(bcfg.kernels, device) else "torch"
    out = ctx.info.pop("prefit", None)
    if out is None:
        bar = None
        if ctx.info.get("progress"):
            bar = tqdm(total=fit_progress_total([job]), desc="fit", unit="it", leave=False, mininterval=1.0)
        out = fit_take(body, inp, bcfg, progress=bar.update if bar is not None else None)
        if bar is not None:
            bar.close()
    r.attrs["fit_device"] = str(device)  # provenance: where and on which operators the fit ran
    r.attrs["fit_kernels"] = kernels
    verdict = judge_fit(r, out, inp, body, ctx.config)
    out, valid, shift = verdict.out, verdict.valid, verdict.shift
    M = len(out.transl)
    J = out.joints.copy()
    J[~valid] = np.nan
    nanv = np.where(valid[:, None], 1.0, np.nan)
    r.put(
        "smplx",
        {
            "global_orient": out.global_orient * nanv,
            "body_pose": out.body_pose.reshape(M, 63) * nanv,
            "betas": out.betas,
            "transl": out.transl * nanv,
        },
        body_model=json.dumps(body.identity),
    )
    rows = coco_rows(body)
    r.put("joints", {"coco17": J[:, rows], "smplx": J[:, :55]})
    r.arrays["time_s"] = r["grid/time_s"]
    r.arrays["valid"] = valid
    r.put("flags", verdict.flags)
    views_dropped = int(dropped_views(inp.weights, out.obs_weight).sum())
    views_weighted = int(weighted_views(inp.weights).sum())
    seen = np.where(valid[:, None], out.reproj_px, np.nan)
    n_seen = np.isfinite(seen).sum(axis=0)
    per_view = np.where(n_seen > 0, np.nansum(seen, axis=0) / np.maximum(n_seen, 1), np.nan)  # NaN: never valid
    r.put("reprojection", {"px": out.reproj_px, "per_view_px": per_view}, losses=json.dumps(out.losses))
    r.put(
        "fit",
        {
            "obs_weight": out.obs_weight.astype(np.float32),
            "joint_support": verdict.support.joint,
            "joint_trusted": verdict.trusted,
            "supporting_views": verdict.support.n_views.astype(np.int16),
            "coco17_all": out.joints[:, rows].astype(np.float32),
            "landmark_offset_m": coco_landmark_offsets(body, out.kp_delta),
            "world_shift_m": shift,
            **verdict.cameras,
        },
        camera_distance_m=verdict.camera_distance_m,
        second_pass_px=bcfg.second_pass_px,
        second_pass_sigmas=bcfg.second_pass_sigmas,
        second_pass_dropped=int(out.n_dropped),
        second_pass_views_dropped=views_dropped,
        views_weighted=views_weighted,
        cameras_refined=out.camera_refinement is not None,
    )
    used = int((inp.weights > 0).sum())
    ref = out.camera_refinement
    ctx.info["fit"] = (
        f"on {device} ({kernels} operators); {valid.mean():.1%} of frames valid; "
        f"reprojection {np.nanmedian(out.reproj_px):.1f} px "
        f"(median); second pass dropped {out.n_dropped} of {used} observations "
        f"({views_dropped} whole views); "
        + (
            f"cameras moved {np.round(ref.rotation_deg, 2).tolist()} deg, "
            f"{np.round(ref.translation_m * 100, 1).tolist()} cm; "
            if ref is not None
            else ""
        )
        + f"world moved toward the Aria trajectory by {np.linalg.norm(shift) * 1000:.0f} mm; "
        + f"betas {np.round(out.betas[:3], 2).tolist()}..."
    )


@dataclass
class FitVerdict:
    """What the fit stage concludes from a fit (docs/result_file.md, "Which frames and joints to trust"):
    ``out`` the fit moved onto the Aria trajectory by ``shift (3,)`` (world metres), ``cameras`` the
    cameras it used, moved with it (``fit/T_cam_world`` and the refinement's sizes),
    ``camera_distance_m`` the median camera distance, ``support`` the views and joints its observations
    support, ``valid (M,)`` the frames it stands for, ``trusted (M, 17)`` the COCO-17 landmarks it
    trusts and ``flags`` the quality flags (name -> ``(M,)`` bool)."""

    out: FitOutput
    shift: np.ndarray
    cameras: dict
    camera_distance_m: float
    support: ObservationSupport
    valid: np.ndarray
    trusted: np.ndarray
    flags: dict


def judge_fit(r: TakeResult, out: FitOutput, inp: FitInputs, body: BodyModel, config: PipelineConfig) -> FitVerdict:
    """The validity, trust and flags of the take's fit ``out`` (made from ``inp``) under ``config.trust``,
    with its world moved onto the Aria trajectory; reads the association and the Aria from ``r``. Neither
    changes the fit: a fit may be judged again under other trust rules."""
    fps, trust = config.fps, config.trust
    support = observation_support(out.obs_weight, r["association/confidence"], trust)
    n_views = support.n_views
    valid = valid_frames(n_views, fps, trust, support.n_seeing, positions=out.joints[:, 0])
    cameras = _camera_arrays(out.camera_refinement, inp.T_cam_world)
    centers = invert_transform(cameras["T_cam_world"])[:, :3, 3]  # (V, 3) the cameras the fit used
    shift, distance = _world_shift(r, out, centers, valid, support.cameras, config)
    out = dataclasses.replace(out, transl=out.transl + shift, joints=out.joints + shift)
    cameras["T_cam_world"] = shifted_cameras(cameras["T_cam_world"], shift)
    # the Aria knows where the head is: a fitted head far from it is not the wearer's body there
    head = r["aria/position_at_sample"]  # (M, 3) at the samples' own times, as the fit models them
    eye_anchor_m = eye_anchor_distance(out.joints, head, FACE_KEYPOINTS)  # (M,), NaN where unknown
    rows = coco_rows(body)
    landmarks = out.joints[:, rows]  # (M, 17, 3) the fitted COCO-17 landmarks, world metres
    twisted = neck_twisted(landmarks, trust.max_neck_twist_deg)  # (M,) a head turned as no neck turns it
    valid = valid & ~eyes_off_anchor(eye_anchor_m, trust.max_eye_anchor_m) & ~twisted
    head_turn_m = head_turn_residual(out.joints, rows, r["aria/rotation_at_sample"])  # (M,) the face vs the Aria's turn
    held = head_held_by_aria(eye_anchor_m, head_turn_m, trust) & ~twisted  # (M,) head where the Aria has it
    valid = aria_held_gaps(valid, held, out.joints[:, 0], fps, trust)
    face_off = eyes_off_anchor(eye_anchor_m, trust.max_face_anchor_m)  # a head turned wrong
    pair_sine = view_pair_sine(support.views, landmarks, centers + shift, fps, trust)  # (M, 17)
    trusted = joint_trusted(support.joint, valid, fps, trust, face_off, held, pair_sine)
    swapped = np.where(weighted_views(out.obs_weight), swapped_pair_count(r["association/swap"]), 0)  # (M, V)
    flags = quality_flags(out.joints, valid, n_views, fps, eye_anchor_m, out.reproj_px, trusted,
                          trust.max_eye_anchor_m, swapped, twisted)  # fmt: skip
    return FitVerdict(out, shift, cameras, distance, support, valid, trusted, flags)


def _world_shift(r: TakeResult, out: FitOutput, centers: np.ndarray, valid: np.ndarray, supporting: np.ndarray,
                 cfg: PipelineConfig) -> tuple[np.ndarray, float]:  # fmt: skip
    """The shift ``(3,)`` that moves the fitted world onto the Aria trajectory, and the median distance of
    the cameras (``centers (V, 3)``, world metres) to the body where they support (``supporting (M, V)``) a
    valid frame (``body.world_anchor``)."""
    distance = camera_distance_m(centers, out.joints[:, 0], supporting & valid[:, None])
    head = r["aria/position_at_sample"]
    usable = valid & np.isfinite(head).all(-1)
    shift = aria_world_shift(eye_midpoint(out.joints, FACE_KEYPOINTS), head, usable, distance,
                             cfg.world_anchor)  # fmt: skip
    return shift, distance


def _camera_arrays(ref: CameraRefinement | None, calibrated: np.ndarray) -> dict:
    """``fit/T_cam_world`` (the cameras the fit used) and the size of their correction."""
    if ref is None:
        return {"T_cam_world": calibrated}
    return {
        "T_cam_world": ref.T_cam_world,
        "camera_rotation_deg": ref.rotation_deg,
        "camera_translation_m": ref.translation_m,
        "camera_residual_px": np.stack([ref.residual_px_before, ref.residual_px_after], 1),
    }


def stage_motion(ctx: StageContext) -> None:
    r = ctx.result
    trusted = r["fit/joint_trusted"] if "fit/joint_trusted" in r.arrays else None
    d = derive_motion(r["joints/smplx"], r["smplx/global_orient"], r["valid"].astype(bool), ctx.config.fps,
                      motion_id=ctx.take.uid, joint_trusted=trusted)  # fmt: skip
    groups = d.to_result_arrays(len(r["valid"]))
    for g, arrays in groups.items():
        r.put(g, arrays, **(d.feature_attrs() if g == "features" else {}))
    n_ev = event_counts(d)[1]  # QA-eligible events
    ctx.info["motion"] = (
        f"{len(d.runs)} run(s); {n_ev} QA-eligible events; {sum(len(f) for f in d.features)} x 263 features"
        + (f" (resampled from {d.source_fps:g} to {FEATURE_FPS:g} fps)" if d.source_fps != FEATURE_FPS else "")
    )


def stage_evaluate(ctx: StageContext) -> None:
    r = ctx.result
    ann = ctx.take.body_annotation("annotation")
    fit = fit_samples(r)
    cov = video_time_coverage(fit.time_s, fit.valid, ctx.take.n_frames, ctx.config.fps)
    if ann is None or len(ann.frames) == 0:
        r.put("eval", {"coverage_video_time": cov.mean()}, annotated=False)
        ctx.info["evaluate"] = f"no manual annotation; coverage {cov.mean():.1%} of the video timeline"
        return
    cfg = EvalConfig()
    m = match_to_annotation(fit, ann.frames, ann.joints3d, ann.num_views, cfg, ctx.config.fps)
    sc = score_take(ctx.take.uid, m, cfg, None, cov)
    row = sc.row()
    r.put(
        "eval",
        {
            "pa_mpjpe_mm": row["pa_mpjpe"] if row["pa_mpjpe"] is not None else np.nan,
            "mpjpe_world_mm": row["mpjpe_world"] if row["mpjpe_world"] is not None else np.nan,
            "frames_scored": row["frames_scored"],
            "coverage_video_time": row["coverage_video_time"],
            "per_joint_mm": sc.per_joint,
        },
        annotated=True,
    )
    ctx.info["evaluate"] = (
        (
            f"PA-MPJPE {row['pa_mpjpe']:.1f} mm, MPJPE {row['mpjpe_world']:.1f} mm on "
            f"{row['frames_scored']} annotated frames (uncorrected)"
        )
        if row["pa_mpjpe"] is not None
        else "annotations present but no frame could be scored"
    )


STAGES: dict[str, tuple[Callable[[StageContext], None], tuple[str, ...]]] = {
    "load": (stage_load, ("cameras", "grid")),
    "anchor": (stage_anchor, ("aria",)),
    "detect": (stage_detect, ("detections",)),
    "keypoints": (stage_keypoints, ("keypoints",)),
    "associate": (stage_associate, ("association",)),
    "triangulate": (stage_triangulate, ("triangulation",)),
    "fit": (stage_fit, ("smplx", "joints", "flags", "reprojection", "fit", "time_s", "valid")),
    "motion": (stage_motion, ("trajectory", "codes", "features")),
    "evaluate": (stage_evaluate, ("eval",)),
}
