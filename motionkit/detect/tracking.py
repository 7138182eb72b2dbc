"""The wearer's track through one camera's frames: pass 2 of the SOMA rule (``association.select_wearer``),
compiled with Numba.

Frame by frame, in time order: where the head anchor is in view, the box that overlaps the previous
selection (IoU) is kept while its head stays within ``tau`` of the anchor and no candidate's head is
``switch_ratio`` times nearer; otherwise the candidate whose head is nearest the anchor within ``tau``,
or the one candidate whose feet lie right below it (a hidden face). Where the anchor is not in view,
the track is carried by IoU alone for up to ``max_blind`` frames. Candidates with a rejection flag are
never taken; a blind frame considers only the box that overlaps the track most. The outcome of each
frame is one of ``TRACK_CODES``.
"""

from __future__ import annotations

import numba
import numpy as np

# what happened at each frame: ANCHOR is the anchor not in view (its own reason then: no Aria pose, or
# out of the camera's view); the others are the association's reason strings
TRACK_CODES = ("", "ANCHOR", "TRACKED_BLIND", "NO_DETECTIONS", "TRACKED", "REDETECT", "DRIFT_REDETECT",
               "GROUND_MATCH", "NO_DET_NEAR_ANCHOR")  # fmt: skip
_ANCHOR, _BLIND, _NO_DETECTIONS, _TRACKED, _REDETECT, _DRIFT, _GROUND, _NO_NEAR = range(1, 9)


