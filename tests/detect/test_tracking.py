import numpy as np

import motionkit.detect.association as association
from motionkit.conventions import fit_grid_frames, nearest_take_frames
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.observations import read_observations
from motionkit.detect.association import select_wearer
from motionkit.detect.tracking import TRACK_CODES, track_camera
from motionkit.geometry.boxes import box_iou

CODE = {name: i for i, name in enumerate(TRACK_CODES)}


def _track_reference(first, anchor_in_view, boxes, rejected, delta, foot_off, score, tau, max_blind, iou_track,
                     switch_ratio, ground_match_m, tau_max_px, ambiguity_ratio, ambiguous_flag):  # fmt: skip
    """The tracking loop in numpy, frame by frame (what ``association`` ran before the Numba kernel)."""
    F = len(first) - 1
    chosen_at, code = np.full(F, -1), np.zeros(F, np.int8)
    conf, head_px = np.zeros(F), np.full(F, np.nan)
    flags, n_dets = np.zeros(F, np.int32), np.zeros(F, np.int32)
    state, blind = None, 0
    for f in range(F):
        cand = np.arange(first[f], first[f + 1])
        n_dets[f] = len(cand)
        if not anchor_in_view[f]:
            chosen = None
            if state is not None and blind < max_blind and len(cand):
                ious = box_iou(state, boxes[cand])
                k = int(np.argmax(ious))
                if ious[k] >= iou_track and not rejected[cand[k]]:
                    chosen = cand[k]
            if chosen is None:
                state, code[f] = None, CODE["ANCHOR"]
                continue
            blind += 1
            chosen_at[f], code[f], conf[f] = chosen, CODE["TRACKED_BLIND"], 0.5 * float(score[chosen])
            state = boxes[chosen].copy()
            continue
        blind = 0
        if not len(cand):
            code[f], state = CODE["NO_DETECTIONS"], None
            continue
        dc, okc = delta[cand], rejected[cand] == 0
        flags[f] |= np.bitwise_or.reduce(rejected[cand])
        chosen, why = None, "REDETECT"
        if state is not None:
            ious = box_iou(state, boxes[cand])
            k = int(np.argmax(np.where(okc, ious, -1.0)))
            if okc[k] and ious[k] >= iou_track:
                nearest = np.min(np.where(okc, dc, np.inf), initial=np.inf)
                if dc[k] <= tau and not switch_ratio * nearest < dc[k]:
                    chosen, why = cand[k], "TRACKED"
                else:
                    why = "DRIFT_REDETECT"
        if chosen is None:
            dd = np.where(okc, dc, np.inf)
            k = int(np.argmin(dd))
            if dd[k] <= tau:
                chosen = cand[k]
            else:
                gm = okc & (foot_off[cand] <= ground_match_m) & (dc <= tau_max_px)
                if gm.sum() == 1:
                    chosen, why = cand[int(np.argmax(gm))], "GROUND_MATCH"
                else:
                    code[f], state = CODE["NO_DET_NEAR_ANCHOR"], None
                    continue
        chosen_at[f], code[f] = chosen, CODE[why]
        d = float(delta[chosen])
        head_px[f] = d
        c = float(score[chosen]) * float(np.clip(1 - d / tau, 0, 1) if why != "GROUND_MATCH" else 0.25)
        others = np.sort(np.where(okc & (cand != chosen), dc, np.inf))
        if len(others) and others[0] <= tau and others[0] < ambiguity_ratio * max(d, 1e-9):
            flags[f] |= ambiguous_flag
            c *= 0.5
        conf[f] = c
        state = boxes[chosen].copy()
    return chosen_at, code, conf, head_px, flags, n_dets


def _random_camera(rng, F: int):
    """A camera's candidates over ``F`` frames: 0-4 per frame around a wandering wearer, some rejected,
    some heads unknown (NaN), some tied, the anchor out of view in stretches."""
    counts = rng.integers(0, 5, F)
    first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    N = int(first[-1])
    centre = 500 + np.cumsum(rng.normal(0, 8, F))
    fi = np.repeat(np.arange(F), counts)
    x0 = centre[fi] + rng.normal(0, 40, N)
    boxes = np.stack([x0, np.full(N, 100.0), x0 + rng.uniform(60, 120, N), np.full(N, 400.0)], 1)
    boxes[rng.random(N) < 0.1] = boxes[0]  # identical boxes: IoU ties
    delta = rng.uniform(0, 300, N)
    delta[rng.random(N) < 0.05] = np.nan
    delta[rng.random(N) < 0.05] = 50.0  # distance ties
    rejected = np.where(rng.random(N) < 0.15, rng.choice([4, 8], N), 0).astype(np.int32)
    foot_off = np.where(rng.random(N) < 0.5, rng.uniform(0, 0.5, N), np.inf)
    anchor_in_view = np.repeat(rng.random(F // 10 + 1) < 0.8, 10)[:F]
    return first, anchor_in_view, boxes, rejected, delta, foot_off, rng.uniform(0.5, 1.0, N)


def test_kernel_matches_the_frame_by_frame_reference_on_random_cameras():
    """Random candidates with NaN heads, ties, rejections and blind stretches: every output equal."""
    codes = set()
    for seed in range(8):
        rng = np.random.default_rng(seed)
        args = (*_random_camera(rng, 300), 120.0, 10, 0.3, 2.0, 0.25, 250.0, 1.2, 1)
        got, want = track_camera(*args), _track_reference(*args)
        for name, g, w in zip(("chosen", "code", "conf", "head_px", "flags", "n_dets"), got, want, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"seed {seed}: {name}")
        codes |= set(got[1].tolist())
        assert (got[4] & 1).any()  # ambiguous frames
    assert codes == set(range(1, len(TRACK_CODES)))  # every outcome but the empty one


def test_select_wearer_is_unchanged_on_court_takes(basketball_pair, monkeypatch):
    """Two crowded basketball takes: the association with the kernel and with the reference loop agree
    in every array."""
    for info in EgoExoDataset(basketball_pair).takes():
        take = EgoExoDataset(basketball_pair).take(info.take_uid)
        obs = read_observations(basketball_pair / "observations" / f"{take.uid}.h5")
        frames = nearest_take_frames(fit_grid_frames(take.n_frames, 20.0))
        anchor = take.head_anchor(frames)

        inputs = (obs, take.rig, frames, anchor.position, anchor.valid)
        got = select_wearer(*inputs, anchor_rotation=anchor.rotation)
        with monkeypatch.context() as m:
            m.setattr(association, "track_camera", _track_reference)
            want = select_wearer(*inputs, anchor_rotation=anchor.rotation)
        for name, value in got.__dict__.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(value, getattr(want, name), err_msg=name)
        assert (got.reason == "TRACKED").any() and (got.det_index >= 0).mean() > 0.5
