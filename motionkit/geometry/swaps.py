"""Left/right label swaps of 2D keypoints, found by leave-one-out triangulation (docs/pipeline.md,
"associate").

2D keypoint models sometimes give a person's left wrist the right wrist's label, in one view and for
a few frames. Per frame, view and left/right pair: triangulate the pair from the other views only,
project it into this view, and compare this view's summed error with the labels as given (``e_o``)
and swapped (``e_s``). The pair is swapped when ``e_o > min_error_px`` and ``e_s < ratio * e_o``;
when most of the testable pairs of a view swap, the whole body is flipped (every pair, the ones too
close together or too rarely seen to be tested as well). A swapped view pulls the other views'
leave-one-out triangulations with it, so the views of a frame are corrected one at a time: of the
candidates, the view whose swap makes the frame most consistent first, each round testing again what
the last one corrected.

Where the other views cannot test a pair (it is seen in one or two views only), its labels are
followed in time instead (``temporal_lr_swaps``): between consecutive frames of one view, the pair's
two labels move little when the labelling is the same and jump by the pair's separation when it
changed. A short run of frames bounded by such jumps, within a stretch of frames that all link, has
the labelling of the shorter side and is swapped back. The whole body of a view is followed the same
way, its changes the frames where most pairs jump at once (a detector's flip of a body), and its runs
may be longer: where two views see the wearer, neither can be tested against the other.

The cross-view verdicts are also put to a vote in time (``vote_in_time``): a detector that labels a
pair continuously over a stretch of frames (the labels move little from frame to frame and would jump
if crossed) has labelled all of it right or all of it wrong, so the verdicts in such a stretch stand
only where they are not outnumbered by its frames whose labels the other views confirm (and, at the
weight ``temporal_vote_untested``, those they cannot judge). Far views that disagree with a third
by chance otherwise have its correct labels swapped for a few frames.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motionkit.conventions import COCO17_LEFT, COCO17_LR_PAIRS, COCO17_RIGHT
from motionkit.geometry.camera import CameraRig
from motionkit.geometry.triangulation import triangulate


@dataclass(frozen=True)
class SwapConfig:
    min_error_px: float = 35.0  # below this, the labels as given fit well enough
    ratio: float = 0.5  # swapped labels must halve the error
    consistency_cap_px: float = 200.0  # of the candidates, the view whose swap leaves the frame's summed
    # leave-one-out error (each keypoint's capped at this) smallest goes first
    whole_body: bool = True  # flip every pair of a view when most testable pairs swap
    temporal: bool = True  # then follow each pair's labels in time (``temporal_lr_swaps``)
    temporal_ratio: float = 0.5  # a labelling change: the crossed motion below this share of the straight one
    temporal_jump: float = 0.25  # frames link when the pair moves less than this share of the box height
    temporal_max_s: float = 0.4  # only runs this short (seconds) are swapped back
    temporal_body_max_s: float = 1.5  # ... or, where most pairs of a view change together, this short
    temporal_body_pairs: int = 3  # the pairs that must link, and change, for the whole body to (``temporal_lr_swaps``)
    temporal_vote: bool = True  # cross-view verdicts put to a vote along a view's steady labels (``vote_in_time``)
    temporal_vote_untested: float = 0.25  # ... in which a frame the other views cannot judge counts this much


def leave_one_out_projections(pixels: np.ndarray, conf: np.ndarray, rig: CameraRig) -> np.ndarray:
    """For each view, the joints triangulated from the other views, projected into it:
    ``pixels (F, V, J, 2)``, ``conf (F, V, J)`` -> ``(F, V, J, 2)`` (NaN where the other views do not
    triangulate the joint)."""
    F, V, J, _ = pixels.shape
    out = np.full((F, V, J, 2), np.nan)
    for v in range(V):  # a loop over cameras (a handful), each one batched triangulation
        others = conf.copy()
        others[:, v] = 0.0
        tri = triangulate(pixels, others, rig)
        out[:, v] = rig[v].project(np.where((tri.status == 0)[..., None], tri.points, np.nan))
    return out


def detect_lr_swaps(pixels: np.ndarray, conf: np.ndarray, rig: CameraRig, cfg: SwapConfig | None = None) -> np.ndarray:
    """``(F, V, P)`` bool: which of the ``P = len(COCO17_LR_PAIRS)`` left/right pairs to swap in each
    view (COCO-17 ``pixels (F, V, 17, 2)`` raw pixels, ``conf (F, V, 17)``, 0 where unused).

    One view of a frame is corrected at a time, in rounds: a swapped view pulls the other views'
    leave-one-out triangulations with it, and a view whose labels are right can then look swapped
    too. Each round finds the candidates (``cross_view_swaps``) and, in every frame with one, swaps
    the view whose candidates leave the frame most consistent (``leave_one_out_error``), then tests
    that frame again."""
    return _detect_lr_swaps(*_used(pixels, conf), rig, cfg or SwapConfig())[0]


def _used(pixels: np.ndarray, conf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pixels (F, V, 17, 2)`` NaN and ``conf (F, V, 17)`` 0 where a keypoint is unused (no confidence
    or not finite)."""
    used = (conf > 0) & np.isfinite(pixels).all(-1)
    return np.where(used[..., None], pixels, np.nan), np.where(used, conf, 0.0)


