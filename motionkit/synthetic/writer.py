"""Write complete synthetic datasets in the exact Ego-Exo4D layout, with ground truth.

Layout written under ``root`` (docs/synthetic.md; the Ego-Exo4D layout plus motionkit's own two folders)::

    takes.json  captures.json
    captures/<capture>/timesync.csv
    takes/<take>/trajectory/{gopro_calibs.csv, closed_loop_trajectory.csv}
    annotations/splits.json
    annotations/ego_pose/<split>/body/annotation/<uid>.json
    annotations/ego_pose/<split>/camera_pose/<uid>.json
    observations/<uid>.h5      simulated detector + 2D keypoint output (observation cache format)
    gt/<uid>.h5                ground truth, never read by the pipeline

Ground truth file (``gt/<uid>.h5``): attributes ``camera_names`` (JSON), ``fps`` (30), ``floor_z``,
``body_model`` (JSON identity), ``config`` (JSON); groups ``wearer`` and ``bystander_<k>`` each with
``smplx/{betas (10,), global_orient (F, 3), body_pose (F, 63), transl (F, 3)}`` (axis-angle, world
z up, 30 fps), ``coco17_world (F, 17, 3)``, ``joints_smplx (F, 55, 3)``, ``boxes (F, V, 4)`` (NaN
when not visible), ``visible (F, V)``; ``wearer/T_world_cpf (F, 4, 4)``; and ``detections/person_id``
``(N,)`` (0 wearer, k bystander k, -1 false positive), ``detections/lr_swapped (N,)`` and
``detections/outlier (N, 17)``, aligned with the rows of the observation cache.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import h5py
import numpy as np
import torch
from scipy.interpolate import CubicSpline
from scipy.spatial.transform import Rotation, RotationSpline
from tqdm import tqdm

from motionkit.body.mesh import PosedMesh
from motionkit.body.model import BodyModel
from motionkit.body.model_file import BodyModelFile, load_model_file
from motionkit.common.files import atomic_path, write_json_atomic, write_text_atomic
from motionkit.conventions import COCO17_NAMES, COCO17_OFFSET_PARENT, SMPLX_TO_COCO17, TAKE_FPS, eye_midpoint
from motionkit.data.aria import cad_T_device_cpf
from motionkit.data.egoexo4d import GOPRO_CALIB_COLUMNS, TRAJECTORY_COLUMNS
from motionkit.data.observations import Observations, write_observations
from motionkit.geometry.camera import Camera, CameraRig
from motionkit.geometry.rotations import invert_transform, make_transform, matrix_to_quat_xyzw
from motionkit.geometry.undistort import pinhole_project, undistorted_new_K
from motionkit.synthetic.motion import (
    BASIC_ACTIVITIES,
    CONTROL_HZ,
    EXTENDED_ACTIVITIES,
    follower_controls,
    simulate_body,
    wearer_controls,
)
from motionkit.synthetic.presets import PRESET_NAMES, PRESETS
from motionkit.synthetic.releases import RELEASE_FORMATS, write_releases
from motionkit.synthetic.scenarios import OCCLUDER_COLUMNS, Scenario, place_occluders, scenario, take_scenario
from motionkit.synthetic.scene import (
    FITTABLE_LANDMARKS,
    OBS_MISSED,
    DetectorNoise,
    make_gopro_rig,
    person_views,
    simulate_detections,
)
from motionkit.synthetic.subject import landmark_offsets, landmarks, subject_model
from motionkit.synthetic.video import render_take_videos

UID_NAMESPACE = uuid.UUID("6f1f4c56-3c1e-4b47-9a55-5d1f8e7c2a10")
T_CPF_RGB = make_transform(np.diag([-1.0, -1.0, 1.0]), np.array([0.056, 0.007121, 0.012883]))
ARIA_STREAMS = ("214-1", "1201-1", "1201-2", "211-1")


# the numeric knobs of ``SynthConfig`` and their closed ranges (``motionkit synth``'s options take theirs
# from here): numbers of things at least 0 (cameras 1), noise and error scales non-negative, rates (per
# joint, detection or camera-frame) at most 1, the detector noise's lag-1 correlation below 1 (1 would be
# a constant error with no variance left)
_RATES = ("outlier_rate", "swap_rate", "limb_swap_rate", "miss_rate", "false_positive_rate")
_SCALES = ("kp_noise_px", "kp_noise_frac", "conf_error_coupling", "annotation_noise_m", "calib_rot_deg",
           "calib_trans_m", "calib_focal_frac", "aria_jitter_m", "aria_drift_m", "bystander_min_dist_m",
           "companion_near_m")  # fmt: skip
KNOB_RANGES: dict[str, tuple[float, float]] = {
    "bystanders": (0, np.inf),
    "cameras": (1, np.inf),
    "swap_mean_frames": (1, np.inf),
    "kp_noise_ar1": (0, 0.999),
    "video_scale": (0.05, 1),
    **{k: (0, 1) for k in _RATES},
    **{k: (0, np.inf) for k in _SCALES},
}


@dataclass
class SynthConfig:
    """Options of ``motionkit synth``. ``preset`` (``clean`` | ``realistic`` | ``hard``, see
    docs/synthetic.md) sets every knob left at None; any knob given explicitly wins."""

    takes: int = 1
    seed: int = 0
    duration: float = 20.0  # seconds of take video
    preset: str = "realistic"
    scenario: str = "generic"  # synthetic.scenarios.SCENARIOS: the scene and activities, with the preset's errors
    bystanders: int | None = None
    cameras: int | None = None
    vertical_camera: bool = False  # mount one camera in portrait (2160 x 3840)
    nan_timesync: bool | None = None  # blank some Aria timestamps in timesync.csv (short and long gaps)
    extra_camera: str = "auto"  # "auto" (by take), "bad" (quality 0 row), "missing" (no calib row), "none"
    annotation_offset: list | None = None  # (17, 3) metres in each joint's parent frame, added to annotation3D
    # the detector (see scene.DetectorNoise)
    kp_noise_px: float | None = None
    kp_noise_frac: float | None = None
    kp_noise_ar1: float | None = None
    outlier_rate: float | None = None
    swap_rate: float | None = None
    limb_swap_rate: float | None = None
    swap_mean_frames: float | None = None
    miss_rate: float | None = None
    false_positive_rate: float | None = None
    conf_error_coupling: float | None = None
    self_occlusion: bool | None = None
    # the people and the annotations
    subject_model: bool | None = None  # people made with a body model that differs from the fitter's
    landmarks: bool | None = None  # keypoints and annotation3D on surface landmarks, not joint centres
    annotation_noise_m: float | None = None  # per-axis noise of annotation3D
    # calibration and Aria errors
    calib_rot_deg: float | None = None
    calib_trans_m: float | None = None
    calib_focal_frac: float | None = None
    aria_jitter_m: float | None = None
    aria_drift_m: float | None = None
    # scene
    bystander_min_dist_m: float | None = None
    companion_near_m: float | None = None
    motions: str | None = None  # "basic" | "extended"
    far_camera: bool | None = None  # one camera 9-12 m away
    body_model: str | None = None  # path of an SMPL-X file; default: the synthetic model
    take_name_prefix: str = "synth"
    # videos (motionkit.synthetic.video): rendered exo MP4s with a frame-index stamp
    videos: bool = False
    video_scale: float = 0.25  # full-size videos at this fraction of the calibration resolution
    video_markers: bool = False  # draw the COCO-17 landmarks as coloured dots (deterministic test detectors)
    releases: tuple = ()  # other methods' releases written from the truth (synthetic.releases.RELEASE_FORMATS)
    split_pattern: tuple = field(default=("val", "train", "train"))

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; presets: {', '.join(PRESET_NAMES)}")
        if not (self.takes >= 1 and self.seed >= 0 and self.duration > 0):  # numpy's generators take no negative seed
            raise ValueError(f"synthetic takes need takes >= 1, seed >= 0, duration > 0; got takes={self.takes}, "
                             f"seed={self.seed}, duration={self.duration}")  # fmt: skip
        sc = scenario(self.scenario)
        for k in ("cameras", "companion_near_m"):  # the scenario's scene wins over the preset's
            if getattr(self, k) is None and getattr(sc, k) is not None:
                setattr(self, k, getattr(sc, k))
        for k, v in PRESETS[self.preset].items():
            if k == "bystanders" and sc.bystanders is not None:
                continue  # None: drawn per take in the scenario's range
            if getattr(self, k) is None:
                setattr(self, k, v)
        if self.kp_noise_frac is None and not self.kp_noise_px:
            raise ValueError("set kp_noise_px or kp_noise_frac")
        for name, (low, high) in KNOB_RANGES.items():  # a sign typo would draw a world no preset describes
            value = getattr(self, name)
            if value is not None and not (low <= value <= high):
                raise ValueError(f"synthetic world knob {name} must lie in [{low}, {high}], got {value}")

    def detector_noise(self) -> DetectorNoise:
        """The detector knobs of this config (same names, but ``kp_noise_ar1`` -> ``ar1``)."""
        names = {f.name: f.name for f in fields(DetectorNoise)} | {"ar1": "kp_noise_ar1"}
        return DetectorNoise(**{k: getattr(self, src) for k, src in names.items()})


def perturb_calibration(
    rig: CameraRig, rng: np.random.Generator, cfg: SynthConfig, scene_point: np.ndarray
) -> CameraRig:
    """The rig as a calibration would report it. Like the errors of a structure-from-motion
    calibration, position and orientation errors are correlated: each camera is moved by
    ~``calib_trans_m`` and turned so that ``scene_point (3,)`` (the middle of the scene) stays on the
    same pixel, then rotated by ~``calib_rot_deg`` about a random axis; its focal lengths are off by
    ~``calib_focal_frac`` and its principal point by ~1 px per 0.1 % of focal error."""
    cams = []
    for c in rig:
        T = c.T_world_cam.copy()
        moved = T[:3, 3] + rng.normal(0, cfg.calib_trans_m / np.sqrt(3), 3)
        before, after = scene_point - T[:3, 3], scene_point - moved
        keep_view, _ = Rotation.align_vectors(
            after[None] / np.linalg.norm(after), before[None] / np.linalg.norm(before)
        )
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        turn = Rotation.from_rotvec(axis * np.deg2rad(cfg.calib_rot_deg) * rng.normal(1.0, 0.3))
        T[:3, :3] = (turn * keep_view).as_matrix() @ T[:3, :3]
        T[:3, 3] = moved
        params = c.params.copy()
        params[:2] *= 1 + rng.normal(0, cfg.calib_focal_frac)
        params[2:4] += rng.normal(0, cfg.calib_focal_frac * 1000, 2)
        cams.append(Camera(c.name, c.width, c.height, params, T, dict(c.meta)))
    return CameraRig(cams)


def take_uid_for(seed: int, index: int) -> str:
    return str(uuid.uuid5(UID_NAMESPACE, f"motionkit-synth-{seed}-{index}"))


def _cam_rows(rig: CameraRig, qualities: dict[str, int]) -> str:
    lines = [",".join(GOPRO_CALIB_COLUMNS)]
    for c in rig:
        q = matrix_to_quat_xyzw(c.T_world_cam[:3, :3])
        t = c.T_world_cam[:3, 3]
        vals = [
            c.name,
            "graph0",
            *[f"{v:.9f}" for v in t],
            *[f"{v:.12f}" for v in q],
            str(c.width),
            str(c.height),
            "KANNALABRANDTK3",
            *[f"{v:.9f}" for v in c.params],
            "-1",
            "-1",
            str(qualities.get(c.name, 1)),
        ]
        lines.append(",".join(vals))
    return "\n".join(lines) + "\n"


def write_trajectory_csv(path: Path, t_us: np.ndarray, T_world_device: np.ndarray) -> None:
    """A ``closed_loop_trajectory.csv`` with device poses ``T_world_device (N, 4, 4)`` at ``t_us (N,)``
    (velocities by finite differences), written atomically."""
    R = T_world_device[:, :3, :3]
    p = T_world_device[:, :3, 3]
    q = matrix_to_quat_xyzw(R)
    dt = np.gradient(t_us.astype(np.float64) * 1e-6)
    v_world = np.gradient(p, axis=0) / dt[:, None]
    v_dev = np.einsum("nji,nj->ni", R, v_world)
    rel = Rotation.from_matrix(np.einsum("nji,njk->nik", R[:-1], R[1:])).as_rotvec() / dt[:-1, None]
    w_dev = np.vstack([rel, rel[-1:]])
    n = len(t_us)
    data = np.column_stack([t_us, np.full(n, -1), p, q, v_dev, w_dev, np.tile([0.0, 0.0, -9.81], (n, 1)), np.ones(n)])
    fmt = "graph0,%d,%d," + ",".join(["%.9f"] * 3 + ["%.12f"] * 4 + ["%.6f"] * 6 + ["%.3f"] * 3 + ["%.3f"])
    with atomic_path(path) as tmp, open(tmp, "w") as fh:
        fh.write(",".join(TRAJECTORY_COLUMNS) + "\n")
        np.savetxt(fh, data, fmt=fmt)


def _write_h5_group(g: h5py.Group, seq, frames_ctrl: np.ndarray, pv, coco: np.ndarray) -> None:
    s = g.create_group("smplx")
    s["betas"] = seq.betas
    s["global_orient"] = seq.global_orient[frames_ctrl]
    s["body_pose"] = seq.body_pose[frames_ctrl].reshape(len(frames_ctrl), 63)
    s["transl"] = seq.transl[frames_ctrl]
    g["coco17_world"] = coco
    g["joints_smplx"] = seq.joints[frames_ctrl, :55]
    g["boxes"] = np.where(pv.visible[..., None], pv.box, np.nan)
    g["visible"] = pv.visible


@dataclass
class TakeWorld:
    """The scene of one take: the floor height, the centre of the action, the true cameras (``rig``),
    the cameras in the calibration file (``calib_cams``, with their ``qualities``) and in the videos
    (``video_cams``: names), the extra camera (``"none"``, ``"bad"`` or ``"missing"``: ``xcam``) and the
    take's scenario (``scene``, one variant)."""

    floor_z: float
    center: np.ndarray
    rig: CameraRig
    calib_cams: list[Camera]
    video_cams: list[str]
    qualities: dict[str, int]
    extra: str
    xcam: Camera | None
    scene: Scenario


