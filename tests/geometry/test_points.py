import warnings

import numpy as np
import pytest

from motionkit.geometry.points import finite_points, point_distance


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_points_match_numpy_bit_for_bit(dtype):
    """Against numpy's general reductions, with NaN and inf coordinates, broadcasting and both float
    widths: identical arrays (the tracklets and the cross-view check rely on it)."""
    rng = np.random.default_rng(3)
    a = (rng.normal(size=(500, 17, 2)) * 300).astype(dtype)
    b = (a + rng.normal(size=a.shape) * 5).astype(dtype)
    a[rng.random(a.shape) < 0.1] = np.nan
    b[rng.random(b.shape) < 0.05] = np.inf
    np.testing.assert_array_equal(finite_points(a), np.isfinite(a).all(-1))
    with np.errstate(invalid="ignore"):
        want, want_one = np.linalg.norm(a - b, axis=-1), np.linalg.norm(a[0, 0] - b, axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inf - inf makes NaN without a warning
        got = point_distance(a, b)
        np.testing.assert_array_equal(point_distance(a[0, 0], b), want_one)  # one point against many
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
    assert np.isnan(got).any() and np.isfinite(got).mean() > 0.7
    assert point_distance(np.array([0.0, 0.0]), np.array([3.0, 4.0])) == 5.0
