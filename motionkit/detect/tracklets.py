"""Tracklets: one camera's detections linked from frame to frame by their keypoints.

Two detections of consecutive processed frames belong to the same person when their keypoints lie
close: the median distance over the keypoints both detect with confidence, in units of the earlier
box's height, at most ``max_step``. Links are made greedily, closest pair first, and one detection
continues at most one tracklet. Keypoints keep two people apart where boxes do not: when someone walks
in front of another, their boxes overlap (an IoU tracker may hand one's track to the other) while their
limbs do not.
"""

from __future__ import annotations

import warnings

import numpy as np


def keypoint_steps(kp_a: np.ndarray, conf_a: np.ndarray, height_a: np.ndarray, kp_b: np.ndarray,
                   conf_b: np.ndarray, conf_min: float = 0.3, min_shared: int = 3) -> np.ndarray:  # fmt: skip
    """``(A, B)`` how far each detection ``b`` lies from each detection ``a``: the median distance over
    the keypoints both detect with ``conf_min`` or more (``kp (., 17, 2)`` pixels, ``conf (., 17)``)
    divided by ``height_a (A,)`` (the earlier box's height, px); inf with fewer than ``min_shared``."""
    shared = (conf_a[:, None] >= conf_min) & (conf_b[None] >= conf_min)  # (A, B, 17)
    shared &= np.isfinite(kp_a).all(-1)[:, None] & np.isfinite(kp_b).all(-1)[None]
    d = np.linalg.norm(np.nan_to_num(kp_a)[:, None] - np.nan_to_num(kp_b)[None], axis=-1)
    with warnings.catch_warnings():  # pairs with nothing shared: all-NaN median, replaced below
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(np.where(shared, d, np.nan), axis=-1)
    return np.where(shared.sum(-1) >= min_shared, med / np.maximum(height_a, 1.0)[:, None], np.inf)


def link_tracklets(frame: np.ndarray, keypoints: np.ndarray, conf: np.ndarray, height: np.ndarray,
                   max_step: float = 0.1, conf_min: float = 0.3) -> np.ndarray:  # fmt: skip
    """``(N,)`` tracklet ids (0, 1, ...) of one camera's detections at processed-frame positions
    ``frame (N,)`` (keypoints ``(N, 17, 2)`` px, ``conf (N, 17)``, box ``height (N,)`` px): detections of
    consecutive frames whose keypoints lie within ``max_step`` box heights (``keypoint_steps``) are
    linked, closest pair first (module docstring)."""
    n = len(frame)
    ids = np.full(n, -1, dtype=np.int64)
    order = np.argsort(frame, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(frame[order]) != 0, True])
    prev = np.zeros(0, dtype=np.int64)
    next_id = 0
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        cur = order[lo:hi]
        if len(prev) and frame[prev[0]] == frame[cur[0]] - 1:
            step = keypoint_steps(keypoints[prev], conf[prev], height[prev], keypoints[cur], conf[cur], conf_min)
            taken_prev, taken_cur = np.zeros(len(prev), bool), np.zeros(len(cur), bool)
            for k in np.argsort(step, axis=None, kind="stable"):
                p, c = divmod(int(k), len(cur))
                if step[p, c] > max_step:
                    break
                if not (taken_prev[p] or taken_cur[c]):
                    ids[cur[c]] = ids[prev[p]]
                    taken_prev[p] = taken_cur[c] = True
        fresh = cur[ids[cur] < 0]
        ids[fresh] = np.arange(next_id, next_id + len(fresh))
        next_id += len(fresh)
        prev = cur
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
    ids = link_tracklets(frame, keypoints, conf, height, max_step, conf_min)
    median, count = tracklet_medians(ids, values)
    return (count >= min_count) & (median > limit)
