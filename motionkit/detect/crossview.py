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
  selection with too few confident keypoints to tell stays (the wearer half hidden, say).

Selected camera-frames get the reason ``CROSS_VIEW`` and the association confidence
``score x (1 - error / max_error)``. The rescued views do not feed the check of the others (one pass).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from motionkit.conventions import COCO17_FLIP, COCO17_LR_PAIRS
from motionkit.data.observations import Observations
from motionkit.detect.association import Association, editable_arrays, observation_cells, put_rows
from motionkit.geometry.camera import CameraRig
from motionkit.geometry.triangulation import triangulate

CROSS_VIEW = "CROSS_VIEW"


@dataclass(frozen=True)
class CrossViewConfig:
    """``max_error``: median keypoint distance (fraction of the projected body's height) under which a
    candidate matches the other views' wearer; ``switch_error``: a selection farther than this is
    replaced when exactly one candidate matches; ``min_joints``: keypoints compared at least (each
    triangulated from the other views and detected with ``conf_min``); ``det_min_score``: candidates'
    detection score."""

    max_error: float = 0.05
    switch_error: float = 0.15
    min_joints: int = 5
    conf_min: float = 0.3
    det_min_score: float = 0.5

    def __post_init__(self) -> None:
        if not (0 < self.max_error < self.switch_error and self.min_joints >= 3):
            raise ValueError(f"cross-view check needs 0 < max_error < switch_error and min_joints >= 3; got {self}")


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
    for kp, c in ((keypoints, conf), (keypoints[:, COCO17_FLIP], conf[:, COCO17_FLIP])):
        use = known & (c >= cfg.conf_min) & np.isfinite(kp).all(-1)
        dist.append(np.where(use, np.linalg.norm(np.nan_to_num(kp) - np.nan_to_num(projected), axis=-1), np.nan))
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
    out[enough] = np.nanmedian(d[enough], 1) / height[enough]  # min_joints values in each of these rows
    return out


def cross_view_check(assoc: Association, obs: Observations, rig: CameraRig,
                     cfg: CrossViewConfig | None = None) -> Association:  # fmt: skip
    """``assoc`` with views rescued or corrected by the other views' wearer (module docstring)."""
    cfg = cfg or CrossViewConfig()
    F, V = assoc.det_index.shape
    selected = assoc.selected
    conf = np.where(selected[..., None], assoc.confidence, 0.0)
    fi, vi = observation_cells(assoc.frame_index, obs, rig)
    rows = np.flatnonzero((fi >= 0) & (vi >= 0) & (obs.score >= cfg.det_min_score))
    choice = np.full((F, V), -1)
    choice_err = np.full((F, V), np.inf)
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
        n_match = np.bincount(f[err <= cfg.max_error], minlength=F)
        sel_err = np.full(F, np.inf)  # the current selection's error (inf: none)
        is_sel = assoc.det_index[f, v] == r
        sel_err[f[is_sel]] = err[is_sel]
        # a selection with too few confident keypoints to tell (inf) stays: it may be the wearer half hidden
        decide = (n_match == 1) & (~selected[:, v] | (np.isfinite(sel_err) & (sel_err > cfg.switch_error)))
        best = decide[f] & (err <= cfg.max_error)
        choice[f[best], v], choice_err[f[best], v] = r[best], err[best]
    chosen = choice >= 0
    if not chosen.any():
        return assoc
    out = editable_arrays(assoc)
    r = choice[chosen]
    put_rows(out, obs, chosen, r, obs.score[r] * (1.0 - choice_err[chosen] / cfg.max_error), CROSS_VIEW)
    return Association(**{**assoc.__dict__, **out})