@dataclass
class TakePeople:
    """Everyone's motion on the control grid ``t`` (``CONTROL_HZ``, the take plus ``pad`` s on each
    side); ``frames_ctrl (F,)`` the control samples of the 30 fps take frames; the wearer first. ``body``
    and ``identity``: the model the people are made with (``mesh_model`` its file); ``betas_w`` the
    wearer's shape; ``occluders (K, 7)``: the furniture placed around the wearer's start
    (``scenarios.OCCLUDER_COLUMNS``)."""

    t: np.ndarray
    pad: float
    frames_ctrl: np.ndarray
    body: BodyModel
    mesh_model: BodyModelFile
    identity: dict
    betas_w: np.ndarray
    people: list
    occluders: np.ndarray


@dataclass
class TakeViews:
    """What the cameras see at the take frames: each person's joints and detector landmarks, their
    visibility per view (``views``), the simulated detections (``det``) and the calibration the
    dataset carries (``calib_of``: camera name -> calibrated camera)."""

    joints_people: list[np.ndarray]
    coco_people: list[np.ndarray]
    views: list
    det: object
    calib_of: dict[str, Camera]


@dataclass
class AriaTrack:
    """The Aria glasses: timesync rows (``start`` is the row of take frame -1, ``row_ts`` their device
    times in ns), the trajectory samples ``t_us`` with ``T_world_device``, and the wearer's CPF on the
    control grid (``T_world_cpf_ctrl``)."""

    start: int
    n_rows: int
    row_ts: np.ndarray
    t_us: np.ndarray
    T_world_device: np.ndarray
    T_world_cpf_ctrl: np.ndarray


