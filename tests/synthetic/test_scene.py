import numpy as np
import pytest

from motionkit.synthetic.scene import (
    CONF_DROP_PER_SIGMA,
    CONF_RANGE,
    FACE_AWAY_YAW_DEG,
    FAR_EYE_YAW_DEG,
    _self_occluded,
    expected_squared_error,
    face_yaw,
)


def test_expected_squared_error_given_confidence_matches_simulation():
    rng = np.random.default_rng(0)
    r2 = (rng.normal(size=(400_000, 2)) ** 2).sum(-1)  # squared error in units of sigma
    conf = rng.uniform(*CONF_RANGE, len(r2)) - CONF_DROP_PER_SIGMA * np.sqrt(r2)
    for lo, hi in [(0.9, 0.92), (0.75, 0.77), (0.55, 0.57), (0.35, 0.4)]:
        band = (conf > lo) & (conf < hi)
        assert band.sum() > 1000
        np.testing.assert_allclose(expected_squared_error(conf[band], 1.0).mean(), r2[band].mean(), rtol=0.03)
    # a sure detector is nearly exact, an unsure one far off; without coupling, the prior mean
    assert expected_squared_error(np.array([0.97]), 1.0)[0] < 0.01
    assert expected_squared_error(np.array([0.4]), 1.0)[0] > 6
    np.testing.assert_array_equal(expected_squared_error(np.array([0.2, 0.9]), 0.0), [2.0, 2.0])


def _head(yaw_deg: float, depth_m: float = 3.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``pc (1, 1, 76, 3)``, ``uv (1, 1, 76, 2)``, ``kpc (1, 1, 17, 3)``: a head ``depth_m`` in front of the
    camera turned ``yaw_deg`` (the camera on the person's left for positive angles), the torso beside it."""
    a = np.radians(yaw_deg)
    head = np.array([0.0, 0.0, depth_m])
    fwd, left = np.array([-np.sin(a), 0.0, -np.cos(a)]), np.array([np.cos(a), 0.0, -np.sin(a)])
    kpc = np.tile(head + [0.0, 0.5, 0.0], (17, 1))  # the body's points below the head
    kpc[0] = head + 0.10 * fwd
    kpc[1], kpc[2] = head + 0.08 * fwd + 0.032 * left, head + 0.08 * fwd - 0.032 * left
    kpc[3], kpc[4] = head + 0.075 * left, head - 0.075 * left
    pc = np.tile(head + [0.0, 0.5, 0.0], (76, 1))
    pc[15] = head
    pc[[16, 17, 1, 2]] += [[-0.2, 0, 0], [0.2, 0, 0], [-0.1, 0.5, 0], [0.1, 0.5, 0]]
    uv = 1000 * pc[:, :2] / pc[:, 2:]
    return pc[None, None], uv[None, None], kpc[None, None]


def test_the_face_hides_behind_the_head_and_the_far_eye_of_a_profile_behind_the_nose_bridge():
    for yaw in (0.0, 30.0, -45.0, 75.0, -75.0, 120.0, -150.0):
        pc, uv, kpc = _head(yaw)
        assert face_yaw(kpc)[0, 0] == pytest.approx(yaw, abs=1e-6)
        hidden = _self_occluded(uv, pc, 1000 * kpc[..., :2] / kpc[..., 2:], kpc)[0, 0]
        away = abs(yaw) > FACE_AWAY_YAW_DEG
        assert hidden[0] == away, yaw  # the nose
        # the right eye is the far one with the camera on the person's left (positive yaw), and the reverse
        assert hidden[2] == (away or yaw > FAR_EYE_YAW_DEG), yaw
        assert hidden[1] == (away or yaw < -FAR_EYE_YAW_DEG), yaw
        assert hidden[3] == (yaw < -25) and hidden[4] == (yaw > 25), yaw  # the far ear, 3 cm behind the head
        assert not hidden[5:].any()
    assert abs(face_yaw(_head(180.0)[2])[0, 0]) == pytest.approx(180.0)