def _detect_lr_swaps(px: np.ndarray, w: np.ndarray, rig: CameraRig, cfg: SwapConfig) -> tuple[np.ndarray, np.ndarray]:
    """``detect_lr_swaps``'s verdicts on the used keypoints ``px``, ``w`` (``_used``) and, from its first
    round (the labels as given), the pairs whose labels the other views confirm
    (``cross_view_confirmed``), both ``(F, V, P)`` bool."""
    F, V = px.shape[:2]
    swap = np.zeros((F, V, len(COCO17_LR_PAIRS)), bool)
    todo = np.arange(F)
    confirmed = None
    for _ in range(V):  # at most one view a frame per round
        now_px, now_w = apply_lr_swaps(px[todo], swap[todo]), apply_lr_swaps(w[todo], swap[todo])
        e_o, e_s = cross_view_pair_errors(now_px, now_w, rig)
        if confirmed is None:
            confirmed = _confirmed(e_o, e_s, cfg)
        found = _swaps(now_px, e_o, e_s, cfg)
        todo, found, now_px, now_w = (x[found.any((1, 2))] for x in (todo, found, now_px, now_w))
        if not len(todo):
            break
        error = np.full((len(todo), V), np.inf)  # the frame's error with each view's candidates swapped
        for v in np.flatnonzero(found.any((0, 2))):
            has = found[:, v].any(-1)
            alone = found[has] & (np.arange(V) == v)[:, None]  # view v's candidates only
            error[has, v] = leave_one_out_error(
                apply_lr_swaps(now_px[has], alone), apply_lr_swaps(now_w[has], alone), rig, cfg
            )
        swap[todo] ^= found & (np.arange(V)[:, None] == np.argmin(error, axis=1)[:, None, None])
    return swap, confirmed


def cross_view_swaps(px: np.ndarray, conf: np.ndarray, rig: CameraRig, cfg: SwapConfig) -> np.ndarray:
    """``(F, V, P)`` bool, the candidates of one round of ``detect_lr_swaps`` in ``px (F, V, 17, 2)``
    (NaN where unused) with ``conf (F, V, 17)``: the pairs whose labels miss the other views'
    triangulation by more than ``cfg.min_error_px`` and swapped by less than ``cfg.ratio`` of that,
    and every present pair of a view where most of its testable pairs do (``cfg.whole_body``)."""
    return _swaps(px, *cross_view_pair_errors(px, conf, rig), cfg)


def _swaps(px: np.ndarray, e_o: np.ndarray, e_s: np.ndarray, cfg: SwapConfig) -> np.ndarray:
    """``cross_view_swaps`` from the pair errors ``e_o``, ``e_s`` (``cross_view_pair_errors``)."""
    testable = np.isfinite(e_o) & np.isfinite(e_s)
    with np.errstate(invalid="ignore"):
        swap = testable & (e_o > cfg.min_error_px) & (e_s < cfg.ratio * e_o)
    if cfg.whole_body:
        n_test = testable.sum(-1)
        body = (swap.sum(-1) * 2 > n_test) & (n_test >= 3)
        a, b = COCO17_LEFT, COCO17_RIGHT
        present = np.isfinite(px[..., a, 0]) | np.isfinite(px[..., b, 0])  # testable or not: a flip moves every label
        swap = np.where(body[..., None], present, swap)
    return swap