def _make_world(rng: np.random.Generator, cfg: SynthConfig, index: int) -> TakeWorld:
    floor_z = rng.uniform(-1.6, -1.0)
    center = rng.uniform(-3, 3, 2)
    sc = take_scenario(cfg.scenario, np.random.default_rng([cfg.seed, index, 7]))
    ring = {"radius_m": sc.camera_radius_m, "height_m": sc.camera_height_m, "aim_spread_m": sc.aim_spread_m}
    rig = make_gopro_rig(
        rng,
        center,
        floor_z,
        cfg.cameras,
        vertical=(0 if cfg.vertical_camera else None),
        far=(cfg.cameras - 1 if cfg.far_camera else None),
        **ring,
    )
    extra = cfg.extra_camera
    if extra == "auto":
        extra = ("none", "bad", "missing")[index % 3]
    all_cams = list(rig)
    qualities = {c.name: 1 for c in all_cams}
    calib_cams = list(all_cams)
    video_cams = [c.name for c in all_cams]
    xcam = None
    if extra in ("bad", "missing"):
        xr = make_gopro_rig(rng, center, floor_z, 1, **ring)[0]
        xcam = Camera(f"cam{len(all_cams) + 1:02d}", xr.width, xr.height, xr.params, xr.T_world_cam)
        video_cams.append(xcam.name)
        if extra == "bad":
            calib_cams.append(xcam)
            qualities[xcam.name] = 0
    return TakeWorld(floor_z, center, rig, calib_cams, video_cams, qualities, extra, xcam, sc)


