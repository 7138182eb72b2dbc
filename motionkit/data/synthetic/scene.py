"""Synthetic GoPro rigs, visibility, and simulated detector output for synthetic takes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motionkit.conventions import COCO17_FLIP, SMPLX_TO_COCO17
from motionkit.geometry.camera import Camera, CameraRig, look_at

VISIBLE_FRACTION = (
    0.3  # a person counts as visible (and is detected) with >= 30 % of COCO joints unoccluded in the image
)
GOPRO_K = np.array([0.036902, 0.057131, -0.057154, 0.018458])  # representative GoPro KB3 (cameras.md)


def make_gopro_rig(
    rng: np.random.Generator, center: np.ndarray, floor_z: float, n_cameras: int = 4, vertical: int | None = None
) -> CameraRig:
    """Static GoPros on a ring of 2.5-5 m radius, 1-2 m above the floor, looking at the scene.

    ``vertical``: index of a camera mounted in portrait (2160 x 3840), or None.
    """
    cams = []
    phase = rng.uniform(0, 2 * np.pi)
    for i in range(n_cameras):
        ang = phase + 2 * np.pi * i / n_cameras + rng.uniform(-0.3, 0.3)
        r = rng.uniform(2.5, 5.0)
        c = np.array([center[0] + r * np.cos(ang), center[1] + r * np.sin(ang), floor_z + rng.uniform(1.0, 2.0)])
        tgt = np.array([center[0], center[1], floor_z + 0.9]) + np.r_[rng.uniform(-0.4, 0.4, 2), 0.0]
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


def person_views(rig: CameraRig, joints_people: list[np.ndarray]) -> list[PersonViews]:
    """Project every person (``(F, 76, 3)`` joints + vertex keypoints) into every view, with mutual
    occlusion (a closer person's core box hides joints behind it)."""
    proj = []
    for jp in joints_people:
        uv, ok = rig.project(jp, return_valid=True)  # (F, V, 76, 2)
        pc = np.stack([jp @ c.T_cam_world[:3, :3].T + c.T_cam_world[:3, 3] for c in rig], axis=1)  # (F,V,76,3)
        proj.append((uv, ok, pc))
    sizes = rig.sizes
    out = []
    boxes = []
    for uv, ok, _pc in proj:
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
    for p, (uv, ok, pc) in enumerate(proj):
        kp = uv[:, :, SMPLX_TO_COCO17]
        kok = ok[:, :, SMPLX_TO_COCO17]
        W, H = sizes[:, 0][None, :, None], sizes[:, 1][None, :, None]
        inimg = kok & (kp[..., 0] >= 0) & (kp[..., 0] <= W - 1) & (kp[..., 1] >= 0) & (kp[..., 1] <= H - 1)
        depth_kp = pc[:, :, SMPLX_TO_COCO17, 2]
        occluded = np.zeros_like(inimg)
        for q, (_, _, pcq) in enumerate(proj):
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
        kp_ok = inimg & ~occluded
        frac = kp_ok.mean(-1)
        depth = pc[:, :, 0, 2]
        visible = (frac >= VISIBLE_FRACTION) & (depth > 0.3)
        box = boxes[p]
        box = np.where(np.isfinite(box).all(-1, keepdims=True) & (depth[..., None] > 0.3), box, np.nan)
        out.append(PersonViews(kp, kp_ok, inimg, box, visible, frac, depth))
    return out


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


def simulate_detections(
    rng: np.random.Generator,
    rig: CameraRig,
    views: list[PersonViews],
    *,
    kp_noise_px: float = 3.0,
    outlier_rate: float = 0.03,
    swap_rate: float = 0.015,
    miss_rate: float = 0.002,
    false_positive_rate: float = 0.03,
) -> SimulatedDetections:
    """Detector + 2D pose output per camera and 30 fps frame: boxes for every visible person, misses,
    false positives, and COCO-17 keypoints in raw fisheye pixels with Gaussian noise, gross outliers,
    left/right swaps, truncation at the border and occlusion dropouts."""
    F, V = views[0].visible.shape
    rows = []
    for pid, pv in enumerate(views):
        detected = pv.visible & (rng.random((F, V)) > miss_rate)
        f_idx, v_idx = np.nonzero(detected)
        n = len(f_idx)
        if n == 0:
            continue
        box = pv.box[f_idx, v_idx]
        bw, bh = box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]
        box = box + rng.normal(0, 1, (n, 4)) * 0.015 * np.stack([bw, bh, bw, bh], 1)
        kp = pv.kp[f_idx, v_idx] + rng.normal(0, kp_noise_px, (n, 17, 2))
        conf = rng.uniform(0.7, 0.98, (n, 17))
        ok = pv.kp_ok[f_idx, v_idx]
        inimg = pv.in_image[f_idx, v_idx]
        occl = inimg & ~ok
        # occluded joints: half are dropped, half are guessed badly with low confidence
        drop = occl & (rng.random((n, 17)) < 0.5)
        guess = occl & ~drop
        kp[guess] += rng.normal(0, 25.0, (guess.sum(), 2))
        conf[guess] = rng.uniform(0.1, 0.5, guess.sum())
        outl = ok & (rng.random((n, 17)) < outlier_rate)
        ang = rng.uniform(0, 2 * np.pi, outl.sum())
        mag = rng.uniform(80, 300, outl.sum())
        kp[outl] += np.stack([np.cos(ang), np.sin(ang)], -1) * mag[:, None]
        conf[outl] = rng.uniform(0.3, 0.9, outl.sum())
        missing = ~inimg | drop
        kp[missing] = np.nan
        conf[missing] = 0.0
        swap = rng.random(n) < swap_rate
        kp[swap] = kp[swap][:, COCO17_FLIP]
        conf[swap] = conf[swap][:, COCO17_FLIP]
        outl[swap] = outl[swap][:, COCO17_FLIP]
        score = np.clip(0.55 + 0.4 * pv.vis_frac[f_idx, v_idx] + rng.normal(0, 0.03, n), 0.3, 0.99)
        rows.append((f_idx, v_idx, box, score, kp, conf, np.full(n, pid), swap, outl))
    # false positives: random person-sized boxes with junk keypoints
    n_fp = rng.poisson(false_positive_rate * F * V)
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
    )
