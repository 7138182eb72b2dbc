"""The official Ego-Exo4D wearer rule: a cylinder around the Aria head, projected into each view as a
region proposal, and the detection that overlaps it most (docs/pipeline.md, "associate").

A vertical cylinder (radius 0.3 m, 1.5 m tall) hangs from the head position; its surface, sampled on
a deterministic grid (12 angles x 8 heights, plus 4 points on each cap), is projected into the view
and the in-image points' bounding box is the proposal. Proposals smaller than 0.5 % of the image or
with a height/width ratio outside [0.5, 5] are rejected. The detection with the highest IoU (> 0.3)
is the wearer (``CYLINDER_IOU``). Otherwise the proposal box is recorded (``PROPOSAL_ONLY``), never
passed on as a detection: it carries no keypoints. motionkit uses the CPF head anchor as the head
position (the official code takes the midpoint of the two SLAM cameras, a few centimetres away).
"""

from __future__ import annotations

import numpy as np

from motionkit.data.observations import Observations
from motionkit.detect.association import Association, editable_arrays, observation_cells, put_rows
from motionkit.geometry.boxes import box_iou
from motionkit.geometry.camera import CameraRig
from motionkit.geometry.interpolation import fill_gaps_bracket, lerp

RADIUS_M = 0.3
HEIGHT_M = 1.5
MIN_AREA_FRACTION = 0.005
ASPECT_RANGE = (0.5, 5.0)
MIN_IOU = 0.3
MAX_BRIDGED_GAP_S = 1.0  # anchor gaps up to this long are bridged for the cylinder fallback


def cylinder_points(head: np.ndarray) -> np.ndarray:
    """``head (F, 3)`` world (z up) -> ``(F, 104, 3)`` points on the cylinder hanging from it."""
    ang = np.linspace(0, 2 * np.pi, 12, endpoint=False)
    z = np.linspace(-HEIGHT_M, 0.0, 8)
    ring = np.stack([RADIUS_M * np.cos(ang), RADIUS_M * np.sin(ang)], 1)
    side = np.concatenate([np.c_[ring, np.full(12, h)] for h in z])
    cap = np.stack([0.5 * RADIUS_M * np.cos(ang[::3]), 0.5 * RADIUS_M * np.sin(ang[::3])], 1)
    caps = np.concatenate([np.c_[cap, np.full(4, -HEIGHT_M)], np.c_[cap, np.zeros(4)]])
    return head[:, None, :] + np.concatenate([side, caps])[None]


def cylinder_proposals(rig: CameraRig, head: np.ndarray, head_ok: np.ndarray) -> np.ndarray:
    """Proposal boxes ``(F, V, 4)`` raw pixels xyxy (NaN where the head is unknown, the cylinder is
    not in the image, or the proposal is rejected)."""
    uv = rig.project(cylinder_points(np.where(head_ok[:, None], head, 0.0)))  # (F, V, 104, 2)
    inside = rig.in_image(uv)
    u = np.where(inside, uv[..., 0], np.nan)
    v = np.where(inside, uv[..., 1], np.nan)
    box = np.full(uv.shape[:2] + (4,), np.nan)
    any_in = inside.any(-1) & head_ok[:, None]
    box[any_in] = np.stack(
        [np.nanmin(u[any_in], -1), np.nanmin(v[any_in], -1), np.nanmax(u[any_in], -1), np.nanmax(v[any_in], -1)], -1
    )
    w, h = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        area_ok = w * h >= MIN_AREA_FRACTION * (rig.sizes[:, 0] * rig.sizes[:, 1])[None]
        aspect = h / w
        ok = area_ok & (aspect >= ASPECT_RANGE[0]) & (aspect <= ASPECT_RANGE[1])
    return np.where(ok[..., None], box, np.nan)


def bridge_anchor_gaps(head: np.ndarray, head_ok: np.ndarray, fps: float,
                       max_gap_s: float = MAX_BRIDGED_GAP_S) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Head positions ``(F, 3)`` and validity ``(F,)`` with interior gaps of ``head_ok`` no longer than
    ``max_gap_s`` filled by linear interpolation between the valid samples around them (the ends of
    the take are not extrapolated)."""
    head = np.array(head, dtype=np.float64)
    ok = np.asarray(head_ok, bool).copy()
    if ok.all() or not ok.any():
        return head, ok
    b = fill_gaps_bracket(ok)  # span: frames between the valid samples around a gap (its length + 1)
    fill = ~ok & b.inside & ((b.span - 1) / fps <= max_gap_s)
    head[fill] = lerp(head[ok], b)[fill]
    return head, ok | fill


def apply_cylinder_rule(assoc: Association, obs: Observations, rig: CameraRig, head: np.ndarray,
                        head_ok: np.ndarray, where: np.ndarray | None = None) -> Association:  # fmt: skip
    """``assoc`` with the camera-frames in ``where (F, V)`` (default: all) decided by the cylinder rule.

    ``head (F, 3)`` world head positions at ``assoc.frame_index``, ``head_ok (F,)``. Selected entries get
    reason ``CYLINDER_IOU`` and the IoU as association confidence; unmatched proposals ``PROPOSAL_ONLY``
    (box only, no keypoints, not selected); camera-frames without a proposal ``NO_PROPOSAL``.
    """
    F, V = assoc.det_index.shape
    where = np.ones((F, V), bool) if where is None else where
    prop = cylinder_proposals(rig, head, head_ok)
    fi, vi = observation_cells(assoc.frame_index, obs, rig)
    rows = np.flatnonzero((fi >= 0) & (vi >= 0))
    rows = rows[where[fi[rows], vi[rows]] & np.isfinite(prop[fi[rows], vi[rows]]).all(-1)]
    iou = box_iou(obs.box[rows], prop[fi[rows], vi[rows]])
    best = np.full((F, V), -1)
    best_iou = np.zeros((F, V))
    for r, f, v, x in zip(rows, fi[rows], vi[rows], iou, strict=True):  # detections of the chosen camera-frames
        if x > best_iou[f, v]:
            best[f, v], best_iou[f, v] = r, x
    out = editable_arrays(assoc)
    has_prop = where & np.isfinite(prop).all(-1)
    chosen = where & (best >= 0) & (best_iou > MIN_IOU)
    only = has_prop & ~chosen
    for k, fill in (("box", np.nan), ("score", 0.0), ("keypoints", np.nan), ("confidence", 0.0), ("assoc_conf", 0.0)):
        out[k][where] = fill
    out["det_index"][where] = -1
    out["reason"][where & ~has_prop] = "NO_PROPOSAL"
    put_rows(out, obs, chosen, best[chosen], best_iou[chosen], "CYLINDER_IOU")
    out["box"][only] = prop[only]
    out["reason"][only] = "PROPOSAL_ONLY"
    return Association(**{**assoc.__dict__, **out})
