import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from motionkit.eval.metrics import (
    accel_error,
    foot_sliding_gt_free,
    jitter,
    mpjpe,
    mpjpe_centroid,
    pa_mpjpe,
    pa_mpjpe_naive,
)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_pa_mpjpe_equals_per_frame_reference(backend):
    rng = np.random.default_rng(0)
    p = rng.normal(size=(300, 17, 3))
    g = p @ Rotation.random(random_state=1).as_matrix().T * 1.3 + rng.normal(0, 0.1, p.shape)
    g[rng.random((300, 17)) < 0.1] = np.nan
    p[rng.random((300, 17)) < 0.05] = np.nan
    ours = pa_mpjpe(p, g, backend=backend)
    ref = pa_mpjpe_naive(p, g)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    assert np.nanmax(np.abs(ours - ref)) < 1e-6


def test_pa_mpjpe_invariant_to_similarity_and_not_to_reflection():
    rng = np.random.default_rng(2)
    g = rng.normal(size=(50, 17, 3))
    p = g + rng.normal(0, 0.02, g.shape)
    base = pa_mpjpe(p, g)
    R = Rotation.random(50, random_state=3).as_matrix()
    s = rng.uniform(0.5, 2.0, (50, 1, 1))
    moved = s * np.einsum("nij,nkj->nki", R, p) + rng.normal(size=(50, 1, 3))
    np.testing.assert_allclose(pa_mpjpe(moved, g), base, atol=1e-8)
    exact = s * np.einsum("nij,nkj->nki", R, g) + 5.0
    assert np.abs(pa_mpjpe(exact, g)).max() < 1e-8
    assert (pa_mpjpe(g * [-1, 1, 1], g) > 100).all()  # reflections are not allowed


def test_missing_joints_and_too_few():
    g = np.random.default_rng(4).normal(size=(3, 17, 3))
    p = g.copy()
    p[0, :14] = np.nan  # 3 joints left
    g[1, 5:] = np.nan  # 5 joints left
    out = pa_mpjpe(p + 0.01, g)
    assert np.isnan(out[0]) and np.isfinite(out[1:]).all()
    assert np.isnan(pa_mpjpe(p + 0.01, g, min_joints=4)[0])
    assert np.isfinite(pa_mpjpe(p + 0.01, g, min_joints=3)[0])
    with pytest.raises(ValueError, match="same shape"):
        pa_mpjpe(np.zeros((2, 17, 3)), np.zeros((2, 16, 3)))


def test_mpjpe_variants():
    g = np.zeros((1, 4, 3))
    p = g + [0.01, 0.0, 0.0]
    assert mpjpe(p, g)[0] == pytest.approx(10.0)
    assert mpjpe_centroid(p, g)[0] == pytest.approx(0.0)
    p[0, 1] = np.nan
    assert mpjpe(p, g)[0] == pytest.approx(10.0)


def test_temporal_metrics():
    t = np.arange(30) / 30.0
    g = np.zeros((30, 2, 3))
    g[..., 0] = (0.5 * t**2)[:, None]  # constant 1 m/s^2
    p = g.copy()
    assert np.allclose(accel_error(p, g, 30.0), 0.0)
    p[..., 0] += (0.5 * t**2)[:, None]  # +1 m/s^2
    np.testing.assert_allclose(accel_error(p, g, 30.0), 1.0, atol=1e-9)
    valid = np.ones(30, bool)
    valid[10] = False
    e = accel_error(p, g, 30.0, valid)
    assert np.isnan(e[8:11]).all() and np.isfinite(e[:8]).all()
    assert np.allclose(jitter(g, 30.0), 0.0, atol=1e-9)  # a parabola has no third derivative
    feet = np.zeros((20, 22, 3))
    feet[:, [7, 8, 10, 11], 0] = np.arange(20)[:, None] * 0.01  # sliding 1 cm per frame on the floor
    assert foot_sliding_gt_free(feet) == pytest.approx(19 / 20 * 10.0)
    feet[:, [7, 8, 10, 11], 2] = 1.0  # in the air: no sliding counted (the floor is the 2nd percentile)
    feet[:2, [7, 8, 10, 11], 2] = 0.0
    assert foot_sliding_gt_free(feet) < 1.0
