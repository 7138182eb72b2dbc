"""Synthetic GoPro rigs, visibility, and simulated detector output for synthetic takes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.signal import lfilter

from motionkit.conventions import COCO17_FLIP, SMPLX_TO_COCO17
from motionkit.geometry.camera import Camera, CameraRig, look_at
from motionkit.geometry.fisheye import kb3_project_np
from motionkit.synthetic.scenarios import segment_hits_boxes

VISIBLE_FRACTION = (
    0.3  # a person counts as visible (and is detected) with >= 30 % of COCO joints unoccluded in the image
)
FITTABLE_LANDMARKS = 8  # a view can support a fit of the wearer with >= 8 of the 17 landmarks unoccluded in frame
GOPRO_K = np.array([0.036902, 0.057131, -0.057154, 0.018458])  # representative GoPro KB3 coefficients


def make_gopro_rig(
    rng: np.random.Generator,
    center: np.ndarray,
    floor_z: float,
    n_cameras: int = 4,
    vertical: int | None = None,
    far: int | None = None,
    radius_m: tuple[float, float] = (2.5, 5.0),
    height_m: tuple[float, float] = (1.0, 2.0),
    aim_spread_m: float = 0.4,
) -> CameraRig:
    """Static GoPros on a ring of ``radius_m`` (2.5-5 m) around ``center``, ``height_m`` (1-2 m) above
    the floor, each aimed at a point within ``aim_spread_m`` of the scene's middle, 0.9 m up.

    ``vertical``: index of a camera mounted in portrait (2160 x 3840), or None; ``far``: index of a
    camera placed 9-12 m away instead, or None.
    """
    cams = []
    phase = rng.uniform(0, 2 * np.pi)
    for i in range(n_cameras):
        ang = phase + 2 * np.pi * i / n_cameras + rng.uniform(-0.3, 0.3)
        r = rng.uniform(*radius_m)
        if far == i:
            r = rng.uniform(9.0, 12.0)
        c = np.array([center[0] + r * np.cos(ang), center[1] + r * np.sin(ang), floor_z + rng.uniform(*height_m)])
        tgt = np.array([center[0], center[1], floor_z + 0.9]) + np.r_[rng.uniform(-aim_spread_m, aim_spread_m, 2), 0.0]
        portrait = vertical == i
        T = look_at(c, tgt, roll=(np.pi / 2 if portrait else 0.0) + np.deg2rad(rng.uniform(-3, 3)))
        f = rng.uniform(1700.0, 1820.0)
        w, h = (2160, 3840) if portrait else (3840, 2160)
        params = np.r_[
            f,
            f * (1 + rng.normal(0, 5e-4)),
            w / 2 + rng.normal(0, 8),
            h / 2 + rng.normal(0, 8),
            GOPRO_K + rng.normal(0, 0.004, 4),
        ]
        cams.append(Camera(f"cam{i + 1:02d}", w, h, params, T))
    return CameraRig(cams)


@dataclass
class PersonViews:
    """Per person, camera and frame: projected COCO-17 ``kp (F, V, 17, 2)``, ``kp_ok (F, V, 17)`` (in
    image and unoccluded), ``box (F, V, 4)``, ``visible (F, V)``, ``vis_frac (F, V)``, ``depth (F, V)``."""

    kp: np.ndarray
    kp_ok: np.ndarray
    in_image: np.ndarray
    box: np.ndarray
    visible: np.ndarray
    vis_frac: np.ndarray
    depth: np.ndarray


def person_views(
    rig: CameraRig,
    joints_people: list[np.ndarray],
    coco_people: list[np.ndarray] | None = None,
    self_occlusion: bool = True,
    occluders: np.ndarray | None = None,
) -> list[PersonViews]:
    """Project every person into every view, with mutual occlusion (a closer person's core box hides
    points behind it), self-occlusion (a limb point well behind the torso, inside its silhouette, an
    ear behind the head, the face turned away, the far eye of a profile: ``_self_occluded``) and the
    scene's furniture (a point whose line of sight crosses an occluder box).

    ``joints_people``: per person ``(F, 76, 3)`` joints + vertex keypoints (boxes, occlusion);
    ``coco_people``: per person ``(F, 17, 3)`` the points a detector marks (default: ``SMPLX_TO_COCO17``
    of the joints); ``occluders``: ``(K, 7)`` world boxes (``scenarios.OCCLUDER_COLUMNS``) or None.
    """
    if coco_people is None:
        coco_people = [jp[:, SMPLX_TO_COCO17] for jp in joints_people]
    params = rig.params[:, None, :]
    proj = []
    for jp, cp in zip(joints_people, coco_people, strict=True):
        pc, kpc = rig.to_camera(jp), rig.to_camera(cp)  # (F, V, 76, 3), (F, V, 17, 3)
        uv, ok = kb3_project_np(pc, params, return_valid=True)
        kp, kok = kb3_project_np(kpc, params, return_valid=True)
        proj.append((uv, ok, pc, kp, kok, kpc))
    sizes = rig.sizes
    out = []
    boxes = []
    for uv, ok, _pc, *_ in proj:
        u = np.where(ok, uv[..., 0], np.nan)
        v = np.where(ok, uv[..., 1], np.nan)
        with np.errstate(all="ignore"):
            x0, x1 = np.nanmin(u, -1), np.nanmax(u, -1)
            y0, y1 = np.nanmin(v, -1), np.nanmax(v, -1)
        hgt = y1 - y0
        wid = x1 - x0
        box = np.stack(
            [x0 - 0.12 * wid - 0.03 * hgt, y0 - 0.09 * hgt, x1 + 0.12 * wid + 0.03 * hgt, y1 + 0.03 * hgt], -1
        )
        W, H = sizes[:, 0][None, :], sizes[:, 1][None, :]
        box = np.stack(
            [
                np.clip(box[..., 0], 0, W - 1),
                np.clip(box[..., 1], 0, H - 1),
                np.clip(box[..., 2], 0, W - 1),
                np.clip(box[..., 3], 0, H - 1),
            ],
            -1,
        )
        boxes.append(box)
    for p, ((uv, _ok, pc, kp, kok, kpc), cp) in enumerate(zip(proj, coco_people, strict=True)):
        W, H = sizes[:, 0][None, :, None], sizes[:, 1][None, :, None]
        inimg = kok & (kp[..., 0] >= 0) & (kp[..., 0] <= W - 1) & (kp[..., 1] >= 0) & (kp[..., 1] <= H - 1)
        depth_kp = kpc[..., 2]
        occluded = np.zeros_like(inimg)
        for q, (_, _, pcq, *_rest) in enumerate(proj):
            if q == p:
                continue
            bq = boxes[q]
            cx0 = bq[..., 0] + 0.15 * (bq[..., 2] - bq[..., 0])
            cx1 = bq[..., 2] - 0.15 * (bq[..., 2] - bq[..., 0])
            dq = pcq[:, :, 0, 2]  # other person's pelvis depth
            inside = (
                (kp[..., 0] > cx0[..., None])
                & (kp[..., 0] < cx1[..., None])
                & (kp[..., 1] > bq[..., 1, None])
                & (kp[..., 1] < bq[..., 3, None])
            )
            occluded |= inside & (dq[..., None] + 0.15 < depth_kp)
        if occluders is not None and len(occluders):
            occluded |= segment_hits_boxes(rig.centers, cp[:, None], occluders)
        self_occluded = _self_occluded(uv, pc, kp, kpc) if self_occlusion else np.zeros_like(inimg)
        kp_ok = inimg & ~occluded & ~self_occluded
        frac = (inimg & ~occluded).mean(-1)
        depth = pc[:, :, 0, 2]
        visible = (frac >= VISIBLE_FRACTION) & (depth > 0.3)
        box = boxes[p]
        box = np.where(np.isfinite(box).all(-1, keepdims=True) & (depth[..., None] > 0.3), box, np.nan)
        out.append(PersonViews(kp, kp_ok, inimg, box, visible, frac, depth))
    return out


FAR_EYE_YAW_DEG = 60.0  # beyond this turn of the face the far eye hides behind the nose bridge
FACE_AWAY_YAW_DEG = 90.0  # beyond this the face is turned away: nose and eyes behind the head


def _self_occluded(uv: np.ndarray, pc: np.ndarray, kp: np.ndarray, kpc: np.ndarray) -> np.ndarray:
    """``(F, V, 17)``: a COCO point (``kp (F, V, 17, 2)`` pixels, ``kpc (F, V, 17, 3)`` camera metres)
    more than 10 cm behind the torso's depth and inside the torso's image silhouette (the quadrilateral
    of shoulders and hips, widened by 15 %), an ear behind the head, the nose and eyes of a face turned
    more than ``FACE_AWAY_YAW_DEG`` from the camera (``face_yaw``) and the far eye of one turned more than
    ``FAR_EYE_YAW_DEG``."""
    torso_ids = [16, 17, 1, 2]  # SMPL-X shoulders and hips
    t_uv = uv[:, :, torso_ids]
    t_depth = pc[:, :, torso_ids, 2].mean(-1)
    lo = np.min(t_uv, axis=2)
    hi = np.max(t_uv, axis=2)
    pad = 0.15 * (hi - lo)
    inside = ((kp >= (lo - pad)[:, :, None]) & (kp <= (hi + pad)[:, :, None])).all(-1)
    depth_kp = kpc[..., 2]
    with np.errstate(invalid="ignore"):
        behind = depth_kp > t_depth[..., None] + 0.10
        head_depth = pc[:, :, 15, 2]
        ear_behind = depth_kp[..., 3:5] > head_depth[..., None] + 0.03
        yaw = face_yaw(kpc)
    occl = inside & behind
    occl[..., 3:5] = ear_behind
    away = np.abs(yaw) > FACE_AWAY_YAW_DEG  # the back of the head to the camera: no nose, no eyes
    occl[..., 0] = away
    occl[..., 1] = away | (yaw < -FAR_EYE_YAW_DEG)  # the left eye is the far one with the camera on the right
    occl[..., 2] = away | (yaw > FAR_EYE_YAW_DEG)
    return occl


def face_yaw(kpc: np.ndarray) -> np.ndarray:
    """``(...)`` degrees: how far the face of the COCO points ``kpc (..., 17, 3)`` (camera metres, camera
    at the origin) is turned from the camera, about the head's vertical axis: 0 facing it, positive
    with the camera on the person's left (the right eye is then the far one), +-180 facing away. The
    head's axes: left from the right ear to the left one, forward from the ears' midpoint to the nose
    (made orthogonal to left); NaN where a point is missing."""
    ears_mid = 0.5 * (kpc[..., 3, :] + kpc[..., 4, :])
    left = kpc[..., 3, :] - kpc[..., 4, :]
    left = left / np.linalg.norm(left, axis=-1, keepdims=True)
    fwd = kpc[..., 0, :] - ears_mid
    fwd = fwd - (fwd * left).sum(-1, keepdims=True) * left
    fwd = fwd / np.linalg.norm(fwd, axis=-1, keepdims=True)
    to_camera = -ears_mid
    return np.degrees(np.arctan2((to_camera * left).sum(-1), (to_camera * fwd).sum(-1)))


@dataclass
class SimulatedDetections:
    """Flat table of simulated detections and, for ground truth only, who each one is."""

    frame_index: np.ndarray  # (N,) int32
    camera: np.ndarray  # (N,) int16
    box: np.ndarray  # (N, 4) float32
    score: np.ndarray  # (N,) float32
    keypoints: np.ndarray  # (N, 17, 2) float32
    keypoint_conf: np.ndarray  # (N, 17) float32
    person_id: np.ndarray  # (N,) int16: 0 wearer, k bystander k, -1 false positive
    lr_swapped: np.ndarray  # (N,) bool
    outlier: np.ndarray  # (N, 17) bool
    obs_kind: np.ndarray  # (N, 17) int8: OBS_CLEAN, OBS_OUTLIER, OBS_SWAPPED, OBS_MISSED, OBS_OCCLUDED


# per-joint noise relative to the median joint: face points are sharp, hips and wrists are not
JOINT_NOISE_SCALE = np.array([0.6, 0.6, 0.6, 0.8, 0.8, 1.0, 1.0, 1.1, 1.1, 1.4, 1.4, 1.7, 1.7, 1.1, 1.1, 1.2, 1.2])
# per-limb left/right swaps: a whole arm, a whole leg, a wrist alone, an ankle alone
LIMB_SWAPS = (((7, 8), (9, 10)), ((13, 14), (15, 16)), ((9, 10),), ((15, 16),))
OBS_CLEAN, OBS_OUTLIER, OBS_SWAPPED, OBS_MISSED, OBS_OCCLUDED = range(5)
# a detection's keypoint confidence: uniform in CONF_RANGE, minus CONF_DROP_PER_SIGMA x coupling per
# unit of the keypoint's error (in its joint's sigma)
CONF_RANGE = (0.7, 0.98)
CONF_DROP_PER_SIGMA = 0.12
GUESS_BOX_FRAC = 0.06  # per axis, of the box height: a hidden keypoint's guess errs by ~10 cm on a person


def expected_squared_error(conf: np.ndarray, coupling: float) -> np.ndarray:
    """``E[(|err| / sigma)^2 | conf]`` of a simulated keypoint (2D Gaussian error, Rayleigh radius) given
    its confidence ``conf (...)`` and the detector's ``conf_error_coupling``: what a weight that knows
    the generator could use (2 where the confidence says nothing)."""
    c = np.asarray(conf, dtype=np.float64)
    if coupling <= 0:
        return np.full(c.shape, 2.0)
    k = CONF_DROP_PER_SIGMA * coupling
    lo = np.maximum((CONF_RANGE[0] - c) / k, 0.0)
    hi = np.maximum((CONF_RANGE[1] - c) / k, lo + 1e-3)
    e_lo, e_hi = np.exp(-(lo**2) / 2), np.exp(-(hi**2) / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = ((lo**2 + 2) * e_lo - (hi**2 + 2) * e_hi) / (e_lo - e_hi)
    return np.where(np.isfinite(mean), mean, lo**2 + 2)


@dataclass(frozen=True)
class DetectorNoise:
    """How simulated 2D detections differ from the true projections.

    ``kp_noise_frac``: per-axis noise of the median joint as a fraction of the person's box height
    (scaled per joint by ``JOINT_NOISE_SCALE``); when None, ``kp_noise_px`` pixels i.i.d. for every
    joint. ``ar1``: lag-1 correlation of the noise over 30 fps frames (AR(1) per person, camera and
    joint). ``outlier_rate``: per joint, gross errors of 80-300 px. ``swap_rate``: whole-body
    left/right flips and ``limb_swap_rate``: one arm (elbow + wrist) or one leg (knee + ankle)
    swapped, both per detection as episodes of ``swap_mean_frames`` frames on average. ``miss_rate``:
    visible people not detected. ``false_positive_rate``: junk boxes per camera-frame.
    ``conf_error_coupling``: how much the confidence drops with the error (0: independent).
    """

    kp_noise_px: float = 3.0
    kp_noise_frac: float | None = None
    ar1: float = 0.0
    outlier_rate: float = 0.03
    swap_rate: float = 0.015
    limb_swap_rate: float = 0.0
    swap_mean_frames: float = 1.0
    miss_rate: float = 0.002
    false_positive_rate: float = 0.03
    conf_error_coupling: float = 0.0


def _ar1_noise(rng: np.random.Generator, shape: tuple[int, ...], rho: float) -> np.ndarray:
    """Unit-variance AR(1) noise along axis 0 of ``shape``."""
    e = rng.normal(size=shape)
    if rho <= 0:
        return e
    e[1:] *= np.sqrt(1 - rho * rho)
    return lfilter([1.0], [1.0, -rho], e, axis=0)


def _episodes(rng: np.random.Generator, F: int, V: int, rate: float, mean_len: float) -> np.ndarray:
    """``(F, V)`` bool: episodes that cover about ``rate`` of the frames, ``mean_len`` frames long on average."""
    if rate <= 0:
        return np.zeros((F, V), bool)
    starts = rng.random((F, V)) < rate / max(mean_len, 1.0)
    out = np.zeros((F, V), bool)
    for f, v in zip(*np.nonzero(starts), strict=True):
        out[f : f + rng.geometric(1.0 / max(mean_len, 1.0)), v] = True
    return out


def simulate_detections(
    rng: np.random.Generator, rig: CameraRig, views: list[PersonViews], noise: DetectorNoise | None = None
) -> SimulatedDetections:
    """Detector + 2D pose output per camera and 30 fps frame: boxes for every visible person, misses,
    false positives, and COCO-17 keypoints in raw fisheye pixels with the errors of ``noise``,
    truncation at the border and occlusion dropouts (half dropped, half guessed with low confidence,
    ``GUESS_BOX_FRAC`` of the box height or 4 sigma off per axis, whichever is more)."""
    nz = noise or DetectorNoise()
    F, V = views[0].visible.shape
    rows = []
    for pid, pv in enumerate(views):
        detected = pv.visible & (rng.random((F, V)) > nz.miss_rate)
        swap_body = _episodes(rng, F, V, nz.swap_rate, nz.swap_mean_frames)
        swap_limb = [_episodes(rng, F, V, nz.limb_swap_rate / len(LIMB_SWAPS), nz.swap_mean_frames) for _ in LIMB_SWAPS]
        unit = _ar1_noise(rng, (F, V, 17, 2), nz.ar1)
        f_idx, v_idx = np.nonzero(detected)
        n = len(f_idx)
        if n == 0:
            continue
        box = pv.box[f_idx, v_idx]
        bw, bh = box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]
        if nz.kp_noise_frac is None:
            sigma = np.full((n, 17), nz.kp_noise_px)
        else:
            sigma = nz.kp_noise_frac * bh[:, None] * JOINT_NOISE_SCALE[None]
        err = unit[f_idx, v_idx] * sigma[..., None]
        box = box + rng.normal(0, 1, (n, 4)) * 0.015 * np.stack([bw, bh, bw, bh], 1)
        kp = pv.kp[f_idx, v_idx] + err
        r = np.linalg.norm(err, axis=-1) / np.maximum(sigma, 1e-9)  # error in units of the joint's sigma
        conf = np.clip(rng.uniform(*CONF_RANGE, (n, 17)) - nz.conf_error_coupling * CONF_DROP_PER_SIGMA * r, 0.05, 0.99)
        ok = pv.kp_ok[f_idx, v_idx]
        inimg = pv.in_image[f_idx, v_idx]
        occl = inimg & ~ok
        drop = occl & (rng.random((n, 17)) < 0.5)
        guess = occl & ~drop
        guess_sigma = np.maximum(GUESS_BOX_FRAC * bh[:, None], 4 * sigma)[guess]  # a share of the person's size
        kp[guess] += rng.normal(0, 1, (guess.sum(), 2)) * guess_sigma[:, None]
        conf[guess] = rng.uniform(0.1, 0.5, guess.sum())
        outl = ok & (rng.random((n, 17)) < nz.outlier_rate)
        ang = rng.uniform(0, 2 * np.pi, outl.sum())
        mag = rng.uniform(80, 300, outl.sum())
        kp[outl] += np.stack([np.cos(ang), np.sin(ang)], -1) * mag[:, None]
        conf[outl] = rng.uniform(0.3, 0.9, outl.sum())
        missing = ~inimg | drop
        kp[missing] = np.nan
        conf[missing] = 0.0
        swapped = np.zeros((n, 17), bool)
        perm = np.tile(np.arange(17), (n, 1))
        for episodes, pairs in zip(swap_limb, LIMB_SWAPS, strict=True):
            on = episodes[f_idx, v_idx]
            for a, b in pairs:
                perm[on, a], perm[on, b] = b, a
                swapped[on, a] = swapped[on, b] = True
        body = swap_body[f_idx, v_idx]
        perm[body] = COCO17_FLIP
        swapped[body] = COCO17_FLIP != np.arange(17)
        rows_i = np.arange(n)[:, None]
        kp, conf, outl = kp[rows_i, perm], conf[rows_i, perm], outl[rows_i, perm]
        missing, occl = missing[rows_i, perm], occl[rows_i, perm]
        kind = np.full((n, 17), OBS_CLEAN, np.int8)
        kind[occl] = OBS_OCCLUDED
        kind[outl] = OBS_OUTLIER
        kind[swapped] = OBS_SWAPPED
        kind[missing] = OBS_MISSED
        score = np.clip(0.55 + 0.4 * pv.vis_frac[f_idx, v_idx] + rng.normal(0, 0.03, n), 0.3, 0.99)
        rows.append((f_idx, v_idx, box, score, kp, conf, np.full(n, pid), swapped.any(-1), outl, kind))
    # false positives: random person-sized boxes with junk keypoints
    n_fp = rng.poisson(nz.false_positive_rate * F * V)
    if n_fp:
        f_idx = rng.integers(0, F, n_fp)
        v_idx = rng.integers(0, V, n_fp)
        W = rig.sizes[v_idx, 0]
        H = rig.sizes[v_idx, 1]
        bh = rng.uniform(0.1, 0.4, n_fp) * H
        bw = bh * rng.uniform(0.3, 0.6, n_fp)
        x0 = rng.uniform(0, 1, n_fp) * (W - bw)
        y0 = rng.uniform(0, 1, n_fp) * (H - bh)
        box = np.stack([x0, y0, x0 + bw, y0 + bh], 1)
        kp = box[:, None, :2] + rng.uniform(0, 1, (n_fp, 17, 2)) * np.stack([bw, bh], 1)[:, None, :]
        conf = rng.uniform(0.05, 0.5, (n_fp, 17))
        rows.append(
            (
                f_idx,
                v_idx,
                box,
                rng.uniform(0.5, 0.7, n_fp),
                kp,
                conf,
                np.full(n_fp, -1),
                np.zeros(n_fp, bool),
                np.zeros((n_fp, 17), bool),
                np.full((n_fp, 17), OBS_OUTLIER, np.int8),
            )
        )
    cat = [np.concatenate(c) for c in zip(*rows, strict=True)]
    order = np.lexsort((cat[1], cat[0]))
    cat = [c[order] for c in cat]
    return SimulatedDetections(
        frame_index=cat[0].astype(np.int32),
        camera=cat[1].astype(np.int16),
        box=cat[2].astype(np.float32),
        score=cat[3].astype(np.float32),
        keypoints=cat[4].astype(np.float32),
        keypoint_conf=cat[5].astype(np.float32),
        person_id=cat[6].astype(np.int16),
        lr_swapped=cat[7].astype(bool),
        outlier=cat[8].astype(bool),
        obs_kind=cat[9].astype(np.int8),
    )