def cross_view_pair_errors(px: np.ndarray, conf: np.ndarray, rig: CameraRig) -> tuple[np.ndarray, np.ndarray]:
    """``(e_o, e_s)``, each ``(F, V, P)`` pixels: how far each view's left/right pair in ``px (F, V, 17,
    2)`` (NaN where unused; ``conf (F, V, 17)``) lies from the other views' triangulation of it
    (``leave_one_out_projections``), summed over the pair's two joints, with the labels as given and
    swapped (NaN where either is missing)."""
    proj = leave_one_out_projections(px, conf, rig)
    a, b = COCO17_LEFT, COCO17_RIGHT

    def err(x, y):
        return np.linalg.norm(px[..., x, :] - proj[..., y, :], axis=-1)

    return err(a, a) + err(b, b), err(a, b) + err(b, a)


def leave_one_out_error(px: np.ndarray, conf: np.ndarray, rig: CameraRig, cfg: SwapConfig) -> np.ndarray:
    """``(F,)`` pixels: how far the left/right keypoints of every view of a frame lie from the other
    views' triangulation of them (``leave_one_out_projections``), each distance capped at
    ``cfg.consistency_cap_px`` (a joint the other views cannot place counts 0), summed over the frame."""
    sided = list(COCO17_LEFT) + list(COCO17_RIGHT)
    e = np.linalg.norm(px[..., sided, :] - leave_one_out_projections(px, conf, rig)[..., sided, :], axis=-1)
    return np.where(np.isfinite(e), np.minimum(e, cfg.consistency_cap_px), 0.0).sum((1, 2))


def temporal_lr_swaps(
    pixels: np.ndarray,
    box_height: np.ndarray,
    linked: np.ndarray,
    max_frames: int,
    cfg: SwapConfig | None = None,
    keep: np.ndarray | None = None,
    max_body_frames: int = 0,
) -> np.ndarray:
    """``(F, V, P)`` bool: the short runs of frames whose left/right labels changed twice in time.

    Args:
        pixels: ``(F, V, 17, 2)`` COCO-17 raw pixels, NaN where missing (already corrected by
            ``detect_lr_swaps``).
        box_height: ``(F, V)`` pixels, the height of the box the keypoints belong to (NaN: none).
        linked: ``(F - 1,)`` bool, whether frames ``f`` and ``f + 1`` are consecutive samples.
        max_frames: the longest run of one pair that is swapped back.
        keep: ``(F, V, P)`` bool, frames whose labelling stays as it is (``detect_lr_swaps``'s verdicts):
            a run that holds one is left alone.
        max_body_frames: the longest run of the whole body that is swapped back (0: none).

    Per view and pair, consecutive frames link when both labels are present in both and the pair
    moves less than ``temporal_jump`` box heights (either way of labelling it); a link is a change of
    labelling when the crossed motion ``|a_t - b_{t-1}| + |b_t - a_{t-1}|`` is below
    ``temporal_ratio`` times the straight one. Within a chain of linked frames, runs between changes
    alternate in labelling; the parity that covers fewer frames is the wrong one, and its runs that
    are bounded by changes on both sides and at most ``max_frames`` long are returned. The whole body
    of a view is followed the same way, its frames linked where ``temporal_body_pairs`` or more pairs
    link, a change where that many pairs change and they are most of the linked ones (a detector that
    flips the whole body flips every pair in the same frame; two arms swapped together are not most
    of a body): its wrong runs of at most ``max_body_frames`` have every pair swapped.
    """
    cfg = cfg or SwapConfig()
    link, change, _ = label_links(pixels, box_height, linked, cfg)
    out = _minority_runs(link, change, keep, max_frames)
    if max_body_frames > 0:
        n_link, n_change = link.sum(-1, keepdims=True), change.sum(-1, keepdims=True)  # (F - 1, V, 1)
        body_link = n_link >= cfg.temporal_body_pairs
        body_change = body_link & (n_change >= cfg.temporal_body_pairs) & (2 * n_change > n_link)
        body_keep = None if keep is None else keep.any(-1, keepdims=True)
        out |= _minority_runs(body_link, body_change, body_keep, max_body_frames)
    return out


