"""Select the camera wearer in every exo view: the SOMA rule (docs/pipeline.md, "associate").

Per camera: the Aria head anchor is projected with KB3; the detection whose head lies nearest the
wearer's (``head_distances``: each face keypoint against where the Aria pose puts the wearer's) is
selected, tracked by IoU, and re-detected when the tracked box drifts farther than the camera's
threshold ``tau_c = clamp(2.5 x median head distance, 60, 250)`` px. When no detection is plausible,
nothing is selected and a reason code says why. Never "any person".

motionkit adds one gate the paper leaves open (a documented heuristic), because a person standing
between the wearer and a camera hides the wearer and puts their own head on the anchor: the ground
contact. The ray through a box's bottom centre meets the floor where that person stands; for the
wearer this is close to below the head anchor, for someone in front it is closer to the camera.
The floor height is estimated once per take from the detections nearest to the anchor (median).
A detection is not the wearer when ``delta / tau_c + ground_offset / foot_scale_m > max_mismatch``
(flag ``GROUND_REJECTED``): the head distance and the ground offset add up as one mismatch. On
synthetic takes the wearer stays below 1.3 and people in front of the wearer above 1.45. A wearer who
bends or crouches has the head ahead of the feet: the ground offset is reduced by how far the head's
drop below its standing height lets it lead them (``lean_reach``).

And one more that needs the whole take: a person is one tracklet (``detect.tracklets``: detections
linked frame to frame by their keypoints), and a tracklet whose head is farther than ``tau`` from the
anchor in most of its frames is someone else, also in the frames where it passes in front of the
wearer and puts its head on the anchor (flag ``OTHER_TRACKLET``; ``other_tracklet_ratio``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motionkit.common.nanstats import nan_lower_median
from motionkit.conventions import COCO17_FACE
from motionkit.data.observations import Observations
from motionkit.detect.tracking import TRACK_CODES, track_camera
from motionkit.detect.tracklets import tracklets_beyond
from motionkit.geometry.camera import CameraRig

# Where a head's COCO face keypoints (nose, left eye, right eye, left ear, right ear) sit in its CPF frame
# (X left, Y up, Z forward; m): eyes 6.6 cm apart, the ears 17 cm apart and 9.5 cm behind the eyes
FACE_IN_CPF = np.array([[0.0, -0.025, 0.04], [0.033, 0.0, 0.01], [-0.033, 0.0, 0.01],
                        [0.085, -0.025, -0.085], [-0.085, -0.025, -0.085]])  # fmt: skip
SELECTED = ("TRACKED", "REDETECT", "DRIFT_REDETECT", "GROUND_MATCH", "TRACKED_BLIND")
FLAG_AMBIGUOUS, FLAG_LOW_CALIBRATION, FLAG_GROUND_REJECTED, FLAG_OTHER_TRACKLET = 1, 2, 4, 8


@dataclass(frozen=True)
class AssociationConfig:
    tau_factor: float = 2.5
    tau_min_px: float = 60.0
    tau_min_height_frac: float = 0.15  # ... or this fraction of the nearest people's median box height, if smaller
    tau_max_px: float = 250.0
    min_calibration_frames: int = 10
    iou_track: float = 0.3
    max_blind_frames: int = 10
    ambiguity_ratio: float = 1.2
    face_conf_min: float = 0.3
    det_min_score: float = 0.5
    anchor_margin: float = 0.05
    foot_scale_m: float = 0.5  # ground offset that counts as much as a head distance of tau
    max_mismatch: float = 1.38  # reject when delta / tau + ground offset / foot_scale_m exceeds this
    ground_match_m: float = 0.25  # feet this close below the anchor rescue a head that is off (face hidden)
    track_switch_ratio: float = 2.0  # leave the track for a candidate whose head is this many times nearer the anchor
    lean_reach_m: float = 0.5  # hips-to-head radius of a bend: the head's drop lets it lead the feet (0: off)
    lean_dead_zone_m: float = 0.08  # head drop that gait and posture explain (no allowance)
    standing_eye_height_m: float = 1.45  # the anchor's height over the floor of a standing adult, at the least
    tracklet_max_step: float = 0.1  # keypoints of one person move at most this many box heights per frame
    other_tracklet_ratio: float = 1.0  # a tracklet whose median head distance is over this x tau: someone else (0: off)
    other_tracklet_min_frames: int = 10  # ... measured over at least this many frames with the anchor in view


@dataclass
class Association:
    """Per processed frame ``F`` and camera ``V`` (``camera_names`` order)."""

    frame_index: np.ndarray  # (F,) 30 fps take frames
    camera_names: list[str]
    box: np.ndarray  # (F, V, 4) raw pixels xyxy, NaN when nothing is selected
    score: np.ndarray  # (F, V)
    keypoints: np.ndarray  # (F, V, 17, 2)
    confidence: np.ndarray  # (F, V, 17)
    reason: np.ndarray  # (F, V) str
    det_index: np.ndarray  # (F, V) row of the observation table, -1 when nothing is selected
    head_to_anchor_px: np.ndarray  # (F, V)
    assoc_conf: np.ndarray  # (F, V)
    n_person_dets: np.ndarray  # (F, V)
    anchor_px: np.ndarray  # (F, V, 2)
    anchor_valid: np.ndarray  # (F, V)
    tau_px: np.ndarray  # (V,)
    flags: np.ndarray  # (F, V) bit set: 1 AMBIGUOUS, 2 LOW_CALIBRATION, 4 GROUND_REJECTED (someone in front),
    # 8 OTHER_TRACKLET (a candidate's tracklet is someone else's)
    floor_z: float = float("nan")  # estimated floor height (world z)

    @property
    def selected(self) -> np.ndarray:
        return self.det_index >= 0

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            k: getattr(self, k)
            for k in (
                "frame_index",
                "box",
                "score",
                "keypoints",
                "confidence",
                "reason",
                "det_index",
                "head_to_anchor_px",
                "assoc_conf",
                "n_person_dets",
                "anchor_px",
                "anchor_valid",
                "tau_px",
                "flags",
            )
        }


def project_anchor(rig: CameraRig, anchor_pos: np.ndarray, anchor_ok: np.ndarray, cfg: AssociationConfig):
    """Anchor pixels ``(F, V, 2)`` and validity ``(F, V)``: in front of the camera, within the model's
    angle and inside the image enlarged by ``anchor_margin`` on each side."""
    uv, ok = rig.project(np.nan_to_num(anchor_pos)[:, None], return_valid=True)  # (F, V, 1, 2)
    uv, ok = uv[:, :, 0], ok[:, :, 0]
    inside = np.stack([c.in_image(uv[:, v], cfg.anchor_margin) for v, c in enumerate(rig)], axis=1)
    valid = anchor_ok[:, None] & ok & inside
    return np.where(valid[..., None], uv, np.nan), valid


def project_face(rig: CameraRig, anchor_pos: np.ndarray, anchor_rot: np.ndarray | None,
                 a_valid: np.ndarray) -> np.ndarray:  # fmt: skip
    """Where the wearer's COCO face keypoints should appear: ``(F, V, 5, 2)`` pixels of ``FACE_IN_CPF``
    placed by the head anchor (``anchor_pos (F, 3)``, ``anchor_rot (F, 3, 3)`` CPF axes in world), NaN
    where the anchor is not valid in the view (``a_valid (F, V)``). Without a rotation every face
    keypoint is expected on the anchor itself."""
    if anchor_rot is None:
        pts = np.repeat(np.nan_to_num(anchor_pos)[:, None], len(COCO17_FACE), axis=1)
    else:
        pts = np.nan_to_num(anchor_pos)[:, None] + np.einsum("fij,kj->fki", np.nan_to_num(anchor_rot), FACE_IN_CPF)
    uv = rig.project(pts)  # (F, V, 5, 2)
    return np.where(a_valid[..., None, None], uv, np.nan)


def head_distances(box: np.ndarray, kp: np.ndarray, conf: np.ndarray, face_uv: np.ndarray, anchor_uv: np.ndarray,
                   conf_min: float = 0.3) -> np.ndarray:  # fmt: skip
    """``(N,)`` pixels between each detection's head and the wearer's expected one: the lower median over
    its confident face keypoints (``kp (N, 17, 2)``, ``conf (N, 17)``) of their distance to where the
    wearer's would be (``face_uv (N, 5, 2)``, ``project_face``), else the distance of its box top
    centre moved down by 10 % of the box height from the anchor ``anchor_uv (N, 2)``. Each keypoint
    against its own expected place: from behind the ears are all a head shows, and they lie about 9 cm
    behind the anchor between the eyes."""
    face = kp[:, list(COCO17_FACE)]
    ok = (conf[:, list(COCO17_FACE)] >= conf_min) & np.isfinite(face).all(-1) & np.isfinite(face_uv).all(-1)
    d = np.where(ok, np.linalg.norm(np.nan_to_num(face) - np.nan_to_num(face_uv), axis=-1), np.nan)
    med = nan_lower_median(d)  # of two, the nearer: a guess can be far off; NaN without a face keypoint
    top = np.stack([(box[:, 0] + box[:, 2]) / 2, box[:, 1] + 0.1 * (box[:, 3] - box[:, 1])], 1)
    return np.where(ok.any(1), med, np.linalg.norm(top - anchor_uv, axis=-1))


def ground_offsets(
    rig: CameraRig, boxes: np.ndarray, cam: np.ndarray, anchor: np.ndarray, delta: np.ndarray, cfg: AssociationConfig
) -> tuple[np.ndarray, float]:
    """How much closer to the camera (m, horizontally, >= 0) each detection stands (box bottom centre
    on the floor) than its frame's head anchor, and the floor height used.

    The floor is the median, over detections whose head is within ``tau_min_px`` of the anchor, of
    the height at which their bottom ray passes below the anchor.
    """
    n = len(boxes)
    if n == 0:
        return np.zeros(0), float("nan")
    bottom = np.stack([(boxes[:, 0] + boxes[:, 2]) / 2, boxes[:, 3]], -1)
    rays = np.full((n, 3), np.nan)
    C = rig.centers[cam]
    for v, c in enumerate(rig):
        m = cam == v
        if m.any():
            rays[m] = c.unproject(bottom[m])[0]
    horiz = np.linalg.norm(rays[:, :2], axis=-1)
    dist_anchor = np.linalg.norm(anchor[:, :2] - C[:, :2], axis=-1)
    z_at_anchor = C[:, 2] + rays[:, 2] * dist_anchor / np.maximum(horiz, 1e-9)
    near = (delta <= cfg.tau_min_px) & np.isfinite(z_at_anchor) & np.isfinite(anchor).all(-1)
    if near.sum() < cfg.min_calibration_frames:
        return np.zeros(n), float("nan")
    floor_z = float(np.median(z_at_anchor[near]))
    down = rays[:, 2] < -1e-6
    lam = np.where(down, (floor_z - C[:, 2]) / np.where(down, rays[:, 2], -1.0), np.inf)
    foot = C[:, :2] + lam[:, None] * rays[:, :2]
    # how much closer to the camera this person stands than the wearer (only that direction matters:
    # the wearer's own feet can be off the head's vertical by a lean or a stride)
    off = np.clip(dist_anchor - np.linalg.norm(foot - C[:, :2], axis=-1), 0.0, None)
    off = np.where(down & np.isfinite(off), off, np.inf)
    truncated = boxes[:, 3] >= rig.sizes[cam, 1] - 3  # feet cut off by the image border: no ground cue
    return np.where(truncated, np.nan, off), floor_z


def lean_reach(anchor_pos: np.ndarray, anchor_ok: np.ndarray, floor_z: float, cfg: AssociationConfig) -> np.ndarray:
    """``(F,)`` how far (m, horizontally) a bend may put the wearer's head ahead of the feet in each frame.

    The head's drop ``d`` below its standing height (the 90th percentile of the anchor's height over the
    floor in the take, or ``standing_eye_height_m`` if higher: a wearer seated for the whole take never
    shows it), less ``lean_dead_zone_m`` (gait and posture), is read as the torso turning about
    the hips with radius ``L = lean_reach_m``: the head then moves ``sqrt(2 L d - d^2)`` forward. Zero
    without a floor or valid anchors, or with ``lean_reach_m`` 0.
    """
    height = anchor_pos[:, 2] - floor_z
    ok = anchor_ok & np.isfinite(height)
    if cfg.lean_reach_m <= 0 or not ok.any():
        return np.zeros(len(anchor_pos))
    L = cfg.lean_reach_m
    standing = max(float(np.nanpercentile(height[ok], 90)), cfg.standing_eye_height_m)
    drop = np.clip(standing - height - cfg.lean_dead_zone_m, 0.0, L)
    return np.where(ok, np.sqrt(2 * L * drop - drop**2), 0.0)


@dataclass
class _Candidates:
    """The detections the SOMA rule weighs, sorted by (view, frame): ``rows (N,)`` in the observation
    table, their frame ``fi`` and view ``vi``, the pixel distance ``delta`` of their head from the
    wearer's (``head_distances``; NaN where the anchor is invalid), ``foot_off`` the ground offset of
    their feet (m, less the lean the head's drop allows), and ``first[v, f]`` the first candidate of
    (view ``v``, frame ``f``) (``first[v, F]`` ends view ``v``)."""

    rows: np.ndarray
    fi: np.ndarray
    vi: np.ndarray
    delta: np.ndarray
    foot_off: np.ndarray
    floor_z: float
    first: np.ndarray


def _candidates(obs: Observations, rig: CameraRig, frames: np.ndarray, anchor_pos: np.ndarray, anchor_ok: np.ndarray,
                a_uv: np.ndarray, face_uv: np.ndarray, cfg: AssociationConfig) -> _Candidates:  # fmt: skip
    F, V = len(frames), len(rig)
    fi_all, vi_all = observation_cells(frames, obs, rig)
    idx = np.flatnonzero((vi_all >= 0) & (fi_all >= 0) & (obs.score >= cfg.det_min_score))
    fi, vi = fi_all[idx], vi_all[idx]
    order = np.lexsort((fi, vi))
    idx, fi, vi = idx[order], fi[order], vi[order]
    delta = head_distances(obs.box[idx], obs.keypoints[idx], obs.keypoint_conf[idx], face_uv[fi, vi], a_uv[fi, vi],
                           cfg.face_conf_min)  # NaN where the anchor is invalid  # fmt: skip
    foot_off, floor_z = ground_offsets(rig, obs.box[idx], vi, anchor_pos[fi], delta, cfg)
    # a bend puts the head ahead of the feet: the lean the head's drop allows is no sign of someone in front
    foot_off = np.clip(foot_off - lean_reach(anchor_pos, anchor_ok, floor_z, cfg)[fi], 0.0, None)  # NaN, inf kept
    first = np.searchsorted(vi * (F + 1) + fi, np.arange(V)[:, None] * (F + 1) + np.arange(F + 1)[None, :])
    return _Candidates(idx, fi, vi, delta, foot_off, floor_z, first)


def _camera_threshold(delta: np.ndarray, fi: np.ndarray, height: np.ndarray, cfg: AssociationConfig) -> float | None:
    """The camera's ``tau``: ``tau_factor`` x the median over frames of the nearest head's distance
    ``delta``, clipped to ``floor .. tau_max_px``; None with fewer than ``min_calibration_frames``
    frames. The floor is ``tau_min_px``, or ``tau_min_height_frac`` x the median box ``height`` (px) of
    the nearest heads' people where that is smaller: on a court camera 15 m away the players are ~200 px
    tall, and 60 px let a look-alike a third of a body from the anchor keep the selection."""
    d = np.nan_to_num(delta, nan=np.inf)
    order = np.lexsort((d, fi))  # by frame, nearest head first
    first = order[np.r_[True, fi[order][1:] != fi[order][:-1]]] if len(order) else order
    first = first[np.isfinite(d[first])]
    if len(first) < cfg.min_calibration_frames:
        return None
    h = height[first]
    floor = cfg.tau_min_px
    if np.isfinite(h).any():
        floor = min(floor, cfg.tau_min_height_frac * float(np.nanmedian(h)))
    return float(np.clip(cfg.tau_factor * np.median(d[first]), floor, cfg.tau_max_px))


def _new_outputs(F: int, V: int, tau_max: float) -> dict[str, np.ndarray]:
    """Empty per-camera-frame outputs: nothing selected."""
    return {
        "box": np.full((F, V, 4), np.nan),
        "score": np.full((F, V), np.nan),
        "keypoints": np.full((F, V, 17, 2), np.nan),
        "confidence": np.zeros((F, V, 17)),
        "reason": np.full((F, V), "", dtype=object),
        "det_index": np.full((F, V), -1, dtype=np.int64),
        "head_to_anchor_px": np.full((F, V), np.nan),
        "assoc_conf": np.zeros((F, V)),
        "n_person_dets": np.zeros((F, V), dtype=np.int32),
        "flags": np.zeros((F, V), dtype=np.int32),
        "tau_px": np.full(V, tau_max),
    }


def _select(out: dict, frames: np.ndarray, v: int, rows: np.ndarray, obs: Observations) -> None:
    """Select observations ``rows (n,)`` at ``frames (n,)`` of view ``v``."""
    out["box"][frames, v] = obs.box[rows]
    out["score"][frames, v] = obs.score[rows]
    out["keypoints"][frames, v] = obs.keypoints[rows]
    out["confidence"][frames, v] = obs.keypoint_conf[rows]
    out["det_index"][frames, v] = rows


def _other_tracklets(c: _Candidates, sel_v: np.ndarray, tau: float, obs: Observations,
                     cfg: AssociationConfig) -> np.ndarray:  # fmt: skip
    """``(n,)`` for the candidates ``sel_v`` of one camera: their tracklet's head is farther than
    ``other_tracklet_ratio x tau`` from the anchor in most of the (at least ``other_tracklet_min_frames``)
    frames where the anchor is in view."""
    if cfg.other_tracklet_ratio <= 0:
        return np.zeros(int(sel_v.sum()), dtype=bool)
    rows = c.rows[sel_v]
    box = obs.box[rows]
    return tracklets_beyond(c.fi[sel_v], obs.keypoints[rows], obs.keypoint_conf[rows], box[:, 3] - box[:, 1],
                            c.delta[sel_v] / tau, cfg.other_tracklet_ratio, cfg.other_tracklet_min_frames,
                            cfg.tracklet_max_step, cfg.face_conf_min)  # fmt: skip


def _track_camera(v: int, c: _Candidates, rejected: np.ndarray, obs: Observations, a_valid: np.ndarray,
                  anchor_ok: np.ndarray, anchor_reason: np.ndarray, cfg: AssociationConfig,
                  out: dict) -> None:  # fmt: skip
    """Pass 2 of view ``v``, in time order (``tracking.track_camera``): track the selected box by IoU,
    re-detect the nearest head within ``tau`` when the track drifts or is lost, rescue a hidden face by
    the feet (``GROUND_MATCH``), carry the track blind for a few frames without an anchor; writes
    ``out`` (``_new_outputs``)."""
    lo, hi = c.first[v, 0], c.first[v, -1]  # the camera's candidates
    rows = c.rows[lo:hi]
    chosen, code, conf, head_px, flags, n_dets = track_camera(
        c.first[v] - lo,
        a_valid[:, v],
        obs.box[rows].astype(np.float64),
        rejected[lo:hi],
        c.delta[lo:hi],
        c.foot_off[lo:hi],
        obs.score[rows].astype(np.float64),
        float(out["tau_px"][v]),
        cfg.max_blind_frames,
        cfg.iou_track,
        cfg.track_switch_ratio,
        cfg.ground_match_m,
        cfg.tau_max_px,
        cfg.ambiguity_ratio,
        FLAG_AMBIGUOUS,
    )
    picked = np.flatnonzero(chosen >= 0)
    _select(out, picked, v, rows[chosen[picked]], obs)
    reason = np.asarray(TRACK_CODES, dtype=object)[code]
    out["reason"][:, v] = np.where(code == TRACK_CODES.index("ANCHOR"),
                                   np.where(anchor_ok, "ANCHOR_OUT_OF_VIEW", anchor_reason), reason)  # fmt: skip
    out["assoc_conf"][:, v] = conf
    out["head_to_anchor_px"][:, v] = head_px
    out["flags"][:, v] |= flags
    out["n_person_dets"][:, v] = n_dets


def select_wearer(
    obs: Observations,
    rig: CameraRig,
    frames: np.ndarray,
    anchor_pos: np.ndarray,
    anchor_ok: np.ndarray,
    anchor_reason: np.ndarray | None = None,
    cfg: AssociationConfig | None = None,
    anchor_rotation: np.ndarray | None = None,
) -> Association:
    """The SOMA rule with tracking, per camera, over processed frames: pass 1 sets each camera's
    threshold ``tau`` from its nearest heads (``_camera_threshold``) and marks the people standing in
    front of the wearer (head and ground mismatch) and the tracklets that are someone else
    (``_other_tracklets``); pass 2 tracks in time order (``_track_camera``).

    Args:
        obs: detections and keypoints of the take (observation cache).
        rig: the take's cameras; obs cameras not in the rig are ignored.
        frames: ``(F,)`` 30 fps frames to process, in time order.
        anchor_pos: ``(F, 3)`` CPF head anchor (world), ``anchor_ok (F,)``; ``anchor_reason (F,)``
            the reason when not ok (``NO_ARIA_POSE`` or ``ARIA_TS_NAN``).
        anchor_rotation: ``(F, 3, 3)`` the CPF's axes in world (``HeadAnchor.rotation``): each face
            keypoint is then compared with its own expected place (``head_distances``); without it
            all of them with the anchor.
    """
    cfg = cfg or AssociationConfig()
    F, V = len(frames), len(rig)
    a_uv, a_valid = project_anchor(rig, anchor_pos, anchor_ok, cfg)
    face_uv = project_face(rig, anchor_pos, anchor_rotation, a_valid)
    c = _candidates(obs, rig, frames, anchor_pos, anchor_ok, a_uv, face_uv, cfg)
    out = _new_outputs(F, V, cfg.tau_max_px)
    anchor_reason = np.where(
        np.asarray(anchor_reason if anchor_reason is not None else [""] * F) == "", "NO_ARIA_POSE", anchor_reason
    )
    rejected = np.zeros(len(c.rows), dtype=np.int32)  # why a candidate is not the wearer (flag bits), per camera
    for v in range(V):
        sel_v = c.vi == v
        boxes = obs.box[c.rows[sel_v]]
        tau = _camera_threshold(c.delta[sel_v], c.fi[sel_v], boxes[:, 3] - boxes[:, 1], cfg)
        if tau is None:
            out["flags"][:, v] |= FLAG_LOW_CALIBRATION
        else:
            out["tau_px"][v] = tau
        # the joint head/ground mismatch: someone standing in front of the wearer (NaN ground: head only)
        with np.errstate(over="ignore", invalid="ignore"):
            mismatch = c.delta[sel_v] / out["tau_px"][v] + (
                np.nan_to_num(c.foot_off[sel_v], nan=0.0, posinf=1e9) / cfg.foot_scale_m
            )
        rejected[sel_v] = np.where(mismatch > cfg.max_mismatch, FLAG_GROUND_REJECTED, 0)
        rejected[sel_v] |= np.where(_other_tracklets(c, sel_v, out["tau_px"][v], obs, cfg), FLAG_OTHER_TRACKLET, 0)
        _track_camera(v, c, rejected, obs, a_valid, anchor_ok, anchor_reason, cfg, out)
    out["reason"] = out["reason"].astype(str)
    return Association(np.asarray(frames), rig.names, anchor_px=a_uv, anchor_valid=a_valid, floor_z=c.floor_z, **out)


def observation_cells(frame_index: np.ndarray, obs: Observations, rig: CameraRig) -> tuple[np.ndarray, np.ndarray]:
    """``(N,)`` each observation row's position in ``frame_index`` (the association's frames) and its
    view in ``rig``; -1 where the frame is not processed or the camera is not in the rig."""
    frame_index = np.asarray(frame_index)
    fi = np.full(len(obs.frame_index), -1, dtype=np.int64)
    if len(frame_index):
        order = np.argsort(frame_index, kind="stable")
        ranked = frame_index[order]
        k = np.maximum(np.searchsorted(ranked, obs.frame_index, side="right") - 1, 0)  # a repeated frame: its last
        found = ranked[k] == obs.frame_index
        fi[found] = order[k[found]]
    view_of_cam = np.array([rig.names.index(n) if n in rig.names else -1 for n in obs.camera_names])
    vi = view_of_cam[obs.camera] if len(obs.camera) else np.zeros(0, np.int64)
    return fi, vi


def editable_arrays(assoc: Association) -> dict[str, np.ndarray]:
    """Copies of the per-camera-frame arrays a later rule may change (``reason`` as objects: room for
    longer codes); ``Association(**{**assoc.__dict__, **arrays})`` puts them back."""
    out = {k: getattr(assoc, k).copy() for k in ("box", "score", "keypoints", "confidence", "det_index", "assoc_conf")}
    out["reason"] = assoc.reason.astype(object)
    return out


def put_rows(arrays: dict, obs: Observations, where: np.ndarray, rows: np.ndarray, assoc_conf, reason: str) -> None:
    """Select observation ``rows`` (one per true entry of ``where (F, V)``, in its order) into ``arrays``
    (``editable_arrays``) with their association confidence and reason."""
    arrays["det_index"][where] = rows
    arrays["box"][where] = obs.box[rows]
    arrays["score"][where] = obs.score[rows]
    arrays["keypoints"][where] = obs.keypoints[rows]
    arrays["confidence"][where] = obs.keypoint_conf[rows]
    arrays["assoc_conf"][where] = assoc_conf
    arrays["reason"][where] = reason


def clear_rows(arrays: dict, where: np.ndarray, reason: str) -> None:
    """Select nothing at the true entries of ``where (F, V)`` in ``arrays`` (``editable_arrays``), with
    ``reason``."""
    arrays["det_index"][where] = -1
    for key in ("box", "score", "keypoints"):
        arrays[key][where] = np.nan
    arrays["confidence"][where] = 0.0
    arrays["assoc_conf"][where] = 0.0
    arrays["reason"][where] = reason
