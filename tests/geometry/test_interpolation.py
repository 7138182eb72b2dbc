import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

from motionkit.geometry.interpolation import bracket, fill_gaps_bracket, lerp, slerp_rotmat, slerp_rotvec


def test_bracket_rule_inside_exact_and_outside():
    t = np.array([0.0, 1.0, 2.0, 4.0])
    b = bracket(t, np.array([-1.0, 0.0, 0.25, 1.0, 3.0, 4.0, 5.0, np.nan]))
    np.testing.assert_array_equal(b.i0, [0, 0, 0, 1, 2, 3, 3, 0])
    np.testing.assert_array_equal(b.i1, [0, 0, 1, 1, 3, 3, 3, 0])
    np.testing.assert_allclose(b.w, [0, 0, 0.25, 0, 0.5, 0, 0, 0])
    np.testing.assert_allclose(b.span, [0, 0, 1, 0, 2, 0, 0, 0])
    np.testing.assert_array_equal(b.inside, [False, True, True, True, True, True, False, False])


def test_exact_hit_within_tolerance_uses_one_sample():
    t = np.array([0.0, 1.0, 2.0])
    b = bracket(t, np.array([1.0 - 1e-8, 1.0 + 1e-8]), atol=1e-6)
    np.testing.assert_array_equal(b.i0, [1, 1])
    np.testing.assert_array_equal(b.i1, [1, 1])
    assert (b.w == 0).all()


def test_lerp_matches_numpy_interp():
    rng = np.random.default_rng(0)
    t = np.sort(rng.uniform(0, 10, 30))
    x = rng.normal(size=(30, 3))
    q = rng.uniform(t[0], t[-1], 200)
    got = lerp(x, bracket(t, q))
    want = np.stack([np.interp(q, t, x[:, k]) for k in range(3)], 1)
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_slerp_matches_scipy():
    rng = np.random.default_rng(1)
    t = np.arange(6.0)
    R = Rotation.random(6, random_state=2)
    q = rng.uniform(0, 5, 50)
    want = Slerp(t, R)(q).as_matrix()
    b = bracket(t, q)
    np.testing.assert_allclose(slerp_rotmat(R.as_matrix(), b), want, atol=1e-10)
    got_rv = slerp_rotvec(R.as_rotvec(), b)
    np.testing.assert_allclose(Rotation.from_rotvec(got_rv).as_matrix(), want, atol=1e-10)


def test_fill_gaps_interpolates_inside_and_holds_ends():
    ok = np.array([False, True, False, False, True, False])
    x = np.array([9.0, 1.0, 9.0, 9.0, 4.0, 9.0])[:, None]
    np.testing.assert_allclose(lerp(x[ok], fill_gaps_bracket(ok))[:, 0], [1, 1, 2, 3, 4, 4])
    with pytest.raises(ValueError):
        fill_gaps_bracket(np.zeros(3, bool))