def label_links(
    pixels: np.ndarray, box_height: np.ndarray, linked: np.ndarray, cfg: SwapConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(link, change, steady)``, each ``(F - 1, V, P)`` bool, between frames ``f`` and ``f + 1`` of
    each view and left/right pair (arguments as for ``temporal_lr_swaps``): both labels present in both
    frames, ``linked``, and the pair moving less than ``cfg.temporal_jump`` box heights either way of
    labelling it; of the links, a change of labelling where the crossed motion ``|a_t - b_{t-1}| +
    |b_t - a_{t-1}|`` is below ``cfg.temporal_ratio`` times the straight one, steady where the straight
    one is below that share of the crossed one (neither: the pair too close together to tell)."""
    pa, pb = pixels[:, :, COCO17_LEFT], pixels[:, :, COCO17_RIGHT]  # (F, V, P, 2)
    both = np.isfinite(pa).all(-1) & np.isfinite(pb).all(-1)
    straight = np.linalg.norm(pa[1:] - pa[:-1], axis=-1) + np.linalg.norm(pb[1:] - pb[:-1], axis=-1)
    crossed = np.linalg.norm(pa[1:] - pb[:-1], axis=-1) + np.linalg.norm(pb[1:] - pa[:-1], axis=-1)
    height = np.fmin(box_height[1:], box_height[:-1])[..., None]
    with np.errstate(invalid="ignore"):
        link = both[1:] & both[:-1] & linked[:, None, None] & (np.fmin(straight, crossed) < cfg.temporal_jump * height)
        change = link & (crossed < cfg.temporal_ratio * straight)
        steady = link & (straight < cfg.temporal_ratio * crossed)
    return link, change, steady


def cross_view_confirmed(px: np.ndarray, conf: np.ndarray, rig: CameraRig, cfg: SwapConfig) -> np.ndarray:
    """``(F, V, P)`` bool: the pairs of ``px (F, V, 17, 2)`` (NaN where unused; ``conf (F, V, 17)``)
    whose labels the other views confirm, the mirror of ``cross_view_swaps``' test: as given they miss
    the other views' triangulation by less than ``cfg.ratio`` of what swapped labels would
    (``cross_view_pair_errors``). A pair too close together in the view, or too far from the camera, to
    tell apart is neither swapped nor confirmed."""
    return _confirmed(*cross_view_pair_errors(px, conf, rig), cfg)


def _confirmed(e_o: np.ndarray, e_s: np.ndarray, cfg: SwapConfig) -> np.ndarray:
    """``cross_view_confirmed`` from the pair errors ``e_o``, ``e_s`` (``cross_view_pair_errors``)."""
    with np.errstate(invalid="ignore"):
        return e_o < cfg.ratio * e_s


def vote_in_time(verdicts: np.ndarray, steady: np.ndarray, confirmed: np.ndarray, untested_vote: float) -> np.ndarray:
    """``verdicts (F, V, P)`` bool (``detect_lr_swaps``'s) less those outvoted in time: along each
    stretch of frames that ``steady (F - 1, V, P)`` (``label_links``) joins, the detector's labels
    are continuous, all right or all wrong, and its verdicts stand only where they are at least as many
    as its frames whose labels the other views ``confirmed (F, V, P)`` (``cross_view_confirmed``), each
    other frame without a verdict counting ``untested_vote`` of a confirmed one (a detector labels most
    pairs right)."""
    F, V, P = verdicts.shape
    joined = _rows(np.concatenate([np.zeros((1, V, P), bool), steady]))  # frame f joined to f - 1
    stretch = np.cumsum(~joined) - 1
    swap = _rows(verdicts)
    n = stretch[-1] + 1
    n_swapped = np.bincount(stretch, swap, n)
    right = _rows(confirmed) & ~swap
    n_right = np.bincount(stretch, right, n) + untested_vote * np.bincount(stretch, ~right & ~swap, n)
    out = swap & (n_swapped >= n_right)[stretch]
    return np.moveaxis(out.reshape(V, P, F), -1, 0)


def _minority_runs(link: np.ndarray, change: np.ndarray, keep: np.ndarray | None, max_frames: int) -> np.ndarray:
    """``(F, V, P)`` bool, ``temporal_lr_swaps``'s runs from ``link``, ``change (F - 1, V, P)`` bool (frames
    ``f`` and ``f + 1`` linked, their labelling changed) and ``keep (F, V, P)``: in each chain of linked
    frames the runs of the parity that covers fewer frames, bounded by changes on both sides, at most
    ``max_frames`` long and holding no ``keep``."""
    F, V, P = link.shape[0] + 1, link.shape[1], link.shape[2]
    # every (view, pair) a row of frames, the rows laid end to end: chain and run ids are global
    link_in = _rows(np.concatenate([np.zeros((1, V, P), bool), link]))  # frame f linked to f - 1
    change_in = _rows(np.concatenate([np.zeros((1, V, P), bool), change]))
    chain_start = ~link_in
    run_start = chain_start | change_in
    chain = np.cumsum(chain_start) - 1
    run = np.cumsum(run_start) - 1
    n_changes = np.cumsum(change_in)
    parity = (n_changes - n_changes[chain_start][chain]) % 2
    per_chain = np.stack([np.bincount(chain, parity == k, chain[-1] + 1) for k in (0, 1)], 1)
    wrong = np.where(per_chain[:, 0] > per_chain[:, 1], 1, np.where(per_chain[:, 1] > per_chain[:, 0], 0, -1))
    chain_end = np.append(chain_start[1:], True)
    n_runs = run[-1] + 1
    held = np.bincount(run, _rows(keep), n_runs) > 0 if keep is not None else np.zeros(n_runs, bool)
    inner = (np.bincount(run, chain_start, n_runs) == 0) & (np.bincount(run, chain_end, n_runs) == 0)
    short = np.bincount(run, minlength=n_runs) <= max_frames
    out = (parity == wrong[chain]) & (inner & short & ~held)[run]
    return np.moveaxis(out.reshape(V, P, F), -1, 0)


def _rows(x: np.ndarray) -> np.ndarray:
    """``(F, V, P)`` -> ``(V * P * F,)``: each (view, pair)'s frames in a row, the rows end to end."""
    return np.moveaxis(x, 0, -1).ravel()


def find_lr_swaps(
    pixels: np.ndarray,
    conf: np.ndarray,
    rig: CameraRig,
    box_height: np.ndarray,
    time_s: np.ndarray,
    cfg: SwapConfig | None = None,
) -> np.ndarray:
    """``(F, V, P)`` bool: the left/right pairs to swap, by ``detect_lr_swaps`` across views and then,
    where ``cfg.temporal``, in time: the cross-view verdicts put to a vote (``vote_in_time``, where
    ``cfg.temporal_vote``) and the short runs of changed labels swapped back (``temporal_lr_swaps``)
    (``time_s (F,)`` seconds of the frames, ``box_height (F, V)`` pixels; the other arguments as for
    ``detect_lr_swaps``)."""
    cfg = cfg or SwapConfig()
    raw, w = _used(pixels, conf)
    swap, confirmed = _detect_lr_swaps(raw, w, rig, cfg)
    if not cfg.temporal or len(time_s) < 3:
        return swap
    dt = np.diff(time_s)
    step = float(np.median(dt))
    linked = dt < 1.5 * step
    if cfg.temporal_vote:
        steady = label_links(raw, box_height, linked, cfg)[2]
        swap = vote_in_time(swap, steady, confirmed, cfg.temporal_vote_untested)
    max_frames = max(int(round(cfg.temporal_max_s / step)), 1)
    max_body_frames = int(round(cfg.temporal_body_max_s / step))
    corrected = apply_lr_swaps(raw, swap)
    return swap | temporal_lr_swaps(corrected, box_height, linked, max_frames, cfg, swap, max_body_frames)


def apply_lr_swaps(values: np.ndarray, swap: np.ndarray) -> np.ndarray:
    """``values (F, V, 17, ...)`` with the labels of the pairs in ``swap (F, V, P)`` exchanged."""
    out = values.copy()
    for p, (a, b) in enumerate(COCO17_LR_PAIRS):
        s = swap[..., p]
        out[s, a], out[s, b] = values[s, b], values[s, a]
    return out


def swapped_pair_count(bits: np.ndarray) -> np.ndarray:
    """``(F, V)`` int: how many left/right pairs ``association/swap`` bits ``(F, V)`` (``swap_bits``) swap."""
    bits = np.asarray(bits, dtype=np.int64)
    return ((bits[..., None] >> np.arange(len(COCO17_LR_PAIRS))) & 1).sum(-1)


def swap_bits(swap: np.ndarray) -> np.ndarray:
    """``(F, V, P)`` bool -> ``(F, V)`` int32, bit ``p`` set when pair ``COCO17_LR_PAIRS[p]`` was swapped."""
    return (swap.astype(np.int32) << np.arange(swap.shape[-1], dtype=np.int32)).sum(-1).astype(np.int32)
