import warnings

import numpy as np
import pytest

from motionkit.common.nanstats import nan_lower_median, nan_median


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [1, 2, 5, 17])
def test_medians_equal_numpys_to_the_bit(dtype, k):
    """Rows with every count of numbers (0..k), infinities among them, in a leading (4, 250) batch."""
    rng = np.random.default_rng(k)
    x = (rng.normal(size=(4, 250, k)) * rng.choice([1e-3, 1.0, 1e5], size=(4, 250, 1))).astype(dtype)
    x[rng.random(x.shape) < 0.4] = np.nan
    x[rng.random(x.shape) < 0.02] = np.inf
    x[0, 0] = np.nan  # a row with nothing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanmedian(x, axis=-1)
        want_lower = np.nanpercentile(x, 50, axis=-1, method="lower")
        want_rows = [np.nanmedian(r, axis=-1) for r in x[1, :40]]  # numpy's other (small-array) path
    got, got_lower = nan_median(x), nan_lower_median(x)
    assert got.dtype == want.dtype and got_lower.dtype == want_lower.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_lower, want_lower)
    np.testing.assert_array_equal(got[1, :40], want_rows)
    assert np.isnan(got[0, 0]) and np.isnan(got_lower[0, 0])


def test_medians_of_known_rows():
    x = np.array([[3.0, np.nan, 1.0, 2.0], [4.0, 1.0, np.nan, np.nan], [np.nan] * 4])
    np.testing.assert_array_equal(nan_median(x), [2.0, 2.5, np.nan])
    np.testing.assert_array_equal(nan_lower_median(x), [2.0, 1.0, np.nan])
    assert nan_median(np.zeros((3, 0))).shape == (3,) and np.isnan(nan_median(np.zeros((3, 0)))).all()