def _bystander_target(rng: np.random.Generator, k: int, cfg: SynthConfig, t: np.ndarray, wc, rig: CameraRig):
    """Where bystander ``k`` heads at control sample ``i``: a companion (even ``k``) stays near the wearer,
    at 0.8-1.3 m, walking around them; a crosser (odd ``k``) walks across the line between the wearer
    and a camera, then on to another."""
    n_ctrl = len(t)
    if k % 2 == 0:
        r0 = rng.uniform(cfg.companion_near_m, max(1.3, cfg.companion_near_m))
        w0, ph = rng.choice([-1, 1]) * rng.uniform(0.4, 0.8), rng.uniform(0, 2 * np.pi)

        def companion(i, pos):
            a = ph + w0 * t[i]
            return wc.xy[i] + r0 * np.array([np.cos(a), np.sin(a)])

        return companion
    cams_xy = np.array([c.center[:2] for c in rig])
    plan_every = int(3.0 * CONTROL_HZ)
    n_plans = n_ctrl // plan_every + 2
    picks = rng.integers(0, len(rig), n_plans)
    fracs = rng.uniform(0.3, 0.6, n_plans)
    sides = rng.choice([-1.0, 1.0], n_plans)

    def crosser(i, pos):
        j = i // plan_every
        w = wc.xy[min(j * plan_every, n_ctrl - 1)]
        c = cams_xy[picks[j]]
        d = (c - w) / max(np.linalg.norm(c - w), 1e-6)
        on_line = w + fracs[j] * (c - w)
        # first half of the plan: stand off to one side; second half: cross to the other side
        side = sides[j] if (i % plan_every) < plan_every // 2 else -sides[j]
        return on_line + side * 1.2 * np.array([-d[1], d[0]])

    return crosser


def _make_people(rng: np.random.Generator, cfg: SynthConfig, index: int, model: BodyModelFile, world: TakeWorld,
                 n_frames: int) -> TakePeople:  # fmt: skip
    pad = 0.5
    n_ctrl = int(round((cfg.duration + 2 * pad) * CONTROL_HZ)) + 1
    t = -pad + np.arange(n_ctrl) / CONTROL_HZ
    frames_ctrl = int(round(pad * CONTROL_HZ)) + np.arange(n_frames) * int(CONTROL_HZ / TAKE_FPS)
    if cfg.subject_model:
        mesh_model, identity = subject_model(model, np.random.default_rng([cfg.seed, index, 1]))
    else:
        mesh_model, identity = model, model.identity
    body = BodyModel(mesh_model, dtype=torch.float64)
    betas_w = np.clip(rng.normal(0, 1.0, 10), -2.5, 2.5)
    sc = world.scene
    activities = sc.activities or (EXTENDED_ACTIVITIES if cfg.motions == "extended" else BASIC_ACTIVITIES)
    wc = wearer_controls(rng, t, world.center, sc.area_radius_m, activities, posture=sc.posture)
    people = [simulate_body(body, betas_w, wc, world.floor_z)]
    scene_rng = np.random.default_rng([cfg.seed, index, 6])
    n_bystanders = (
        cfg.bystanders
        if cfg.bystanders is not None
        else int(scene_rng.integers(sc.bystanders[0], sc.bystanders[1] + 1))
    )
    occluders = place_occluders(sc, scene_rng, wc.xy[frames_ctrl[0]], wc.heading[frames_ctrl[0]], world.floor_z)
    for k in range(n_bystanders):
        tgt = _bystander_target(rng, k, cfg, t, wc, world.rig)
        bc = follower_controls(rng, t, tgt, wc.xy, min_dist=cfg.bystander_min_dist_m, boxes=occluders)
        people.append(simulate_body(body, np.clip(rng.normal(0, 1.0, 10), -2.5, 2.5), bc, world.floor_z))
    return TakePeople(t, pad, frames_ctrl, body, mesh_model, identity, betas_w, people, occluders)


