"""Rules on a fitted sequence: which views support which joints, which frames are valid, which joints
can be trusted, and per-frame quality flags (docs/result_file.md, groups ``fit`` and ``flags``)."""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.ndimage import convolve1d, maximum_filter1d, median_filter

from motionkit.conventions import (
    COCO17_BODY,
    COCO17_EARS,
    COCO17_FACE,
    COCO17_HIPS,
    COCO17_LIMB_LANDMARKS,
    COCO17_PARTS,
    COCO17_SHOULDERS,
    eye_midpoint,
)
from motionkit.geometry.interpolation import valid_runs

SMOOTHING_TAPS = np.array([0.05, 0.25, 0.4, 0.25, 0.05])
FAST_JOINT_M_S = 5.0
HIGH_ACCEL_M_S2 = 40.0
MIN_CAMS = 3
STATIC_M_S = 0.1
STATIC_WINDOW_S = 1.5
HIGH_REPROJ_PX = 60.0
SHORT_SEGMENT_S = 2.0
OCCLUDED_MIN_TRUSTED = 10  # of the 12 body landmarks (three or more untrusted: a part of the body is guessed)
LR_SWAPS_MIN_PAIRS = 2  # a view whose left/right labels the association corrected in this many pairs ...
LR_SWAPS_MIN_VIEWS = 2  # ... in this many of the views the fit used: the frame's sides are uncertain
INFORMATIONAL_FLAGS = ("STATIC",)  # flags that describe the motion, not the fit's quality


@dataclass(frozen=True)
class TrustConfig:
    """How the fit's final observation weights decide support and trust.

    ``support_weight``, ``support_confidence``: an observation supports its joint when its final fit weight
    (confidence, association and robust weights together, ``fit/obs_weight``) is above ``support_weight`` and the
    detector scored it at least ``support_confidence``: a keypoint scored lower is the detector's guess at a joint
    it does not see, which keeps its small weight in the fit but is no evidence that the view sees the joint.
    ``view_landmarks``: a view supports the frame with at least this many supported landmarks (of 17).
    ``trust_views``: a joint of a valid frame is trusted when this many views support it in that frame, or in the
    median over ``support_window_s`` (centred) of its supporting views (the fit is smooth in time: one frame's
    dropped observation does not move the joint). ``min_view_angle_deg``: a shoulder, hip or limb landmark is
    trusted only where two of the views that support it in that window see it from directions at least this many
    degrees apart and not within this many of opposite (``view_pair_sine``): two views whose rays to a joint nearly
    coincide fix it across the rays, not along them, and a few pixels of detector noise then move it tens of
    millimetres there (0 turns it off). ``limb_trust_views``: the views an elbow, wrist, knee or ankle needs instead,
    where that is more (3: a precision mode for users who would rather lose a third of the limbs than
    trust two views' worth of detector noise; docs/result_file.md, "Stricter trust"). A frame is valid with two or
    more supporting views in a run at least ``min_seen_run_s`` long, or in a gap of at most ``max_gap_s`` between
    such runs across which the body moves at most ``max_gap_travel_m`` (``valid_frames``: the fit is smooth through
    it; a runner is not); frames that two views each see with ``seen_view_landmarks`` or more supported landmarks
    are valid too, in runs as long, but bridge no gap, and such a run that no two supporting views see in any of its
    frames must last ``min_partial_run_s`` unless the fitted pelvis moves slower than ``max_partial_speed_m_s``
    throughout it (a glimpse of a few frames between occlusions: the fit's smoothness carries the pose of the frames
    around it into them, which is right for a body that stays still and wrong for a runner's). ``max_eye_anchor_m``:
    a frame whose fitted eyes lie farther than this from the Aria head anchor is not valid (``eyes_off_anchor``; the
    Aria knows where the wearer's head is). ``max_face_anchor_m``: where the fitted eyes lie farther than this from
    the anchor, the face's landmarks are not trusted (the body may be right while the head is turned wrong: the eyes
    sit 2-5 cm from the anchor where the fit is right). ``face_from_aria``: the face's landmarks of a valid frame
    are trusted, whatever the views' support, where the fitted eyes lie within ``max_face_anchor_m`` of the anchor
    and the fitted head's vectors within ``max_face_turn_m`` of where the Aria's orientation turns them
    (``objective.head_turn_residual``): the Aria measures the head's position and turn, and the fit's head terms
    hold the face to them. ``max_aria_gap_s``, ``max_aria_gap_travel_m``: a gap of up to ``max_aria_gap_s`` between
    valid frames is valid too where the fitted head sits and turns as the Aria does in every frame of it
    (``head_held_by_aria``: ``max_face_anchor_m``, ``max_face_turn_m``) and the fitted pelvis stays within
    ``max_aria_gap_travel_m`` of where it was before the gap (``aria_held_gaps``: the Aria measures the head
    throughout, and a body that stays in place between two fitted stretches is what the fit interpolates); 0 s turns
    it off. ``max_neck_twist_deg``: a frame whose fitted head is turned farther than this from its shoulders about
    the spine (``neck_twist_deg``) is not valid, and an Aria-held gap that holds one is not bridged: no neck turns
    the head that far (about 80 degrees either way), so the fit has held the head where the Aria turns it and
    left the body facing elsewhere (0 turns it off)."""

    support_weight: float = 0.02
    support_confidence: float = 0.4
    view_landmarks: int = 8
    trust_views: int = 2
    limb_trust_views: int = 2
    support_window_s: float = 0.5
    min_view_angle_deg: float = 20.0
    max_gap_s: float = 0.4
    min_seen_run_s: float = 0.1
    seen_view_landmarks: int = 6
    min_partial_run_s: float = 0.2
    max_partial_speed_m_s: float = 0.5
    max_gap_travel_m: float = 0.8
    max_eye_anchor_m: float = 0.30
    max_face_anchor_m: float = 0.10
    face_from_aria: bool = True
    max_face_turn_m: float = 0.05
    max_aria_gap_s: float = 1.5
    max_aria_gap_travel_m: float = 0.3
    max_neck_twist_deg: float = 90.0


