"""Tracklets: one camera's detections linked from frame to frame by their keypoints.

Two detections of consecutive processed frames belong to the same person when their keypoints lie
close: the median distance over the keypoints both detect with confidence, in units of the earlier
box's height, at most ``max_step``. Links are made greedily, closest pair first, and one detection
continues at most one tracklet. Keypoints keep two people apart where boxes do not: when someone walks
in front of another, their boxes overlap (an IoU tracker may hand one's track to the other) while their
limbs do not.
"""

from __future__ import annotations

import numba
import numpy as np

from motionkit.common.nanstats import nan_median
from motionkit.geometry.points import finite_points, point_distance


def keypoint_steps(kp_a: np.ndarray, conf_a: np.ndarray, height_a: np.ndarray, kp_b: np.ndarray,
                   conf_b: np.ndarray, conf_min: float = 0.3, min_shared: int = 3) -> np.ndarray:  # fmt: skip
    """``(P,)`` how far each detection ``b`` lies from its detection ``a`` (pairs of rows): the median
    distance over the keypoints both detect with ``conf_min`` or more (``kp (P, 17, 2)`` pixels,
    ``conf (P, 17)``) divided by ``height_a (P,)`` (the earlier box's height, px); inf with fewer than
    ``min_shared``."""
    shared = (conf_a >= conf_min) & (conf_b >= conf_min) & finite_points(kp_a) & finite_points(kp_b)
    d = point_distance(kp_a, kp_b)  # (P, 17), NaN where not shared
    med = nan_median(np.where(shared, d, np.nan))  # NaN for pairs with nothing shared, replaced below
    return np.where(shared.sum(-1) >= min_shared, med / np.maximum(height_a, 1.0), np.inf)


def _consecutive_pairs(frame_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of positions ``(a, b)`` in ``frame_sorted (N,)`` (ascending) with
    ``frame_sorted[b] == frame_sorted[a] + 1``, grouped by the frame of ``b`` and ordered by ``a``, then
    ``b``, and each pair's frame group ``(P,)`` (the index of ``b``'s frame among the distinct ones)."""
    frames, start, size = np.unique(frame_sorted, return_index=True, return_counts=True)
    has_prev = np.r_[False, frames[1:] == frames[:-1] + 1]  # (G,)
    n_pairs = np.where(has_prev, size * np.r_[0, size[:-1]], 0)
    offsets = np.r_[0, np.cumsum(n_pairs)]
    g = np.repeat(np.arange(len(frames)), n_pairs)  # the group of b, per pair
    k = np.arange(offsets[-1]) - offsets[g]  # index of the pair within its group: i_a * size_b + i_b
    a = start[np.maximum(g - 1, 0)] + k // size[g]
    b = start[g] + k % size[g]
    return a, b, g


def link_tracklets(frame: np.ndarray, keypoints: np.ndarray, conf: np.ndarray, height: np.ndarray,
                   max_step: float = 0.1, conf_min: float = 0.3) -> np.ndarray:  # fmt: skip
    """``(N,)`` tracklet ids (0, 1, ...) of one camera's detections at processed-frame positions
    ``frame (N,)`` (keypoints ``(N, 17, 2)`` px, ``conf (N, 17)``, box ``height (N,)`` px): detections of
    consecutive frames whose keypoints lie within ``max_step`` box heights (``keypoint_steps``) are
    linked, closest pair first (module docstring)."""
    if not len(frame):
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(frame, kind="stable")
    a, b, group = _consecutive_pairs(frame[order])
    pa, pb = order[a], order[b]
    step = keypoint_steps(keypoints[pa], conf[pa], height[pa], keypoints[pb], conf[pb], conf_min)
    tried = np.lexsort((step, group))  # frame by frame, closest pair first (stable: ties in pair order)
    tried = tried[step[tried] <= max_step]
    return _greedy_links(order, pa[tried], pb[tried])


@numba.njit(cache=True)
def _greedy_links(order: np.ndarray, prev: np.ndarray, cur: np.ndarray) -> np.ndarray:
    """Tracklet ids ``(N,)`` from the candidate links ``prev[k] -> cur[k]`` (``(K,)`` detection indices,
    tried in that order: a link is made when neither end is linked yet on its side) and ``order (N,)``, the
    detections sorted by frame: a detection continues its linked predecessor's tracklet, or starts the
    next id (the tests hold a frame-by-frame reference)."""
    n = len(order)
    parent = np.full(n, -1, np.int64)
    prev_taken = np.zeros(n, np.bool_)
    for k in range(len(prev)):
        p, c = prev[k], cur[k]
        if not prev_taken[p] and parent[c] < 0:
            parent[c] = p
            prev_taken[p] = True
    ids = np.empty(n, np.int64)
    next_id = 0
    for i in order:
        if parent[i] < 0:
            ids[i] = next_id
            next_id += 1
        else:
            ids[i] = ids[parent[i]]
    return ids


def tracklet_medians(ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per detection, the median of ``values (N,)`` over its tracklet (``ids (N,)``, finite values only)
    and how many finite values that median has: ``(N,)``, ``(N,)`` (NaN and 0 where none)."""
    med = np.full(len(ids), np.nan)
    count = np.zeros(len(ids), dtype=np.int64)
    ok = np.isfinite(values)
    if not ok.any():
        return med, count
    order = np.lexsort((values[ok], ids[ok]))  # by tracklet, then value
    v, t = values[ok][order], ids[ok][order]
    starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])
    sizes = np.diff(np.r_[starts, len(t)])
    mid = starts + (sizes - 1) / 2.0
    per = 0.5 * (v[np.floor(mid).astype(int)] + v[np.ceil(mid).astype(int)])  # each sorted run's median
    k = np.searchsorted(t[starts], ids)  # the run of each detection's tracklet, if it has one
    has = (k < len(starts)) & (t[starts][np.minimum(k, len(starts) - 1)] == ids)
    med[has], count[has] = per[k[has]], sizes[k[has]]
    return med, count


def tracklets_beyond(frame: np.ndarray, keypoints: np.ndarray, conf: np.ndarray, height: np.ndarray,
                     values: np.ndarray, limit: float, min_count: int, max_step: float = 0.1,
                     conf_min: float = 0.3) -> np.ndarray:  # fmt: skip
    """``(N,)`` bool: the detection's tracklet (``link_tracklets`` of ``frame``, ``keypoints``, ``conf``,
    ``height``) has a median of ``values (N,)`` above ``limit`` over at least ``min_count`` finite values
    (``tracklet_medians``): the person is mostly somewhere else than the measure looks for."""
    return medians_beyond(link_tracklets(frame, keypoints, conf, height, max_step, conf_min), values, limit, min_count)


def medians_beyond(ids: np.ndarray, values: np.ndarray, limit: float, min_count: int) -> np.ndarray:
    """``(N,)`` bool: the detection's tracklet (``ids (N,)``) has a median of ``values (N,)`` above
    ``limit`` over at least ``min_count`` finite values (``tracklet_medians``)."""
    median, count = tracklet_medians(ids, values)
    return (count >= min_count) & (median > limit)
