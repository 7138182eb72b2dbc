import numpy as np
import pytest

from motionkit.pipeline.config import PipelineConfig
from motionkit.pipeline.fit_inputs import ObservationWeighting, observation_weights, size_factor


def _boxes(heights):
    h = np.asarray(heights, dtype=float)
    return np.stack([np.zeros_like(h), 100 + np.zeros_like(h), 50 + np.zeros_like(h), 100 + h], -1)


def test_weights_follow_confidence_power_and_size():
    conf = np.full((1, 3, 17), 0.5)
    conf[0, 0, 0] = 1.0
    box = _boxes([[400.0, 800.0, 1600.0]])
    w = observation_weights(conf, np.ones((1, 3)), box, np.ones((1, 3), bool), ObservationWeighting(3.0, 1.0))
    # median box 800: the 400-px view counts 2x, the 1600-px view 0.5x; confidence 0.5 -> 0.125
    np.testing.assert_allclose(w[0, :, 1], [2 * 0.125, 0.125, 0.5 * 0.125])
    np.testing.assert_allclose(w[0, 0, 0], 2.0)


def test_weights_zero_where_unselected_missing_or_nan_and_neutral_without_box():
    conf = np.full((2, 2, 17), 0.8)
    conf[0, 0, 3] = 0.0
    conf[0, 0, 4] = np.nan
    box = _boxes([[500.0, 500.0], [500.0, 500.0]])
    box[1, 1] = np.nan  # no box for that view: neither more nor less weight
    sel = np.array([[True, False], [True, True]])
    w = observation_weights(conf, np.ones((2, 2)), box, sel, ObservationWeighting(0.0, 1.0))
    assert w[0, 0, 3] == 0 and w[0, 0, 4] == 0, "conf 0 or NaN keeps no weight, even with conf_power 0"
    assert (w[0, 1] == 0).all()
    np.testing.assert_allclose(w[1, 1], 1.0)
    np.testing.assert_allclose(w[0, 0, 0], 1.0)


def test_size_factor_is_clipped_and_off_at_power_zero():
    box = _boxes([[100.0, 1000.0, 1000.0, 10000.0]])
    np.testing.assert_allclose(size_factor(box, ObservationWeighting(size_power=1.0, size_clip=4.0)), [[4, 1, 1, 0.25]])
    np.testing.assert_allclose(size_factor(box, ObservationWeighting(size_power=0.0)), 1.0)


def test_bad_powers_are_refused():
    with pytest.raises(ValueError, match="conf_power"):
        ObservationWeighting(conf_power=-1.0)
    with pytest.raises(ValueError, match="size_clip"):
        PipelineConfig(size_power=-0.5)


def test_weighted_estimate_beats_plain_confidence_weighting():
    """A point seen by 4 views whose pixel error is 1 % of the person's box height (a near view sees it
    bigger and noisier) and whose confidence drops with the error, as the synthetic detector's: the
    weighted least-squares estimate with the default weighting is closer to the truth than with plain
    confidence weights; size_power 2 (errors exactly proportional to the box) is closer still."""
    rng = np.random.default_rng(3)
    n, heights = 20000, np.array([350.0, 600.0, 900.0, 1400.0])
    px_per_m = heights / 1.7  # the box spans the person's 1.7 m
    sigma_px = 0.01 * heights
    r = np.abs(rng.normal(size=(n, 4)))
    err_px = r * sigma_px * rng.choice([-1.0, 1.0], size=(n, 4))
    conf = np.clip(rng.uniform(0.7, 0.98, (n, 4)) - 0.12 * r, 0.05, 0.99)
    measured_m = err_px / px_per_m  # the truth is 0

    def rmse(weighting):
        w = observation_weights(conf[..., None], np.ones((n, 4)), _boxes(np.tile(heights, (n, 1))),
                                np.ones((n, 4), bool), weighting)[..., 0]  # fmt: skip
        k2 = w * px_per_m**2  # squared pixel residuals: d loss / d x^2 per view
        return np.sqrt(np.mean(((k2 * measured_m).sum(1) / k2.sum(1)) ** 2))

    plain = rmse(ObservationWeighting(conf_power=1.0, size_power=0.0))  # 10.6 mm
    confidence_only = rmse(ObservationWeighting(size_power=0.0))  # 9.5 mm
    default = rmse(ObservationWeighting())  # 7.7 mm
    exact = rmse(ObservationWeighting(size_power=2.0))  # 6.9 mm
    assert confidence_only < 0.93 * plain, (confidence_only, plain)
    assert default < 0.77 * plain, (default, plain)
    assert exact < 0.92 * default, (exact, default)
