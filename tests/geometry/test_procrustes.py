import numpy as np
from scipy.spatial.transform import Rotation

from motionkit.geometry.procrustes import procrustes


def test_recovers_a_known_similarity_and_ignores_masked_points():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 17, 3))
    R = Rotation.random(5, random_state=1).as_matrix()
    s = rng.uniform(0.5, 2.0, 5)
    t = rng.normal(size=(5, 3))
    y = s[:, None, None] * np.einsum("bij,bkj->bki", R, x) + t[:, None]
    w = np.ones((5, 17))
    w[:, :3] = 0
    y[:, :3] = np.nan  # unused points may be NaN
    s2, R2, t2 = procrustes(x, y, w, scaling=True)
    np.testing.assert_allclose(s2, s, rtol=1e-10)
    np.testing.assert_allclose(R2, R, atol=1e-10)
    np.testing.assert_allclose(t2, t, atol=1e-10)
    s3, R3, t3 = procrustes(x, np.where(np.isfinite(y), y, 0) / s[:, None, None], w)
    np.testing.assert_array_equal(s3, 1.0)
    np.testing.assert_allclose(R3, R, atol=1e-10)


def test_reflection_is_never_returned():
    x = np.random.default_rng(2).normal(size=(20, 3))
    y = x * np.array([1.0, 1.0, -1.0])  # a mirror image: the best proper rotation is not a reflection
    _, R, _ = procrustes(x, y, np.ones(20))
    assert np.isclose(np.linalg.det(R), 1.0)
