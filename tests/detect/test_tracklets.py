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