@dataclass(frozen=True)
class ObservationSupport:
    """What the fit's final observation weights support (``observation_support``), for ``M`` frames and
    ``V`` views: ``views (M, V, 17)`` bool the observations that support their landmark; ``joint (M, 17)``
    int16 their number per landmark (``fit/joint_support``); ``cameras (M, V)`` bool views that support the
    frame (``cfg.view_landmarks`` or more supported landmarks); ``n_views (M,)`` their number; ``n_seeing (M,)``
    views with ``cfg.seen_view_landmarks`` or more (fewer than a supporting view needs: ``valid_frames``'
    ``n_seen_views``)."""

    views: np.ndarray
    joint: np.ndarray
    cameras: np.ndarray
    n_views: np.ndarray
    n_seeing: np.ndarray


def observation_support(obs_weight: np.ndarray, confidence: np.ndarray, cfg: TrustConfig) -> ObservationSupport:
    """Support of the fit by ``obs_weight (M, V, 17)`` (final fit weights, ``fit/obs_weight``) and the
    detector's ``confidence (M, V, 17)`` of the same observations (``association/confidence``, NaN
    where none): an observation supports its landmark when its weight is above ``cfg.support_weight``
    and its confidence at least ``cfg.support_confidence``."""
    supporting = (np.nan_to_num(obs_weight) > cfg.support_weight) & (
        np.nan_to_num(confidence) >= cfg.support_confidence
    )  # (M, V, 17)
    landmarks = supporting.sum(-1)  # (M, V)
    cameras = landmarks >= cfg.view_landmarks
    n_seeing = (landmarks >= cfg.seen_view_landmarks).sum(-1)
    return ObservationSupport(views=supporting, joint=supporting.sum(1).astype(np.int16), cameras=cameras,
                              n_views=cameras.sum(-1), n_seeing=n_seeing)  # fmt: skip


def weighted_views(weight: np.ndarray) -> np.ndarray:
    """``(M, V)`` bool: the views with an observation of weight above 0 in ``weight (M, V, 17)``."""
    return (np.nan_to_num(weight) > 0).any(-1)


def dropped_views(input_weight: np.ndarray, obs_weight: np.ndarray) -> np.ndarray:
    """``(M, V)`` bool: the views whose every observation the fit dropped, from the weights it was given
    ``input_weight (M, V, 17)`` and its final ones ``obs_weight (M, V, 17)``: views with a weighted
    observation that end with none (the second pass's view test, or all of a view's keypoints off)."""
    return weighted_views(input_weight) & ~weighted_views(obs_weight)


