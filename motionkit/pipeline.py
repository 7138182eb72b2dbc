"""One take, stage by stage: ``run_fit`` is what ``motionkit fit`` (and every batch task) calls.

Stages, in order (``--until`` stops after one):

``load``
    cameras from ``gopro_calibs.csv`` (quality 1 only), the fit time grid. Group ``cameras``:
    ``params (V, 8)``, ``T_world_cam (V, 4, 4)``, ``size (V, 2)``; attrs ``names`` (JSON list) and
    ``status`` (JSON camera -> ``OK`` / reason). Group ``grid``: ``frame_pos (M,)`` (30 fps frame
    position of each fit sample, float), ``frame_index (M,)`` (nearest 30 fps frame), ``time_s (M,)``.
``anchor``
    Aria CPF head anchor at the processed frames. Group ``aria``: ``device_time_ns (M,)``,
    ``position (M, 3)`` world metres, ``rotation (M, 3, 3)``, ``valid (M,)``, ``reason (M,)``.
``detect``
    Person boxes for every processed frame and camera, from the dataset's observation cache
    (synthetic takes), RF-DETR on the videos, or annotation2D. The observations are cached in the
    observation cache format (``path`` attribute of group ``detections``); ``detections/count (V,)``.
``keypoints``
    COCO-17 keypoints for the boxes (RF-DETR keypoint model; the other sources carry them).
``associate``
    The camera wearer in every view (``detect/association.py``). Group ``association``:
    ``frame_index (M,)``, ``box (M, V, 4)`` raw-pixel xyxy (NaN where nothing is selected),
    ``keypoints (M, V, 17, 2)``, ``confidence (M, V, 17)``, ``reason (M, V)``, ``det_index``,
    ``head_to_anchor_px``, ``assoc_conf``, ``n_person_dets``, ``anchor_px``, ``anchor_valid``,
    ``flags (M, V)``, ``tau_px (V,)``; attribute ``camera_names``.
``triangulate``
    Far cameras pruned (median distance to the head anchor > 3x the closest camera's), then the
    selected keypoints triangulated (``geometry/triangulation.py``). Group ``triangulation``:
    ``points (M, 17, 3)``, ``status (M, 17)``, ``n_views (M, 17)``, ``inlier (M, V, 17)``,
    ``residual_px (M, V, 17)``; attribute ``pruned`` (camera -> reason).
``fit``
    One SMPL-X sequence for the take (``body/fitting.py``). Groups ``smplx``: ``global_orient
    (M, 3)``, ``body_pose (M, 63)`` axis-angle, ``betas (10,)``, ``transl (M, 3)`` (world, z up);
    ``joints``: ``coco17 (M, 17, 3)``, ``smplx (M, 55, 3)`` (NaN where not valid); root arrays
    ``time_s (M,)`` (frame index / 30) and ``valid (M,)``; ``flags``: ``FEW_CAMS``, ``FAST_JOINT``,
    ``HIGH_ACCEL``, ``EYE_ARIA_FAR`` (M,) bool; ``reprojection``: ``px (M, V)``, ``per_view_px (V,)``.
``motion``
    Per valid run: the anchored trajectory, spatial-code events and HumanML3D features (groups
    ``trajectory``, ``codes``, ``features``; ``motion/derive.py``).
``evaluate``
    When the take has manual body annotations: PA-MPJPE, MPJPE and coverage (group ``eval``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from motionkit.body.fitting import FACE_KEYPOINTS
from motionkit.body.model import BodyModel
from motionkit.body.model_file import load_model_file
from motionkit.conventions import SMPLX_TO_COCO17, TAKE_FPS, fit_grid_frames, nearest_take_frames
from motionkit.data.aria import DEFAULT_CPF_SOURCE
from motionkit.data.egoexo4d import EgoExoDataset, Take
from motionkit.data.errors import DataError
from motionkit.data.observations import write_observations
from motionkit.data.store import TakeResult, config_hash, provenance, read_result, result_path, write_result
from motionkit.detect.association import select_wearer
from motionkit.detect.frames import exo_video_path
from motionkit.detect.sources import annotation_observations, dataset_observation_path, load_observation_cache
from motionkit.geometry.triangulation import prune_far_cameras, triangulate


@dataclass
class FitConfig:
    """Options of ``motionkit fit`` that change results (their hash decides cache reuse)."""

    fps: float = 20.0
    timesync_offset: int = 1
    body_model: str | None = None
    device: str = "cpu"
    detector: str = "auto"  # auto | observations | annotation | rfdetr
    detector_variant: str = "nano"
    detector_weights: str | None = None
    keypoint_weights: str | None = None
    detector_threshold: float = 0.5
    downscaled_video: bool = False
    fit_iters: tuple[int, int, int] = (100, 200, 150)  # Adam iterations of fitting stages A, B, C

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class StageContext:
    take: Take
    config: FitConfig
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
    ctx.result.put(
        "grid",
        {"frame_pos": pos, "frame_index": nearest_take_frames(pos), "time_s": pos / TAKE_FPS},
        fps=ctx.config.fps,
        n_take_frames=take.n_frames,
    )
    ctx.info["load"] = f"{len(rig)} cameras ({', '.join(rig.names)}), {len(pos)} frames at {ctx.config.fps:g} fps"


def stage_anchor(ctx: StageContext) -> None:
    frames = ctx.result["grid/frame_index"]
    ts, reason = ctx.take.frame_device_ns(frames)
    anchor = ctx.take.trajectory.head_anchor_at(ts)
    reason = np.where((reason == "") & ~anchor.valid, "NO_ARIA_POSE", reason)
    ctx.result.put(
        "aria",
        {
            "device_time_ns": ts,
            "position": anchor.position,
            "rotation": anchor.rotation,
            "valid": anchor.valid,
            "reason": reason.astype(str),
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
            "no detections for this take: no observation cache and "
            "no videos; pass --detector annotation or provide frame_aligned_videos and RF-DETR weights",
        )
    if src not in ("observations", "annotation", "rfdetr"):
        raise ValueError(f"unknown detector {src!r}")
    return src


def _cache_path(ctx: StageContext) -> Path:
    return Path(ctx.info["out_dir"]) / "cache" / f"{ctx.take.uid}.observations.h5"


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
        obs = run_rfdetr(ctx, frames, path)
    ctx.obs = obs
    in_frames = np.isin(obs.frame_index, frames)
    count = np.array(
        [
            int((in_frames & (obs.camera == obs.camera_names.index(n))).sum()) if n in obs.camera_names else 0
            for n in rig.names
        ]
    )
    ctx.result.put("detections", {"count": count}, source=src, path=str(path), camera_names=json.dumps(rig.names))
    ctx.info["detect"] = f"{src}: {int(count.sum())} person detections on {len(frames)} frames x {len(rig)} cameras"


def run_rfdetr(ctx: StageContext, frames: np.ndarray, path: Path):
    """RF-DETR boxes and keypoints on the videos at the processed frames, cached in ``path``."""
    from motionkit.data.observations import observations_from_rows, read_observations
    from motionkit.detect.frames import camera_for_video, read_frames
    from motionkit.detect.rfdetr_backend import RFDETRDetector, RFDETRKeypoints

    cfg = ctx.config
    key = json.dumps(
        [
            cfg.detector_variant,
            cfg.detector_weights,
            cfg.keypoint_weights,
            cfg.detector_threshold,
            cfg.downscaled_video,
            frames.tolist(),
        ]
    )
    if path.is_file():
        cached = read_observations(path)
        if cached.attrs.get("run_key") == key:
            return cached
    det = RFDETRDetector(cfg.detector_variant, cfg.detector_weights, cfg.detector_threshold, cfg.device)
    kps = RFDETRKeypoints(cfg.keypoint_weights, device=cfg.device)
    rows = {k: [] for k in ("frame_index", "camera", "box", "score", "keypoints", "keypoint_conf")}
    rig = ctx.take.rig
    for v, cam in enumerate(rig):
        video = exo_video_path(ctx.take, cam.name, cfg.downscaled_video)
        for idx, batch in read_frames(video, frames):
            h, w = batch[0].shape[:2]
            s = camera_for_video(cam, w, h).width / cam.width
            boxes = det.detect(batch)
            kp = kps.estimate(batch, [b for b, _ in boxes])
            for f, (b, sc), (k, c) in zip(idx, boxes, kp, strict=True):
                for i in range(len(b)):
                    rows["frame_index"].append(f)
                    rows["camera"].append(v)
                    rows["box"].append((b[i] + 0.5) / s - 0.5)
                    rows["score"].append(sc[i])
                    rows["keypoints"].append((k[i] + 0.5) / s - 0.5)
                    rows["keypoint_conf"].append(c[i])
    attrs = {"detector": det.identity, "keypoint_model": kps.identity, "run_key": key}
    obs = observations_from_rows(rig.names, rows, frames, attrs)
    write_observations(path, obs, take_uid=ctx.take.uid)
    return obs


def _observations(ctx: StageContext):
    obs = getattr(ctx, "obs", None)
    if obs is None:  # the detect stage was reused from an earlier run: reload its cache
        obs = load_observation_cache(Path(ctx.result.group_attrs["detections"]["path"]), ctx.take.rig)
        ctx.obs = obs
    return obs


def stage_keypoints(ctx: StageContext) -> None:
    obs = _observations(ctx)
    have = np.isfinite(obs.keypoints[..., 0]).any(-1).mean() if len(obs) else 0.0
    ctx.result.put("keypoints", {}, model=str(obs.attrs.get("keypoint_model", "unknown")), format="coco17")
    ctx.info["keypoints"] = f"{obs.attrs.get('keypoint_model', 'unknown')}: keypoints on {have:.1%} of detections"


def stage_associate(ctx: StageContext) -> None:
    obs = _observations(ctx)
    r = ctx.result
    reason = r["aria/reason"].astype(str)
    a = select_wearer(
        obs, ctx.take.rig, r["grid/frame_index"], r["aria/position"], r["aria/valid"].astype(bool), reason
    )
    r.put("association", a.to_arrays(), camera_names=json.dumps(a.camera_names), floor_z=a.floor_z)
    taus = ", ".join(f"{n} {t:.0f}px" for n, t in zip(a.camera_names, a.tau_px, strict=True))
    ctx.info["associate"] = f"wearer selected in {a.selected.mean():.1%} of camera-frames; tau {taus}"


def stage_triangulate(ctx: StageContext) -> None:
    r = ctx.result
    rig = ctx.take.rig
    anchor = r["aria/position"][r["aria/valid"].astype(bool)]
    prune = prune_far_cameras(rig, anchor) if len(anchor) else None
    kept = np.array([prune is None or n in prune.kept for n in rig.names])
    sel = r["association/det_index"] >= 0
    conf = np.where(sel[..., None] & kept[None, :, None], r["association/confidence"], 0.0)
    tri = triangulate(r["association/keypoints"], conf, rig)
    r.put(
        "triangulation",
        {
            "points": tri.points,
            "status": tri.status,
            "n_views": tri.n_views,
            "inlier": tri.inlier,
            "residual_px": tri.residual_px,
            "camera_kept": kept,
        },
        pruned=json.dumps({} if prune is None else prune.dropped),
    )
    ok = tri.status == 0
    ctx.info["triangulate"] = (
        f"{ok.mean():.1%} of joints triangulated; pruned: "
        f"{', '.join(prune.dropped) if prune and prune.dropped else 'none'}"
    )


def _valid_frames(n_views: np.ndarray, fps: float, max_gap_s: float) -> np.ndarray:
    """Frames seen by >= 2 views, plus gaps of at most ``max_gap_s`` between such frames."""
    seen = n_views >= 2
    valid = seen.copy()
    idx = np.flatnonzero(seen)
    for a, b in zip(idx[:-1], idx[1:], strict=True):
        if b - a > 1 and (b - a - 1) / fps <= max_gap_s:
            valid[a + 1 : b] = True
    return valid


def build_fit_inputs(r: TakeResult, rig, fps: float):
    """``FitInputs`` from a result holding the association and triangulation stages: selected keypoints
    weighted by confidence x association confidence; observations that triangulation rejected
    (outliers, swapped labels) and pruned cameras get no weight."""
    from motionkit.body.fitting import FitInputs

    kept = r["triangulation/camera_kept"].astype(bool)
    sel = (r["association/det_index"] >= 0) & kept[None]
    w = r["association/confidence"] * r["association/assoc_conf"][..., None] * sel[..., None]
    tri_ok = r["triangulation/status"] == 0
    w = np.where(tri_ok[:, None, :] & ~r["triangulation/inlier"].astype(bool), 0.0, w)
    return FitInputs(fps, r["association/keypoints"], w, r["grid/frame_index"], r["triangulation/points"], rig.params,
                     rig.T_cam_world)  # fmt: skip


def stage_fit(ctx: StageContext) -> None:
    from motionkit.body.fitting import FitConfig as BodyFitConfig
    from motionkit.body.fitting import fit_take

    r = ctx.result
    take = ctx.take
    kept = r["triangulation/camera_kept"].astype(bool)
    if kept.sum() < 2:
        raise DataError(take.calibration_path, f"fewer than 2 usable cameras ({int(kept.sum())}): cannot fit")
    sel = (r["association/det_index"] >= 0) & kept[None]
    n_views = sel.sum(1)
    if not (n_views >= 2).any():
        raise DataError(take.take_dir, "no wearer found: no frame has the wearer selected in 2 or more views")
    inp = build_fit_inputs(r, take.rig, ctx.config.fps)
    fps = ctx.config.fps
    bcfg = BodyFitConfig(device=ctx.config.device, iters=tuple(ctx.config.fit_iters))
    body = BodyModel.load(ctx.config.body_model, vertex_keypoints=FACE_KEYPOINTS)
    total = sum(bcfg.iters) * max(1, int(np.ceil(len(inp.keypoints) / (bcfg.window - bcfg.overlap))))
    bar = None
    if ctx.info.get("progress"):
        from tqdm import tqdm

        bar = tqdm(total=total, desc="fit", unit="it", leave=False, mininterval=1.0)
    out = fit_take(body, inp, bcfg, progress=bar.update if bar is not None else None)
    if bar is not None:
        bar.close()
    M = len(out.transl)
    valid = _valid_frames(n_views, fps, bcfg.max_gap_s)
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
    r.put("joints", {"coco17": J[:, SMPLX_TO_COCO17], "smplx": J[:, :55]})
    r.arrays["time_s"] = r["grid/time_s"]
    r.arrays["valid"] = valid
    r.put("flags", quality_flags(out.joints, valid, n_views, fps, r["aria/position"], FACE_KEYPOINTS))
    per_view = np.nanmean(np.where(valid[:, None], out.reproj_px, np.nan), axis=0)
    r.put("reprojection", {"px": out.reproj_px, "per_view_px": per_view}, losses=json.dumps(out.losses))
    ctx.info["fit"] = (
        f"{valid.mean():.1%} of frames valid; reprojection {np.nanmedian(out.reproj_px):.1f} px "
        f"(median); betas {np.round(out.betas[:3], 2).tolist()}..."
    )


def quality_flags(joints, valid, n_views, fps, cpf, names) -> dict[str, np.ndarray]:
    """Per-frame flags (fitting.md section 11), computed on the 22 body joints after 5-tap smoothing."""
    from scipy.ndimage import convolve1d

    from motionkit.body.fitting import eye_midpoint

    k = np.array([0.05, 0.25, 0.4, 0.25, 0.05])
    body = convolve1d(np.nan_to_num(joints[:, :22]), k, axis=0, mode="nearest")
    vel = np.zeros(len(body))
    acc = np.zeros(len(body))
    if len(body) >= 2:
        v = np.linalg.norm(np.diff(body, axis=0), axis=-1).max(-1) * fps
        vel[1:] = v
    if len(body) >= 3:
        a = np.linalg.norm(body[2:] - 2 * body[1:-1] + body[:-2], axis=-1).max(-1) * fps**2
        acc[1:-1] = a
    eyes = eye_midpoint(joints, tuple(names))
    eye_far = np.linalg.norm(eyes - cpf, axis=-1) > 0.30
    return {
        "FEW_CAMS": n_views < 2,
        "FAST_JOINT": valid & (vel > 5.0),
        "HIGH_ACCEL": valid & (acc > 40.0),
        "EYE_ARIA_FAR": valid & np.nan_to_num(eye_far, nan=False).astype(bool),
    }


def stage_motion(ctx: StageContext) -> None:
    from motionkit.motion.derive import derive_motion

    r = ctx.result
    d = derive_motion(
        r["joints/smplx"], r["smplx/global_orient"], r["valid"].astype(bool), ctx.config.fps, motion_id=ctx.take.uid
    )
    for g, arrays in d.to_result_arrays(len(r["valid"])).items():
        r.put(g, arrays)
    n_ev = sum(1 for es in d.events for e in es.events if e.qa_eligible)
    ctx.info["motion"] = (
        f"{len(d.runs)} run(s); {n_ev} QA-eligible events; {sum(len(f) for f in d.features)} x 263 features"
    )


def stage_evaluate(ctx: StageContext) -> None:
    from motionkit.eval.protocol import EvalConfig, match_to_annotation, score_take, video_time_coverage
    from motionkit.eval.run import fit_samples

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
    "fit": (stage_fit, ("smplx", "joints", "flags", "reprojection", "time_s", "valid")),
    "motion": (stage_motion, ("trajectory", "codes", "features")),
    "evaluate": (stage_evaluate, ("eval",)),
}


@dataclass
class FitOutcome:
    path: Path
    result: TakeResult
    timings: dict[str, float]
    info: dict
    reused: list[str]
    plots: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        r = self.result
        return {
            "take_uid": r.attrs["take_uid"],
            "take_name": r.attrs["take_name"],
            "result": str(self.path),
            "status": r.attrs["status"],
            "message": r.attrs.get("message", ""),
            "stages": r.stages,
            "reused_stages": self.reused,
            "frames": int(len(r["grid/time_s"])) if "grid/time_s" in r.arrays else 0,
            "fps": r.config.get("fps"),
            "body_model": r.body_model,
            "seconds_per_stage": {k: round(v, 3) for k, v in self.timings.items()},
            "coverage": float(np.mean(r["valid"])) if "valid" in r.arrays else None,
            "reprojection_px": float(np.nanmedian(r["reprojection/px"])) if "reprojection/px" in r.arrays else None,
            "pa_mpjpe_mm": float(r["eval/pa_mpjpe_mm"]) if "eval/pa_mpjpe_mm" in r.arrays else None,
            "mpjpe_world_mm": float(r["eval/mpjpe_world_mm"]) if "eval/mpjpe_world_mm" in r.arrays else None,
            "plots": self.plots,
            "info": {k: v for k, v in self.info.items() if k not in ("out_dir", "progress")},
        }


def run_fit(
    root: str | Path,
    take_id: str,
    out_dir: str | Path,
    config: FitConfig | None = None,
    *,
    until: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    plot: bool = True,
) -> FitOutcome:
    """Run the stages for one take and write ``<out_dir>/<take_uid>.h5``.

    Stage outputs of an existing result file made with the same config hash are reused. A
    ``DataError`` inside a stage is recorded in the result file (``status = "failed"``) and
    re-raised; an unknown take or dataset raises before anything is written.
    """
    config = config or FitConfig()
    if until is not None and until not in STAGES:
        raise ValueError(f"unknown stage {until!r}; stages: {', '.join(STAGES)}")
    ds = EgoExoDataset(root)
    take = ds.take(take_id)
    take.timesync_offset = config.timesync_offset
    path = result_path(out_dir, take.uid)
    cfg = config.to_dict()
    body = load_model_file(config.body_model)
    result = TakeResult(
        provenance(
            take_uid=take.uid,
            take_name=take.name,
            dataset_root=str(ds.root),
            body_model=body.identity,
            config=cfg,
            timesync_offset=config.timesync_offset,
            cpf_source=DEFAULT_CPF_SOURCE,
        )
    )
    previous = None
    if path.is_file():
        try:
            prev = read_result(path)
            if prev.attrs.get("config_hash") == config_hash(cfg) and prev.attrs.get("status") == "ok":
                previous = prev
        except DataError:
            previous = None
    names = list(STAGES)
    if until is not None:
        names = names[: names.index(until) + 1]
    ctx = StageContext(take, config, result, info={"out_dir": str(out_dir), "progress": progress})
    timings: dict[str, float] = {}
    reused: list[str] = []
    done: list[str] = []
    say = log or (lambda s: None)
    for name in names:
        fn, groups = STAGES[name]
        t0 = time.perf_counter()
        if previous is not None and name in previous.stages:
            for g in groups:
                result.arrays.update({k: v for k, v in previous.arrays.items() if k == g or k.startswith(g + "/")})
                if g in previous.group_attrs:
                    result.group_attrs[g] = dict(previous.group_attrs[g])
            reused.append(name)
            say(f"[{name}] reused from {path.name}")
        else:
            try:
                fn(ctx)
            except DataError as exc:
                result.attrs["status"] = "failed"
                result.attrs["message"] = f"stage {name}: {exc}"
                result.attrs["stages"] = json.dumps(done)
                write_result(path, result)
                raise
            say(f"[{name}] {ctx.info.get(name, 'done')} ({time.perf_counter() - t0:.2f} s)")
        done.append(name)
        timings[name] = time.perf_counter() - t0
    result.attrs["stages"] = json.dumps(done)
    write_result(path, result)
    plots = []
    if "fit" in done and plot:
        from motionkit.viz import plot_fit_views, plot_topdown

        plots = [
            str(plot_fit_views(result, path.with_suffix(".views.png"))),
            str(plot_topdown(result, path.with_suffix(".topdown.png"))),
        ]
    return FitOutcome(path, result, timings, ctx.info, reused, plots)