def people_meshes(tp: TakePeople) -> list[PosedMesh]:
    """Everyone's body mesh at the take frames (the wearer first)."""
    return [PosedMesh(tp.mesh_model, p.betas, p.joints[tp.frames_ctrl, :55].astype(np.float64),
                      p.global_rotations[tp.frames_ctrl].astype(np.float64)) for p in tp.people]  # fmt: skip


def _observe(rng: np.random.Generator, cfg: SynthConfig, index: int, world: TakeWorld, tp: TakePeople) -> TakeViews:
    joints_people = [p.joints[tp.frames_ctrl] for p in tp.people]
    if cfg.landmarks:  # what detectors and annotators mark: surface landmarks of each person
        lm_rng = np.random.default_rng([cfg.seed, index, 2])
        coco_people = [
            landmarks(jp, p.global_rotations[tp.frames_ctrl].astype(np.float64), landmark_offsets(lm_rng))
            for jp, p in zip(joints_people, tp.people, strict=True)
        ]
    else:
        coco_people = [jp[:, SMPLX_TO_COCO17] for jp in joints_people]
    views = person_views(
        world.rig, joints_people, coco_people, self_occlusion=cfg.self_occlusion, occluders=tp.occluders
    )
    det = simulate_detections(rng, world.rig, views, cfg.detector_noise())
    scene_point = np.array([world.center[0], world.center[1], world.floor_z + 1.0])
    calib_rig = perturb_calibration(world.rig, np.random.default_rng([cfg.seed, index, 3]), cfg, scene_point)
    return TakeViews(joints_people, coco_people, views, det, {c.name: c for c in calib_rig})