@numba.njit(cache=True)
def _iou(a: np.ndarray, b: np.ndarray) -> float:
    """``geometry.boxes.box_iou`` of two boxes ``(4,)``, the same operations in the same order."""
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[2], b[2]), min(a[3], b[3])
    w, h = x1 - x0, y1 - y0
    inter = (w if w > 0.0 else 0.0) * (h if h > 0.0 else 0.0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / (union if union > 1e-9 else 1e-9)


@numba.njit(cache=True)
def track_camera(first: np.ndarray, anchor_in_view: np.ndarray, boxes: np.ndarray, rejected: np.ndarray,
                 delta: np.ndarray, foot_off: np.ndarray, score: np.ndarray, tau: float, max_blind: int,
                 iou_track: float, switch_ratio: float, ground_match_m: float, tau_max_px: float,
                 ambiguity_ratio: float, ambiguous_flag: int):  # fmt: skip
    """One camera's track over ``F`` frames (module docstring).

    The camera's candidates, sorted by frame: ``first (F + 1,)`` the first candidate of each frame
    (``first[F]`` ends them), their ``boxes (N, 4)`` pixels, ``rejected (N,)`` flag bits (0: may be
    the wearer), ``delta (N,)`` pixel distance of their head from the anchor's (NaN unknown),
    ``foot_off (N,)`` metres of their feet from below the anchor, ``score (N,)`` detection scores;
    ``anchor_in_view (F,)``; ``tau`` the camera's head threshold (px); the rules' parameters as
    ``AssociationConfig`` names them (``max_blind_frames``, ``iou_track``, ``track_switch_ratio``,
    ``ground_match_m``, ``tau_max_px``, ``ambiguity_ratio``), and the flag bit of a frame where another
    candidate's head lies nearly as near the anchor (``ambiguous_flag``).

    Returns ``(chosen (F,) candidate or -1, code (F,) index into TRACK_CODES, assoc_conf (F,),
    head_px (F,) the chosen head's distance from the anchor (NaN where none or carried blind),
    flags (F,) rejection bits of the frame's candidates and ``ambiguous_flag``, n_dets (F,))``."""
    F = len(first) - 1
    chosen_at = np.full(F, -1, np.int64)
    code = np.zeros(F, np.int8)
    conf = np.zeros(F)
    head_px = np.full(F, np.nan)
    flags = np.zeros(F, np.int32)
    n_dets = np.zeros(F, np.int32)
    state = np.zeros(4)
    tracking = False
    blind = 0
    for f in range(F):
        lo, hi = first[f], first[f + 1]
        n_dets[f] = hi - lo
        if not anchor_in_view[f]:
            chosen = -1
            if tracking and blind < max_blind and hi > lo:
                k, best = lo, -np.inf
                for i in range(lo, hi):
                    iou = _iou(state, boxes[i])
                    if iou > best:
                        k, best = i, iou
                if best >= iou_track and rejected[k] == 0:
                    chosen = k
            if chosen < 0:
                tracking = False
                code[f] = _ANCHOR
                continue
            blind += 1
            chosen_at[f], code[f], conf[f] = chosen, _BLIND, 0.5 * score[chosen]
            state[:] = boxes[chosen]
            continue
        blind = 0
        if hi == lo:
            code[f] = _NO_DETECTIONS
            tracking = False
            continue
        for i in range(lo, hi):
            flags[f] |= rejected[i]
        chosen, why = -1, _REDETECT
        if tracking:
            k, best = lo, -np.inf  # the most overlapping candidate, a rejected one counting -1
            for i in range(lo, hi):
                iou = _iou(state, boxes[i]) if rejected[i] == 0 else -1.0
                if iou > best:
                    k, best = i, iou
            if rejected[k] == 0 and best >= iou_track:
                # the track is a tie-breaker, not a veto: a bystander who overlapped the wearer's box
                # must not keep the selection while the wearer's head is much nearer the anchor
                nearest = np.inf  # NaN where a candidate's head is unknown, as numpy's min gives it
                for i in range(lo, hi):
                    if rejected[i] == 0 and (delta[i] != delta[i] or delta[i] < nearest):
                        nearest = delta[i]
                        if nearest != nearest:
                            break
                if delta[k] <= tau and not switch_ratio * nearest < delta[k]:
                    chosen, why = k, _TRACKED
                else:
                    why = _DRIFT
        if chosen < 0:
            k = _nearest_head(delta, rejected, lo, hi)
            if delta[k] <= tau and rejected[k] == 0:
                chosen = k
            else:
                # the head can seem far off when the face is hidden; feet right below the anchor
                # (and no other such candidate) identify the wearer all the same
                n_ground, g = 0, -1
                for i in range(lo, hi):
                    if rejected[i] == 0 and foot_off[i] <= ground_match_m and delta[i] <= tau_max_px:
                        n_ground += 1
                        if g < 0:
                            g = i
                if n_ground == 1:
                    chosen, why = g, _GROUND
                else:
                    code[f] = _NO_NEAR
                    tracking = False
                    continue
        chosen_at[f], code[f] = chosen, why
        d = delta[chosen]
        head_px[f] = d
        share = 0.25 if why == _GROUND else min(max(1.0 - d / tau, 0.0), 1.0)
        c = score[chosen] * share
        runner_up = np.inf  # the nearest other head, NaN only where every other one is unknown
        any_known = False
        for i in range(lo, hi):
            x = delta[i] if (rejected[i] == 0 and i != chosen) else np.inf
            if x == x:
                any_known = True
                runner_up = min(runner_up, x)
        if not any_known:
            runner_up = np.nan
        if runner_up <= tau and runner_up < ambiguity_ratio * (d if not 1e-9 > d else 1e-9):
            flags[f] |= ambiguous_flag
            c *= 0.5
        conf[f] = c
        state[:] = boxes[chosen]
        tracking = True
    return chosen_at, code, conf, head_px, flags, n_dets


@numba.njit(cache=True)
def _nearest_head(delta: np.ndarray, rejected: np.ndarray, lo: int, hi: int) -> int:
    """The candidate in ``lo .. hi`` whose head is nearest the anchor among those not rejected (the
    rejected ones count as infinitely far), as ``np.argmin`` picks it: the first NaN if there is one,
    else the first of the nearest."""
    k, best = lo, np.inf
    for i in range(lo, hi):
        x = delta[i] if rejected[i] == 0 else np.inf
        if x != x:
            return i
        if x < best:
            k, best = i, x
    return k
