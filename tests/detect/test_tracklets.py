import numpy as np

from motionkit.detect.tracklets import keypoint_steps, link_tracklets, tracklet_medians


def _person(centre_x: float, pose: float, n_frames: int, speed: float) -> np.ndarray:
    """``(n_frames, 17, 2)`` keypoints of a 200-px person walking along x: a fixed body shape whose
    limbs are spread by ``pose`` (two people with different poses differ in their limbs)."""
    rng = np.random.default_rng(int(pose * 100))
    shape = np.c_[rng.uniform(-40, 40, 17) * pose, np.linspace(-100, 100, 17)]
    x = centre_x + speed * np.arange(n_frames)
    return shape[None] + np.c_[x, np.full(n_frames, 300.0)][:, None]


def test_two_people_crossing_keep_their_tracklets_where_their_boxes_overlap():
    """A walks right, B walks left, crossing at frame 10: their boxes overlap for several frames while
    their limbs differ; B is not detected in frames 10 and 11 (hidden behind A), so B's tracklet ends
    there and a new one starts after (links join consecutive frames only)."""
    n = 20
    a, b = _person(100.0, 1.0, n, 10.0), _person(300.0, 1.6, n, -10.0)
    frame = np.r_[np.arange(n), [f for f in range(n) if f not in (10, 11)]]
    kp = np.concatenate([a, b[[f for f in range(n) if f not in (10, 11)]]])
    who = np.r_[np.zeros(n, int), np.ones(n - 2, int)]
    perm = np.random.default_rng(0).permutation(len(frame))  # detections in any order
    ids = link_tracklets(frame[perm], kp[perm], np.ones((len(frame), 17)), np.full(len(frame), 200.0))
    ids = ids[np.argsort(perm)]  # back in the order of frame, kp and who
    assert len(np.unique(ids[who == 0])) == 1  # A: one tracklet all along
    b_ids = ids[who == 1]
    assert set(b_ids[frame[who == 1] < 10]).isdisjoint(ids[who == 0])
    assert len(np.unique(b_ids[frame[who == 1] < 10])) == 1 and len(np.unique(b_ids[frame[who == 1] > 11])) == 1
    assert b_ids[frame[who == 1] < 10][0] != b_ids[frame[who == 1] > 11][0]  # the gap ends B's tracklet


def test_a_step_beyond_the_limit_or_without_shared_keypoints_starts_a_new_tracklet():
    kp = _person(100.0, 1.0, 3, 30.0)  # 30 px per frame: 0.15 box heights
    conf = np.ones((3, 17))
    assert len(np.unique(link_tracklets(np.arange(3), kp, conf, np.full(3, 200.0), max_step=0.1))) == 3
    assert len(np.unique(link_tracklets(np.arange(3), kp, conf, np.full(3, 200.0), max_step=0.2))) == 1
    conf[1, 2:] = 0.0  # frame 1 shares only two confident keypoints with its neighbours
    step = keypoint_steps(kp[:1], conf[:1], np.full(1, 200.0), kp[1:2], conf[1:2])
    assert np.isinf(step).all()
    assert len(np.unique(link_tracklets(np.arange(3), kp, conf, np.full(3, 200.0), max_step=0.2))) == 3


def test_tracklet_medians_against_a_loop():
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 6, 200)
    values = rng.normal(size=200)
    values[rng.random(200) < 0.2] = np.nan
    values[ids == 5] = np.nan  # a tracklet with nothing finite
    med, count = tracklet_medians(ids, values)
    for t in range(6):
        v = values[ids == t]
        v = v[np.isfinite(v)]
        assert (count[ids == t] == len(v)).all()
        if len(v):
            np.testing.assert_allclose(med[ids == t], np.median(v))
        else:
            assert np.isnan(med[ids == t]).all()


def _link_reference(frame, kp, conf, height, max_step, conf_min=0.3):
    """Frame by frame: every pair of consecutive frames' detections measured one at a time, then linked
    greedily, closest pair first (ties: the earlier detection of the earlier frame, then of the later)."""
    ids = np.full(len(frame), -1)
    next_id = 0
    frames = sorted(set(frame.tolist()))
    for t in frames:
        cur = [i for i in np.argsort(frame, kind="stable") if frame[i] == t]
        prev = [i for i in np.argsort(frame, kind="stable") if frame[i] == t - 1]
        pairs = []
        for ip, p in enumerate(prev):
            for ic, c in enumerate(cur):
                ok = (conf[p] >= conf_min) & (conf[c] >= conf_min)
                d = np.linalg.norm(kp[p] - kp[c], axis=-1)[ok]
                step = np.median(d) / max(height[p], 1.0) if ok.sum() >= 3 else np.inf
                pairs.append((step, ip * len(cur) + ic, p, c))
        used_p, used_c = set(), set()
        for step, _, p, c in sorted(pairs):
            if step <= max_step and p not in used_p and c not in used_c:
                ids[c] = ids[p]
                used_p.add(p)
                used_c.add(c)
        for c in cur:
            if ids[c] < 0:
                ids[c], next_id = next_id, next_id + 1
    return ids


def test_linking_matches_a_frame_by_frame_reference():
    """Four people drifting at random over 60 frames with gaps, misses, low confidences and a frame
    with nobody, detections shuffled: the same tracklet ids as the frame-by-frame loop above."""
    rng = np.random.default_rng(7)
    people = [_person(rng.uniform(0, 600), rng.uniform(0.5, 2.0), 60, rng.uniform(-12, 12)) for _ in range(4)]
    frame, kp = [], []
    for f in range(60):
        if f == 30:
            continue  # nobody detected
        for person in people:
            if rng.random() < 0.85:
                frame.append(f)
                kp.append(person[f] + rng.normal(0, 4.0, (17, 2)))
    frame, kp = np.array(frame), np.array(kp)
    conf = np.where(rng.random((len(frame), 17)) < 0.2, 0.1, 0.9)
    height = rng.uniform(150, 250, len(frame))
    perm = rng.permutation(len(frame))
    frame, kp, conf, height = frame[perm], kp[perm], conf[perm], height[perm]
    for max_step in (0.05, 0.1, 0.3):
        want = _link_reference(frame, kp, conf, height, max_step)
        got = link_tracklets(frame, kp, conf, height, max_step)
        np.testing.assert_array_equal(got, want)
        assert 4 <= len(np.unique(got)) < len(frame)  # some links made, some not
    assert link_tracklets(frame[:0], kp[:0], conf[:0], height[:0]).shape == (0,)  # a camera with nobody
    np.testing.assert_array_equal(link_tracklets(frame[:1], kp[:1], conf[:1], height[:1]), [0])