def _aria_track(rng: np.random.Generator, cfg: SynthConfig, index: int, tp: TakePeople, n_frames: int) -> AriaTrack:
    """The CPF rigid on the head (between the eyes), the device = the left SLAM camera at the CAD offset."""
    body = tp.body
    with torch.no_grad():
        rest = body(
            torch.as_tensor(tp.betas_w, dtype=body.J_template.dtype),
            torch.eye(3, dtype=body.J_template.dtype),
            torch.eye(3, dtype=body.J_template.dtype).expand(21, 3, 3),
        ).numpy()
    eyes_mid = eye_midpoint(rest, tuple(body.vertex_keypoint_names))
    T_head_cpf = make_transform(np.eye(3), eyes_mid - rest[15] + np.array([0.0, 0.0, -0.015]))
    T_world_cpf_ctrl = tp.people[0].T_world_head @ T_head_cpf
    T_cpf_device = invert_transform(cad_T_device_cpf("DVT-S"))

    start = int(rng.integers(30, 90))
    n_rows = start + n_frames + 1 + int(rng.integers(20, 60))
    t0_ns = int(rng.integers(10, 50)) * 10**12 + int(rng.integers(0, 10**9))
    row_ts = t0_ns + np.round(np.arange(n_rows) * 1e9 / TAKE_FPS).astype(np.int64)
    ts_frame0 = row_ts[start + 1]  # default offset convention +1
    pad = tp.pad
    t_us = np.arange(
        int((ts_frame0 - pad * 1e9) // 1000) + 1, int((ts_frame0 + (cfg.duration + pad - 0.01) * 1e9) // 1000), 1000
    )
    tau = (t_us * 1000 - ts_frame0) / 1e9
    pos = CubicSpline(tp.t, T_world_cpf_ctrl[:, :3, 3])(tau)
    aria_rng = np.random.default_rng([cfg.seed, index, 4])
    if cfg.aria_drift_m:  # slow drift of the SLAM trajectory: a few cm over the take
        freq = aria_rng.uniform(0.5, 1.5, 3) / max(cfg.duration, 1.0)
        phase = aria_rng.uniform(0, 2 * np.pi, 3)
        pos = pos + cfg.aria_drift_m * np.sin(2 * np.pi * freq * tau[:, None] + phase) / np.sqrt(3)
    if cfg.aria_jitter_m:
        pos = pos + aria_rng.normal(0, cfg.aria_jitter_m / np.sqrt(3), pos.shape)
    rot = RotationSpline(tp.t, Rotation.from_matrix(T_world_cpf_ctrl[:, :3, :3]))(tau).as_matrix()
    T_world_device = make_transform(rot, pos) @ T_cpf_device
    return AriaTrack(start, n_rows, row_ts, t_us, T_world_device, T_world_cpf_ctrl)


def _write_timesync(path: Path, video_cams: list[str], aria: AriaTrack, nan_timesync: bool) -> None:
    """``timesync.csv``: one row per 30 fps tick, the GoPros' frame numbers and pts, the Aria streams'
    frame numbers and capture times (the RGB stream with blanked cells where ``nan_timesync``)."""
    n_rows, start, row_ts = aria.n_rows, aria.start, aria.row_ts
    cols, data = [], []
    for cname in video_cams:
        cols += [f"{cname}_frame_number", f"{cname}_pts"]
        data += [
            np.arange(n_rows).astype(str),
            np.round(np.arange(n_rows) * 1001 / 30000 * 1e6).astype(np.int64).astype(str),
        ]
    aria_ts = row_ts.astype(str).astype(object)
    if nan_timesync:
        aria_ts[start + 1 + 40] = ""  # a 1-row gap: interpolated
        aria_ts[start + 1 + 60 : start + 1 + 63] = ""  # a 3-row gap: interpolated
        aria_ts[start + 1 + 90 : start + 1 + 98] = ""  # an 8-row gap: no Aria pose
    for s in ARIA_STREAMS:
        cols += [f"aria01_{s}_frame_number", f"aria01_{s}_capture_timestamp_ns"]
        data += [np.arange(n_rows).astype(str), aria_ts if s == "214-1" else row_ts.astype(str)]
    lines = [",".join(cols)] + [",".join(r) for r in zip(*data, strict=True)]
    write_text_atomic(path, "\n".join(lines) + "\n")


def _write_annotations(rng: np.random.Generator, root: Path, split: str, uid: str, name: str, cfg: SynthConfig,
                       index: int, world: TakeWorld, tp: TakePeople, tv: TakeViews, aria: AriaTrack,
                       n_frames: int) -> None:  # fmt: skip
    """The manual body annotations (sparse ~10 Hz keys starting late; a joint only where >= 2 views see
    it, ``annotation2D`` in the calibration's undistorted cameras) and the ``camera_pose`` file."""
    coco_w, wv = tv.coco_people[0], tv.views[0]
    ann_rng = np.random.default_rng([cfg.seed, index, 5])
    ann3d = (
        coco_w + ann_rng.normal(0, cfg.annotation_noise_m, coco_w.shape) if cfg.annotation_noise_m else coco_w.copy()
    )
    if cfg.annotation_offset is not None:
        off = np.asarray(cfg.annotation_offset, dtype=np.float64).reshape(17, 3)
        GR = tp.people[0].global_rotations[tp.frames_ctrl][:, COCO17_OFFSET_PARENT]  # (F, 17, 3, 3)
        ann3d = ann3d + np.einsum("fjab,jb->fja", GR, off)
    n_views = wv.kp_ok.sum(1)  # (F, 17)
    keys = np.arange(3 * int(rng.integers(2, 8)), n_frames, 3)
    ann_cams = [tv.calib_of.get(c.name, c) for c in world.rig]  # annotations live in the calibration's cameras
    new_K = {c.name: undistorted_new_K(c) for c in ann_cams}
    ann = {}
    for k in keys:
        present = (n_views[k] >= 2) & (rng.random(17) > 0.02)
        a3 = {
            COCO17_NAMES[j]: {
                "x": float(ann3d[k, j, 0]),
                "y": float(ann3d[k, j, 1]),
                "z": float(ann3d[k, j, 2]),
                "num_views_for_3d": int(n_views[k, j]),
            }
            for j in np.flatnonzero(present)
        }
        a2 = {}
        for v, c in enumerate(ann_cams):
            uv = pinhole_project(c.world_to_cam(ann3d[k]), new_K[c.name])
            pts = {
                COCO17_NAMES[j]: {
                    "x": float(uv[j, 0]),
                    "y": float(uv[j, 1]),
                    "placement": "manual" if rng.random() < 0.9 else "auto",
                }
                for j in np.flatnonzero(wv.kp_ok[k, v] & present)
            }
            if pts:
                a2[c.name] = pts
        if a3 or a2:
            ann[str(int(k))] = [{"annotation3D": a3, "annotation2D": a2}]
    ann_dir = root / "annotations" / "ego_pose" / split
    write_json_atomic(ann_dir / "body" / "annotation" / f"{uid}.json", ann)

    cp = {"metadata": {"take_name": name, "take_uid": uid}}
    for c in ann_cams:
        cp[c.name] = {
            "camera_intrinsics": new_K[c.name].tolist(),
            "camera_extrinsics": c.T_cam_world[:3].tolist(),
            "distortion_coeffs": c.D.tolist(),
        }
    T_world_rgb = aria.T_world_cpf_ctrl[tp.frames_ctrl] @ T_CPF_RGB
    cp["aria01"] = {
        "camera_intrinsics": [[150.0, 0.0, 255.5], [0.0, 150.0, 255.5], [0.0, 0.0, 1.0]],
        "camera_extrinsics": {str(int(k)): invert_transform(T_world_rgb[k])[:3].tolist() for k in keys},
    }
    write_json_atomic(ann_dir / "camera_pose" / f"{uid}.json", cp)


def _write_gt(path: Path, cfg: SynthConfig, model: BodyModelFile, world: TakeWorld, tp: TakePeople, tv: TakeViews,
              aria: AriaTrack, n_frames: int) -> None:  # fmt: skip
    """``gt/<uid>.h5``: every person's truth, the wearer's CPF and the kind of each observation, the true
    cameras and the detections' provenance (docs/synthetic.md)."""
    all_cams, det, wearer = list(world.rig), tv.det, tp.people[0]
    with atomic_path(path, suffix=".h5") as tmp, h5py.File(tmp, "w") as f:
        f.attrs["camera_names"] = json.dumps([c.name for c in all_cams])
        f.attrs["fps"] = TAKE_FPS
        f.attrs["floor_z"] = world.floor_z
        f.attrs["body_model"] = json.dumps(model.identity)  # the model the pipeline fits with
        f.attrs["subject_model"] = json.dumps(tp.identity, default=float)  # the model the people are made with
        f.attrs["config"] = json.dumps(asdict(cfg))
        f.attrs["activities"] = json.dumps(wearer.labels)
        f.attrs["preset"] = cfg.preset
        f.attrs["scenario"] = world.scene.name
        f.attrs["scenario_variant"] = json.dumps(asdict(world.scene), default=list)
        names_json = json.dumps([c.name for c in all_cams])
        for p, (seq, pv) in enumerate(zip(tp.people, tv.views, strict=True)):
            g = f.create_group("wearer" if p == 0 else f"bystander_{p}")
            _write_h5_group(g, seq, tp.frames_ctrl, pv, tv.coco_people[p])
            g.attrs["camera_names"] = names_json
        f["wearer/joints_world"] = wearer.joints[tp.frames_ctrl, :55]
        f["wearer/T_world_cpf"] = aria.T_world_cpf_ctrl[tp.frames_ctrl]
        seen = tv.views[0].kp_ok  # (F, V, 17) landmark in frame and unoccluded
        f["wearer/landmark_views"] = seen.sum(1).astype(np.int16)
        f["wearer/fittable_views"] = (seen.sum(-1) >= FITTABLE_LANDMARKS).sum(-1).astype(np.int16)
        rule = f"cameras with >= {FITTABLE_LANDMARKS} of 17 landmarks unoccluded in frame"
        f["wearer/fittable_views"].attrs["rule"] = rule
        occ = f.create_dataset("scene/occluders", data=np.asarray(tp.occluders, np.float64).reshape(-1, 7))
        occ.attrs["columns"] = json.dumps(OCCLUDER_COLUMNS)
        occ.attrs["frame"] = "world, z up, metres; boxes turned by yaw about z (columns)"
        kind = np.full((n_frames, len(all_cams), 17), OBS_MISSED, np.int8)
        mine = det.person_id == 0
        kind[det.frame_index[mine], det.camera[mine]] = det.obs_kind[mine]
        f["wearer/obs_kind"] = kind
        cg = f.create_group("cameras")
        cg["T_world_cam"] = np.stack([c.T_world_cam for c in all_cams])
        cg["params"] = np.stack([c.params for c in all_cams])
        cg.attrs["camera_names"] = names_json
        cg.attrs["note"] = "the true cameras that rendered the keypoints (gopro_calibs.csv holds a calibration of them)"
        f["wearer/annotation3d_offset"] = (
            np.zeros((17, 3))
            if cfg.annotation_offset is None
            else np.asarray(cfg.annotation_offset, dtype=np.float64).reshape(17, 3)
        )
        d = f.create_group("detections")
        d["person_id"] = det.person_id
        d["lr_swapped"] = det.lr_swapped
        d["outlier"] = det.outlier


def _takes_entry(uid: str, name: str, capture: str, split: str, world: TakeWorld, aria: AriaTrack,
                 n_frames: int) -> dict:  # fmt: skip
    """The take's entry in ``takes.json``, as the release writes it."""
    video_cams = world.video_cams
    return {
        "take_uid": uid,
        "take_name": name,
        "root_dir": f"takes/{name}",
        "capture_uid": str(uuid.uuid5(UID_NAMESPACE, capture)),
        "capture": {
            "capture_name": capture,
            "root_dir": f"captures/{capture}",
            "cameras": [
                {"cam_id": c, "is_ego": False, "device_type": "hero10", "relative_path": f"{c}.mp4"} for c in video_cams
            ]
            + [{"cam_id": "aria01", "is_ego": True, "device_type": "aria"}],
        },
        "timesync_start_idx": aria.start,
        "timesync_end_idx": aria.start + n_frames + 1,
        "duration_sec": n_frames / TAKE_FPS,
        "task_name": "Synthetic Walkabout" if world.scene.name == "generic" else f"Synthetic {world.scene.task}",
        "parent_task_name": "Synthetic" if world.scene.name == "generic" else world.scene.task,
        "best_exo": world.rig[0].name,
        "validated": True,
        "is_dropped": False,
        "has_trimmed_trajectory": True,
        "has_trimmed_vrs": True,
        "frame_aligned_videos": {
            c: {
                "0": {
                    "cam_id": c,
                    "stream_id": "0",
                    "readable_stream_id": "0",
                    "clip_uid": None,
                    "is_collage": False,
                    "relative_path": f"frame_aligned_videos/{c}.mp4",
                }
            }
            for c in video_cams
        },
        "motionkit_synthetic": True,
        "split": split,
    }


def make_take_scene(cfg: SynthConfig, index: int, model: BodyModelFile, n_frames: int,
                    rng: np.random.Generator | None = None) -> tuple[TakeWorld, TakePeople, TakeViews]:  # fmt: skip
    """The world, people and views of take ``index``, without writing anything: the first sections of
    ``generate_take``, drawn from the take's stream ``rng`` (default: a new one, as ``generate_take``
    starts it)."""
    rng = rng if rng is not None else np.random.default_rng([cfg.seed, index])
    world = _make_world(rng, cfg, index)
    tp = _make_people(rng, cfg, index, model, world, n_frames)
    return world, tp, _observe(rng, cfg, index, world, tp)


def generate_take(root: Path, cfg: SynthConfig, index: int, model: BodyModelFile) -> dict:
    """Generate one take under ``root`` and return its ``takes.json`` entry. ``model``: the body model
    the pipeline fits with; the people are made with it (``clean``) or with a subject model derived
    from it (``cfg.subject_model``). One random stream (``rng``) drives the sections in order; the
    sections with streams of their own (subject, landmarks, calibration, Aria noise, annotation noise)
    can change without moving the others."""
    if cfg.annotation_offset is not None and np.asarray(cfg.annotation_offset, dtype=float).shape != (17, 3):
        raise ValueError("annotation_offset must be a (17, 3) array of metres")
    rng = np.random.default_rng([cfg.seed, index])
    uid = take_uid_for(cfg.seed, index)
    split = cfg.split_pattern[index % len(cfg.split_pattern)]
    n_frames = int(round(cfg.duration * TAKE_FPS))
    if n_frames < 2:
        raise ValueError("duration must give at least 2 frames")
    world, tp, tv = make_take_scene(cfg, index, model, n_frames, rng)
    scene_word = "" if world.scene.name == "generic" else f"{world.scene.tag or world.scene.name}_"
    name = f"{cfg.take_name_prefix}_{scene_word}{cfg.seed}_{index:03d}"  # real names tell the scenario too
    capture = f"{name}_capture"
    aria = _aria_track(rng, cfg, index, tp, n_frames)

    take_dir = root / "takes" / name
    cap_dir = root / "captures" / capture
    (take_dir / "trajectory").mkdir(parents=True, exist_ok=True)
    cap_dir.mkdir(parents=True, exist_ok=True)
    calib_file_cams = [tv.calib_of.get(c.name, c) for c in world.calib_cams]
    write_text_atomic(take_dir / "trajectory" / "gopro_calibs.csv",
                      _cam_rows(CameraRig(calib_file_cams), world.qualities))  # fmt: skip
    write_trajectory_csv(take_dir / "trajectory" / "closed_loop_trajectory.csv", aria.t_us, aria.T_world_device)
    _write_timesync(cap_dir / "timesync.csv", world.video_cams, aria, cfg.nan_timesync)
    _write_annotations(rng, root, split, uid, name, cfg, index, world, tp, tv, aria, n_frames)
    det = tv.det
    obs = Observations([c.name for c in world.rig], det.frame_index, det.camera, det.box, det.score, det.keypoints,
                       det.keypoint_conf, np.arange(n_frames, dtype=np.int32))  # fmt: skip
    write_observations(
        root / "observations" / f"{uid}.h5", obs, take_uid=uid, detector="synthetic", keypoint_model="synthetic"
    )
    if cfg.videos:
        truth = {c.name: c for c in world.rig}
        if world.xcam is not None:
            truth[world.xcam.name] = world.xcam
        markers = tv.coco_people if cfg.video_markers else None
        render_take_videos(take_dir, [truth[c] for c in world.video_cams], people_meshes(tp), scale=cfg.video_scale,
                           seed=cfg.seed, markers=markers, occluders=tp.occluders)  # fmt: skip
    _write_gt(root / "gt" / f"{uid}.h5", cfg, model, world, tp, tv, aria, n_frames)
    return _takes_entry(uid, name, capture, split, world, aria, n_frames)


def write_synthetic_dataset(root, cfg: SynthConfig | None = None, progress: bool = False,
                            take_configs: Sequence[SynthConfig] | None = None) -> list[str]:  # fmt: skip
    """Write ``cfg.takes`` synthetic takes under ``root``; returns their take uids (deterministic per seed).

    ``take_configs``: one config per take instead (take ``i`` is made with ``take_configs[i]`` and index
    ``i``: a dataset of mixed durations, scenarios or presets; ``cfg`` then gives only the releases and the
    body model). Every take's ``gt`` file records the config it was made with."""
    cfg = cfg or SynthConfig()
    bad = set(cfg.releases) - set(RELEASE_FORMATS)
    if bad:
        raise ValueError(f"unknown releases {sorted(bad)}; choose from {', '.join(RELEASE_FORMATS)}")
    configs = list(take_configs) if take_configs is not None else [cfg] * cfg.takes
    if any(c.body_model != cfg.body_model for c in configs):
        raise ValueError("every take config must use the dataset's body model")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    mf = load_model_file(cfg.body_model)
    entries = []
    it = range(len(configs))
    if progress:
        it = tqdm(it, desc="synth takes", unit="take")
    for i in it:
        entries.append(generate_take(root, configs[i], i, mf))
    splits = {e["take_uid"]: e.pop("split") for e in entries}
    write_json_atomic(root / "takes.json", entries, indent=1)
    write_json_atomic(
        root / "captures.json",
        [{"capture_name": e["capture"]["capture_name"], "capture_uid": e["capture_uid"]} for e in entries],
    )
    by_split: dict[str, list[str]] = {}
    for u, s in splits.items():
        by_split.setdefault(s, []).append(u)
    write_json_atomic(
        root / "annotations" / "splits.json",
        {
            "take_uid_to_split": splits,
            "split_to_take_uids": by_split,
            "take_uid_to_benchmark": {u: ["ego_pose"] for u in splits},
            "ds": "motionkit-synthetic",
        },
    )
    write_json_atomic(
        root / "motionkit_synthetic.json",
        {
            "config": asdict(cfg) if take_configs is None else [asdict(c) for c in configs],
            "body_model": mf.identity,
            "note": "synthetic dataset generated by motionkit synth",
        },  # fmt: skip
    )
    if cfg.releases:
        write_releases(root, tuple(cfg.releases), cfg.seed)
    return list(splits)