def joint_trusted(support: np.ndarray, valid: np.ndarray, fps: float, cfg: TrustConfig,
                  face_off_anchor: np.ndarray | None = None,
                  head_held: np.ndarray | None = None,
                  pair_sine: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """``(M, 17)`` bool: the joint of a valid frame whose supporting views ``support (M, 17)`` number
    ``cfg.trust_views`` or more (the limbs' ``cfg.limb_trust_views`` where that is more) in that frame,
    or in their median over ``cfg.support_window_s`` (a stretch that two views support carries the
    smooth fit across one view's dropped observations); with ``pair_sine (M, 17)`` (``view_pair_sine``)
    the body's landmarks (shoulders to ankles) only where two of those views meet at
    ``cfg.min_view_angle_deg`` or more; the face's landmarks not where
    ``face_off_anchor (M,)`` (``eyes_off_anchor`` at ``cfg.max_face_anchor_m``), and, with
    ``cfg.face_from_aria``, in every valid frame of ``head_held (M,)`` (``head_held_by_aria``: the fitted
    head where the Aria puts it and turned as the Aria is), whatever the views: the Aria fixes the
    head's pose there, and with it the face."""
    trusted = valid[:, None] & (steady_support(support, fps, cfg) >= views_needed(cfg))
    if pair_sine is not None and cfg.min_view_angle_deg > 0:
        body = list(COCO17_BODY)
        trusted[:, body] &= np.asarray(pair_sine)[:, body] >= np.sin(np.radians(cfg.min_view_angle_deg))
    face = list(COCO17_FACE)
    if face_off_anchor is not None:
        trusted[:, face] &= ~np.asarray(face_off_anchor, dtype=bool)[:, None]
    if head_held is not None and cfg.face_from_aria:
        trusted[:, face] |= (valid & np.asarray(head_held, dtype=bool))[:, None]
    return trusted


def steady_support(support: np.ndarray, fps: float, cfg: TrustConfig) -> np.ndarray:
    """``(M, 17)``: the supporting views of each landmark ``support (M, 17)`` in its frame or, where more,
    their median over ``cfg.support_window_s`` (centred; ``fps`` samples per second), which
    ``joint_trusted`` compares with ``views_needed``."""
    if not len(support):
        return support
    size = _window_samples(cfg.support_window_s, fps)
    return np.maximum(median_filter(support, size=(size, 1), mode="nearest"), support)


def view_pair_sine(views: np.ndarray, landmarks: np.ndarray, centres: np.ndarray, fps: float,
                   cfg: TrustConfig) -> np.ndarray:  # fmt: skip
    """``(M, 17)`` in [0, 1]: per landmark, the largest ``|sin|`` of the angle between the rays from two
    camera centres ``centres (V, 3)`` (world metres) to the fitted landmark ``landmarks (M, 17, 3)``
    (world metres) over the pairs of views that support it (``views (M, V, 17)``,
    ``ObservationSupport.views``) in that frame or within ``cfg.support_window_s`` (centred; ``fps``
    samples per second), the window ``steady_support`` carries support over; 0 where fewer than two.
    ``joint_trusted`` compares it with ``cfg.min_view_angle_deg``: two rays that meet at a narrow angle, or
    nearly opposite, pin a point across them but hardly along them."""
    views = np.asarray(views, dtype=bool)
    M, V = views.shape[:2]
    if M == 0 or V < 2:
        return np.zeros((M, views.shape[2]))
    near = maximum_filter1d(views, _window_samples(cfg.support_window_s, fps), axis=0, mode="nearest")
    landmarks, centres = np.asarray(landmarks, dtype=np.float64), np.asarray(centres, dtype=np.float64)
    rays = _unit(landmarks[:, None] - centres[None, :, None])  # (M, V, 17, 3)
    best = np.zeros((M, views.shape[2]))
    for a, b in itertools.combinations(range(V), 2):  # one pass over the frames per pair of views
        cos = np.einsum("mjc,mjc->mj", rays[:, a], rays[:, b])
        sine = np.nan_to_num(np.sqrt(np.clip(1.0 - cos * cos, 0.0, 1.0)))
        best = np.where(near[:, a] & near[:, b], np.maximum(best, sine), best)
    return best


def stricter_trust(trusted: np.ndarray, support: np.ndarray, fps: float, cfg: TrustConfig) -> np.ndarray:
    """``(M, 17)`` bool: a stored trust mask ``trusted (M, 17)`` (``fit/joint_trusted``) judged again with
    the views that ``cfg`` asks of the body's landmarks (shoulders to ankles: ``trust_views``,
    ``limb_trust_views``), from the same fit's ``support (M, 17)`` (``fit/joint_support``) on its grid of
    ``fps``. It only tightens: where ``cfg`` asks no more views than the fit's own config did, the mask
    comes back as it was; with more, the body's landmarks are what ``joint_trusted`` gives a refit with
    ``cfg`` (the angle between the supporting views, ``min_view_angle_deg``, judged as the fit judged it:
    the stored support counts views, not their directions). The face keeps its trust (the Aria's,
    docs/result_file.md)."""
    body = list(COCO17_BODY)
    out = np.asarray(trusted, dtype=bool).copy()
    out[:, body] &= (steady_support(support, fps, cfg) >= views_needed(cfg))[:, body]
    return out


def views_needed(cfg: TrustConfig) -> np.ndarray:
    """``(17,)`` int: the supporting views each COCO landmark needs to be trusted (``joint_trusted``):
    ``cfg.trust_views``, and for the limbs (elbows, wrists, knees, ankles) ``cfg.limb_trust_views`` where
    that is more."""
    need = np.full(17, cfg.trust_views)
    need[list(COCO17_LIMB_LANDMARKS)] = max(cfg.trust_views, cfg.limb_trust_views)
    return need


def head_held_by_aria(eye_anchor_m: np.ndarray, head_turn_m: np.ndarray, cfg: TrustConfig) -> np.ndarray:
    """``(M,)`` bool: frames whose fitted eyes lie within ``cfg.max_face_anchor_m`` of the Aria head anchor
    (``eye_anchor_m (M,)``, ``eye_anchor_distance``) and whose fitted head's vectors lie within
    ``cfg.max_face_turn_m`` of where the Aria's orientation turns them (``head_turn_m (M,)``,
    ``objective.head_turn_residual``); False where either is unknown (NaN)."""
    return _at_most(eye_anchor_m, cfg.max_face_anchor_m) & _at_most(head_turn_m, cfg.max_face_turn_m)


def neck_twist_deg(landmarks: np.ndarray) -> np.ndarray:
    """``(M,)`` degrees the head is turned from the shoulders about the spine, from COCO-17 ``landmarks
    (M, 17, 3)`` (metres, any frame): the angle between the ear line and the shoulder line (left to right),
    each projected onto the plane across the spine (the hips' midpoint to the shoulders'); 0 with the face
    to the front of the chest, 180 facing backwards. NaN where a landmark is unknown or a line degenerate."""
    X = np.asarray(landmarks, dtype=np.float64)
    spine = _unit(X[:, list(COCO17_SHOULDERS)].mean(1) - X[:, list(COCO17_HIPS)].mean(1))  # (M, 3)
    ears, shoulders = (_unit(_across(X[:, b] - X[:, a], spine)) for a, b in (COCO17_EARS, COCO17_SHOULDERS))
    sine = np.linalg.norm(np.cross(ears, shoulders), axis=-1)
    return np.degrees(np.arctan2(sine, (ears * shoulders).sum(-1)))


def neck_twisted(landmarks: np.ndarray, max_deg: float) -> np.ndarray:
    """``(M,)`` bool: frames whose ``neck_twist_deg`` of ``landmarks (M, 17, 3)`` exceeds ``max_deg`` (0: none);
    False where it is unknown."""
    if max_deg <= 0:
        return np.zeros(len(landmarks), bool)
    twist = neck_twist_deg(landmarks)
    return np.isfinite(twist) & ~_at_most(twist, max_deg)


def _unit(v: np.ndarray) -> np.ndarray:
    """``v (..., 3)`` scaled to unit length; NaN where it has none."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _across(v: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """``v (..., 3)`` less its component along the unit ``axis (..., 3)``."""
    return v - (v * axis).sum(-1, keepdims=True) * axis


def _at_most(x: np.ndarray, limit: float) -> np.ndarray:
    """``x <= limit`` elementwise, False where ``x`` is NaN."""
    x = np.asarray(x, dtype=np.float64)
    return np.less_equal(x, limit, out=np.zeros(x.shape, bool), where=np.isfinite(x))


def _window_samples(seconds: float, fps: float) -> int:
    """The odd number of samples of a centred window of about ``seconds`` at ``fps``."""
    return 2 * int(round(seconds * fps / 2)) + 1


def _samples(seconds: float, fps: float) -> int:
    """How many samples at ``fps`` last ``seconds`` (one at the least)."""
    return max(1, int(round(seconds * fps)))


def _long_runs(seen: np.ndarray, fps: float, min_run_s: float) -> np.ndarray:
    """``(R, 2)`` ``[start, stop)`` of the runs of ``seen (M,)`` at least ``min_run_s`` (one sample) long."""
    runs = np.array(valid_runs(seen), dtype=np.int64).reshape(-1, 2)
    return runs[runs[:, 1] - runs[:, 0] >= _samples(min_run_s, fps)]


def _gaps_between(runs: np.ndarray) -> np.ndarray:
    """``(R - 1, 2)`` ``[start, stop)`` of the gaps between consecutive runs ``(R, 2)``."""
    return np.c_[runs[:-1, 1], runs[1:, 0]]


def _count_in(mask: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """``(S,)`` int: how many frames of each ``[start, stop)`` span ``(S, 2)`` are set in ``mask (M,)``."""
    n = np.r_[0, np.cumsum(mask)]
    return n[spans[:, 1]] - n[spans[:, 0]]


def _covered(spans: np.ndarray, M: int) -> np.ndarray:
    """``(M,)`` bool: frames inside any of the ``[start, stop)`` ``spans (S, 2)``."""
    edges = np.zeros(M + 1, dtype=np.int64)
    np.add.at(edges, spans[:, 0], 1)
    np.add.at(edges, spans[:, 1], -1)
    return np.cumsum(edges[:-1]) > 0


def valid_frames(n_views: np.ndarray, fps: float, cfg: TrustConfig, n_seen_views: np.ndarray | None = None,
                 positions: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """``(M,)`` bool: frames seen by >= 2 views (``n_views (M,)``, ``ObservationSupport.n_views``) in runs of at least
    ``cfg.min_seen_run_s`` (one sample at the least: a lone frame that two views support amid frames that
    one supports is no evidence), plus gaps of at most ``cfg.max_gap_s`` between such runs. With
    ``positions (M, 3)`` (the fitted pelvis, metres) a gap is bridged only where the body moves at most
    ``cfg.max_gap_travel_m`` between the runs' frames on either side of it. With ``n_seen_views (M,)``
    (``ObservationSupport.n_seeing``: views with the weaker ``cfg.seen_view_landmarks``), frames that two of them see,
    in runs as long, are valid as well, but anchor no bridge over a gap; a run of them without a frame
    that two supporting views see must last ``cfg.min_partial_run_s``, or (with ``positions``) the body
    move slower than ``cfg.max_partial_speed_m_s`` in each of its frames (``body_speed``)."""
    strong = np.asarray(n_views) >= 2
    runs = _long_runs(strong, fps, cfg.min_seen_run_s)
    gaps = _gaps_between(runs)
    bridged = (gaps[:, 1] - gaps[:, 0]) / fps <= cfg.max_gap_s
    if positions is not None and len(gaps):
        travel = np.linalg.norm(positions[gaps[:, 1]] - positions[gaps[:, 0] - 1], axis=-1)
        bridged &= travel <= cfg.max_gap_travel_m
    spans = np.r_[runs, gaps[bridged]]
    if n_seen_views is not None:
        seen = _long_runs(np.asarray(n_seen_views) >= 2, fps, cfg.min_seen_run_s)
        anchored = _count_in(strong, seen) > 0
        keep = anchored | (seen[:, 1] - seen[:, 0] >= _samples(cfg.min_partial_run_s, fps))
        if positions is not None:  # a still body throughout the run
            keep |= _count_in(body_speed(positions, fps) > cfg.max_partial_speed_m_s, seen) == 0
        spans = np.r_[spans, seen[keep]]
    return _covered(spans, len(n_views))


def body_speed(positions: np.ndarray, fps: float) -> np.ndarray:
    """``(M,)`` m/s: the speed of ``positions (M, 3)`` (metres, ``fps`` samples per second), central
    differences inside and one-sided at the ends; zeros for fewer than two samples."""
    positions = np.asarray(positions, dtype=np.float64)
    if len(positions) < 2:
        return np.zeros(len(positions))
    return np.linalg.norm(np.gradient(positions, axis=0), axis=-1) * fps


def aria_held_gaps(valid: np.ndarray, held: np.ndarray, positions: np.ndarray, fps: float,
                   cfg: TrustConfig) -> np.ndarray:  # fmt: skip
    """``(M,)`` bool: ``valid (M,)`` plus its gaps of at most ``cfg.max_aria_gap_s`` between valid runs
    where ``held (M,)`` (``head_held_by_aria``) in every frame of the gap and the fitted pelvis
    ``positions (M, 3)`` (metres) stays within ``cfg.max_aria_gap_travel_m`` of where it was in the frame
    before the gap, in every frame of the gap and the one after it. Gaps at the ends of the take (no
    valid run on one side) stay invalid."""
    valid = np.asarray(valid, dtype=bool)
    gaps = _gaps_between(np.array(valid_runs(valid), dtype=np.int64).reshape(-1, 2))
    gaps = gaps[(gaps[:, 1] - gaps[:, 0]) / fps <= cfg.max_aria_gap_s]
    if not len(gaps):
        return valid
    last_valid = np.maximum.accumulate(np.where(valid, np.arange(len(valid)), 0))  # the frame before a gap
    strays = ~np.asarray(held, dtype=bool) | ~_at_most(
        np.linalg.norm(positions - positions[last_valid], axis=-1), cfg.max_aria_gap_travel_m
    )  # (M,) in a gap: not held, or the pelvis too far from where it was before
    after = np.linalg.norm(positions[gaps[:, 1]] - positions[gaps[:, 0] - 1], axis=-1)  # the frame after it
    bridged = (_count_in(strays, gaps) == 0) & _at_most(after, cfg.max_aria_gap_travel_m)
    return valid | _covered(gaps[bridged], len(valid))


def eye_anchor_distance(joints: np.ndarray, cpf: np.ndarray, names) -> np.ndarray:
    """``(M,)`` metres from the fitted eye midpoint (``joints (M, 55 + K, 3)`` world metres, vertex
    keypoints named ``names``) to the Aria head anchor ``cpf (M, 3)``; NaN where either is unknown."""
    return np.linalg.norm(eye_midpoint(joints, tuple(names)) - cpf, axis=-1)


def eyes_off_anchor(distance: np.ndarray, max_m: float) -> np.ndarray:
    """``(M,)`` bool: frames whose ``eye_anchor_distance`` exceeds ``max_m``; False where it is unknown."""
    d = np.asarray(distance, dtype=np.float64)
    return np.isfinite(d) & ~_at_most(d, max_m)


def quality_flags(joints, valid, n_views, fps, eye_anchor_m, reproj_px=None, trusted=None,
                  max_eye_anchor_m: float = TrustConfig.max_eye_anchor_m,
                  swapped_pairs=None, twisted=None) -> dict[str, np.ndarray]:  # fmt: skip
    """Per-frame flags ``(M,)`` bool (stored, never used to delete frames), computed on the 22 body
    joints after 5-tap smoothing; speeds in physical units, so the rules do not depend on the rate.

    ``joints (M, 55 + K, 3)`` world metres, ``valid (M,)``, ``n_views (M,)`` views that support the frame
    (``ObservationSupport.n_views``), ``eye_anchor_m (M,)`` the fitted eyes' distance from the Aria head
    anchor (``eye_anchor_distance``, NaN unknown), ``reproj_px (M, V)`` mean reprojection error per view (NaN where
    unused), ``trusted (M, 17)`` per-joint trust (``joint_trusted``). Flags: ``FEW_CAMS`` (< 3 views),
    ``FAST_JOINT`` (a joint faster than 5 m/s), ``HIGH_ACCEL`` (above
    40 m/s^2), ``EYE_ARIA_FAR`` (eye midpoint more than ``max_eye_anchor_m`` from the anchor, valid or
    not: ``eyes_off_anchor`` makes such frames invalid), ``STATIC`` (no joint
    faster than 0.1 m/s within 1.5 s; informational), ``HIGH_REPROJ`` (median over the used views
    above 60 px), ``SHORT_SEGMENT`` (in a valid run shorter than 2 s), ``OCCLUDED`` (a valid frame with
    fewer than 10 of its 12 body landmarks, shoulders to ankles, trusted: parts of the body are guessed),
    ``LR_SWAPS`` (a valid frame in which the association swapped back two or more left/right pairs in
    each of two or more of the views the fit used, ``swapped_pairs (M, V)`` int, 0 for unused views:
    several views' sides needed correcting, and the fit's sides are uncertain there), ``NECK_TWIST`` (the fitted
    head turned farther from the shoulders than a neck turns it, ``twisted (M,)`` from ``neck_twisted``, valid or
    not: such frames are not valid).
    """
    body = convolve1d(np.nan_to_num(joints[:, :22]), SMOOTHING_TAPS, axis=0, mode="nearest")
    vel = np.zeros(len(body))
    acc = np.zeros(len(body))
    if len(body) >= 2:
        vel[1:] = np.linalg.norm(np.diff(body, axis=0), axis=-1).max(-1) * fps
    if len(body) >= 3:
        acc[1:-1] = np.linalg.norm(body[2:] - 2 * body[1:-1] + body[:-2], axis=-1).max(-1) * fps**2
    window = _samples(STATIC_WINDOW_S, fps)
    static = maximum_filter1d(vel, window, mode="nearest") < STATIC_M_S if len(vel) else np.zeros(0, bool)
    high_reproj = np.zeros(len(body), bool)
    if reproj_px is not None:
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # frames without any used view
            high_reproj = np.nanmedian(reproj_px, axis=1) > HIGH_REPROJ_PX
    short = np.zeros(len(body), bool)
    for a, b in valid_runs(valid):
        short[a:b] = (b - a) / fps < SHORT_SEGMENT_S
    return {
        "FEW_CAMS": n_views < MIN_CAMS,
        "FAST_JOINT": valid & (vel > FAST_JOINT_M_S),
        "HIGH_ACCEL": valid & (acc > HIGH_ACCEL_M_S2),
        "EYE_ARIA_FAR": eyes_off_anchor(eye_anchor_m, max_eye_anchor_m),
        "STATIC": valid & static,
        "HIGH_REPROJ": valid & high_reproj,
        "SHORT_SEGMENT": short,
        "OCCLUDED": valid & (trusted[:, list(COCO17_BODY)].sum(-1) < OCCLUDED_MIN_TRUSTED)
        if trusted is not None
        else np.zeros(len(body), bool),
        "LR_SWAPS": valid & ((np.asarray(swapped_pairs) >= LR_SWAPS_MIN_PAIRS).sum(-1) >= LR_SWAPS_MIN_VIEWS)
        if swapped_pairs is not None
        else np.zeros(len(body), bool),
        "NECK_TWIST": np.asarray(twisted, dtype=bool) if twisted is not None else np.zeros(len(body), bool),
    }


def trust_by_part(trusted: np.ndarray, valid: np.ndarray) -> dict[str, float | None]:
    """Per part of the body (``COCO17_PARTS``: torso, arms, legs, face), the share of its landmarks in the
    valid frames that are trusted (``trusted (M, 17)``, ``valid (M,)``); None without a valid frame."""
    t = np.asarray(trusted, dtype=bool)[np.asarray(valid, dtype=bool)]
    return {part: float(t[:, list(idx)].mean()) if len(t) else None for part, idx in COCO17_PARTS.items()}


def judged_flags(flags: dict[str, np.ndarray], n_frames: int) -> np.ndarray:
    """``(M,)`` bool: frames marked by any flag that judges the fit (``flags``: ``quality_flags``' output,
    ``(M,)`` bool each; all but the ``INFORMATIONAL_FLAGS``, which describe the motion)."""
    judged = [np.asarray(f, dtype=bool) for k, f in flags.items() if k not in INFORMATIONAL_FLAGS]
    return np.any(judged, axis=0) if judged else np.zeros(n_frames, bool)


def flag_shares(flags: dict[str, np.ndarray], valid: np.ndarray) -> dict[str, float | None]:
    """Per flag (``quality_flags``' output, ``(M,)`` bool each), the share of the valid frames it marks, and
    ``any`` for those ``judged_flags`` marks; None without a valid frame."""
    v = np.asarray(valid, dtype=bool)
    marked = {k: np.asarray(f, dtype=bool) for k, f in sorted(flags.items())} | {"any": judged_flags(flags, len(v))}
    return {k: float(f[v].mean()) if v.any() else None for k, f in marked.items()}
