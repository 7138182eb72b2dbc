"""Cross-view check of the wearer's selection (docs/pipeline.md, "associate").

The SOMA rule decides each view alone, from the head anchor and the ground contact. Where it finds
nobody (a face turned away, a wearer bending towards the camera whose feet look like someone in front)
or picks someone else, the other views usually know better: the wearer they selected, triangulated
without the view in question and projected into it, lies on the wearer's detection there and on no
one else's. For every view this module triangulates the wearer from the other views (leave-one-out),
measures each candidate detection against that projection (the median keypoint distance, in units of
the projected body's height, each left/right pair under the labelling that fits it), and

- selects the one candidate that matches (``max_error``) where nothing was selected;
- replaces a selection that matches badly (``switch_error``) by the one candidate that matches; a
  selection with too few confident keypoints to tell stays (the wearer half hidden, say);
- sets aside every detection of a tracklet (``detect.tracklets``: the camera's detections linked frame
  to frame) that lies farther than ``tracklet_error`` from the projection in most of the frames where it
  can be compared (at least ``tracklet_min_frames``): that person is someone else throughout, also where
  he stands in line with the wearer along the camera's rays and one frame's error cannot tell them
  apart. Such a selection is replaced by the one candidate that matches, or dropped, unless it matches
  (``max_error``) in its own frame: a tracklet that passed from the wearer to someone else (or back)
  keeps the wearer's part. A selection that cannot be compared in its own frame goes only on firmer
  evidence: where the other views' wearer rests on two views only (no third view checks it), the
  tracklet's error must exceed ``tracklet_two_view_error`` instead.

Selected camera-frames get the reason ``CROSS_VIEW`` and the association confidence
``score x (1 - error / max_error)``; dropped ones ``CROSS_VIEW_OTHER``. The rescued views do not feed the
check of the others (one pass).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from motionkit.common.nanstats import nan_median
from motionkit.conventions import COCO17_FLIP, COCO17_LR_PAIRS
from motionkit.data.observations import Observations
from motionkit.detect.association import Association, clear_rows, editable_arrays, observation_cells, put_rows
from motionkit.detect.tracklets import link_tracklets, medians_beyond
from motionkit.geometry.camera import CameraRig
from motionkit.geometry.points import finite_points, point_distance
from motionkit.geometry.triangulation import triangulate

CROSS_VIEW = "CROSS_VIEW"
CROSS_VIEW_OTHER = "CROSS_VIEW_OTHER"


@dataclass(frozen=True)
class CrossViewConfig:
    """``max_error``: median keypoint distance (fraction of the projected body's height) under which a
    candidate matches the other views' wearer; ``switch_error``: a selection farther than this is
    replaced when exactly one candidate matches; ``min_joints``: keypoints compared at least (each
    triangulated from the other views and detected with ``conf_min``); ``det_min_score``: candidates'
    detection score; ``tracklet_error``: a tracklet whose median error, over at least
    ``tracklet_min_frames`` compared frames, exceeds this is someone else (0 turns it off);
    ``tracklet_two_view_error``: the limit that takes its place, for the tracklet's selections that cannot
    be compared in their own frame, in the compared frames whose other-views' wearer rests on two views
    only."""

    max_error: float = 0.05
    switch_error: float = 0.15
    min_joints: int = 5
    conf_min: float = 0.3
    det_min_score: float = 0.5
    tracklet_error: float = 0.12
    tracklet_min_frames: int = 3
    tracklet_two_view_error: float = 0.24

    def __post_init__(self) -> None:
        if not (0 < self.max_error < self.switch_error and self.min_joints >= 3):
            raise ValueError(f"cross-view check needs 0 < max_error < switch_error and min_joints >= 3; got {self}")
        if (
            not (self.tracklet_error == 0 or self.max_error < self.tracklet_error <= self.tracklet_two_view_error)
            or self.tracklet_min_frames < 1
        ):
            raise ValueError(f"cross-view check needs tracklet_error 0 (off) or between max_error and "
                             f"tracklet_two_view_error, and tracklet_min_frames >= 1; got {self}")  # fmt: skip


def match_errors(keypoints: np.ndarray, conf: np.ndarray, projected: np.ndarray, known: np.ndarray,
                 cfg: CrossViewConfig) -> np.ndarray:  # fmt: skip
    """``(N,)`` how far each detection's ``keypoints (N, 17, 2)`` (``conf (N, 17)``) lie from the
    wearer ``projected (N, 17, 2)`` where ``known (N, 17)``: the median distance over the compared
    keypoints divided by the projection's height (its largest extent), each left/right pair under the
    labelling that fits it better (2D detectors swap pairs one at a time, and a whole-body flip is
    every pair swapped); inf with fewer than ``min_joints`` compared keypoints."""
    pts = np.where(known[..., None], projected, np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():  # rows with nothing known: NaN height
        warnings.simplefilter("ignore", RuntimeWarning)
        height = np.max(np.nanmax(pts, 1) - np.nanmin(pts, 1), -1)  # (N,)
    dist, usable = [], []
    target = np.nan_to_num(projected)
    for kp, c in ((keypoints, conf), (keypoints[:, COCO17_FLIP], conf[:, COCO17_FLIP])):
        use = known & (c >= cfg.conf_min) & finite_points(kp)
        dist.append(np.where(use, point_distance(kp, target), np.nan))
        usable.append(use)
    with warnings.catch_warnings():  # a pair with nothing usable: all-NaN mean
        warnings.simplefilter("ignore", RuntimeWarning)
        pair = np.array(COCO17_LR_PAIRS)  # (P, 2)
        better = np.nanmean(dist[1][:, pair], -1) < np.nanmean(dist[0][:, pair], -1)  # (N, P)
    swap_pair = better & (usable[1][:, pair].sum(-1) >= usable[0][:, pair].sum(-1))  # never fewer keypoints
    swap = np.zeros(dist[0].shape, dtype=bool)
    swap[:, pair[:, 0]] = swap[:, pair[:, 1]] = swap_pair
    d = np.where(swap, dist[1], dist[0])
    use = np.where(swap, usable[1], usable[0])
    enough = (use.sum(1) >= cfg.min_joints) & (height > 0)
    out = np.full(len(keypoints), np.inf)
    out[enough] = nan_median(d[enough]) / height[enough]  # min_joints values in each of these rows
    return out


def other_tracklets(frame: np.ndarray, rows: np.ndarray, obs: Observations, err: np.ndarray, two_view: np.ndarray,
                    cfg: CrossViewConfig, max_step: float) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """For one camera's candidate ``rows (N,)`` of the observation table at processed-frame positions
    ``frame (N,)`` with match errors ``err (N,)`` (``match_errors``), their tracklets linked with
    ``max_step`` (``tracklets.link_tracklets``): ``(N,)`` bool, the tracklet lies more than
    ``tracklet_error`` from the other views' wearer in most of its at least ``tracklet_min_frames``
    compared frames; and ``(N,)`` bool, it does so on firm evidence: with the errors of the frames where
    that wearer rests on two views only (``two_view (N,)``) scaled by ``tracklet_error /
    tracklet_two_view_error``."""
    none = np.zeros(len(rows), dtype=bool)
    if cfg.tracklet_error <= 0 or not len(rows):
        return none, none
    box = obs.box[rows]
    ids = link_tracklets(frame, obs.keypoints[rows], obs.keypoint_conf[rows], box[:, 3] - box[:, 1], max_step,
                         cfg.conf_min)  # fmt: skip
    scaled = np.where(two_view, err * (cfg.tracklet_error / cfg.tracklet_two_view_error), err)
    other, firm = (medians_beyond(ids, e, cfg.tracklet_error, cfg.tracklet_min_frames) for e in (err, scaled))
    return other, other & firm


def cross_view_check(assoc: Association, obs: Observations, rig: CameraRig, cfg: CrossViewConfig | None = None,
                     tracklet_max_step: float = 0.1) -> Association:  # fmt: skip
    """``assoc`` with views rescued, corrected or dropped by the other views' wearer (module docstring);
    ``tracklet_max_step`` links each camera's detections into tracklets (``AssociationConfig``)."""
    cfg = cfg or CrossViewConfig()
    F, V = assoc.det_index.shape
    selected = assoc.selected
    conf = np.where(selected[..., None], assoc.confidence, 0.0)
    fi, vi = observation_cells(assoc.frame_index, obs, rig)
    rows = np.flatnonzero((fi >= 0) & (vi >= 0) & (obs.score >= cfg.det_min_score))
    choice = np.full((F, V), -1)
    choice_err = np.full((F, V), np.inf)
    drop = np.zeros((F, V), dtype=bool)
    for v in range(V):
        others = conf.copy()
        others[:, v] = 0.0
        if ((others > 0).any(-1).sum(1) < 2).all():
            continue
        tri = triangulate(assoc.keypoints, others, rig)
        known = tri.status == 0  # (F, 17)
        projected = rig[v].project(np.nan_to_num(tri.points))  # (F, 17, 2)
        r = rows[vi[rows] == v]
        f = fi[r]
        err = match_errors(obs.keypoints[r], obs.keypoint_conf[r], projected[f], known[f], cfg)
        two_view = (tri.n_views >= 3).sum(1) < cfg.min_joints  # (F,) no third view checks the wearer
        other, firm = other_tracklets(f, r, obs, err, two_view[f], cfg, tracklet_max_step)
        match = (err <= cfg.max_error) & ~other
        # a selection that matches in its own frame stays; one that cannot be compared there, unless firm
        set_aside = other & (err > cfg.max_error) & (np.isfinite(err) | firm)
        n_match = np.bincount(f[match], minlength=F)
        sel_err = np.full(F, np.inf)  # the current selection's error (inf: none)
        is_sel = assoc.det_index[f, v] == r
        sel_err[f[is_sel]] = err[is_sel]
        sel_set_aside = np.zeros(F, dtype=bool)
        sel_set_aside[f[is_sel]] = set_aside[is_sel]
        # a selection with too few confident keypoints to tell (inf) stays unless its tracklet is someone
        # else's: it may be the wearer half hidden
        bad = sel_set_aside | (np.isfinite(sel_err) & (sel_err > cfg.switch_error))
        decide = (n_match == 1) & (~selected[:, v] | bad)
        best = decide[f] & match
        choice[f[best], v], choice_err[f[best], v] = r[best], err[best]
        drop[:, v] = sel_set_aside & (n_match != 1)
    chosen = choice >= 0
    if not (chosen.any() or drop.any()):
        return assoc
    out = editable_arrays(assoc)
    r = choice[chosen]
    put_rows(out, obs, chosen, r, obs.score[r] * (1.0 - choice_err[chosen] / cfg.max_error), CROSS_VIEW)
    clear_rows(out, drop, CROSS_VIEW_OTHER)
    return Association(**{**assoc.__dict__, **out})
