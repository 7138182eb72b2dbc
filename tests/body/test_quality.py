import numpy as np

from motionkit.body.quality import quality_flags, valid_frames

NAMES = ("nose", "right_eye", "left_eye", "right_ear", "left_ear")


def _body(M, fps, speed):
    """(M, 60, 3): every joint moving along x at ``speed (M,)`` m/s; the eyes at the CPF."""
    x = np.concatenate([[0.0], np.cumsum(speed[1:] / fps)])
    J = np.zeros((M, 60, 3)) + np.arange(60)[None, :, None] * 0.01
    J[..., 0] += x[:, None]
    return J


def test_flags_follow_their_rules():
    fps, M = 20.0, 200
    speed = np.r_[np.zeros(80), np.full(120, 1.0)]  # still for 4 s, then walking at 1 m/s
    J = _body(M, fps, speed)
    cpf = 0.5 * (J[:, 55 + 1] + J[:, 55 + 2])
    cpf[150:] += [0.0, 0.0, 0.5]  # the Aria anchor 0.5 m away at the end
    valid = np.ones(M, bool)
    valid[185:188] = False  # a 2-frame run after: shorter than 2 s
    n_views = np.full(M, 4)
    n_views[10:20] = 2
    reproj = np.full((M, 4), 10.0)
    reproj[30:35, :3] = 80.0  # three of four views far off: the median is too
    reproj[40:45, 0] = 80.0  # one view far off: the median is fine
    f = quality_flags(J, valid, n_views, fps, cpf, NAMES, reproj)
    np.testing.assert_array_equal(np.flatnonzero(f["FEW_CAMS"]), np.arange(10, 20))
    assert f["STATIC"][:50].all() and not f["STATIC"][100:].any()  # the 1.5-s window reaches 0.75 s around
    np.testing.assert_array_equal(np.flatnonzero(f["HIGH_REPROJ"]), np.arange(30, 35))
    assert f["EYE_ARIA_FAR"][150:185].all() and not f["EYE_ARIA_FAR"][:150].any()
    assert f["SHORT_SEGMENT"][188:].all() and not f["SHORT_SEGMENT"][:185].any()
    assert not f["FAST_JOINT"].any() and not f["HIGH_ACCEL"][5:75].any()


def test_valid_frames_bridge_short_gaps_only():
    n = np.r_[np.full(10, 3), np.zeros(5), np.full(10, 3), np.zeros(20), np.full(5, 2)]
    v = valid_frames(n, 20.0, 0.5)  # 5 frames = 0.25 s: bridged; 20 frames = 1 s: not
    assert v[:25].all() and not v[25:45].any() and v[45:].all()
