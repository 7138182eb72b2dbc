import numpy as np

from motionkit.synthetic.scene import CONF_DROP_PER_SIGMA, CONF_RANGE, expected_squared_error


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
