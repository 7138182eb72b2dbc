"""Parity of each KB3 formula across its backends (numpy reference, torch, Numba), written once and
run over every backend."""

import numpy as np
import pytest
import torch

from motionkit.geometry.fisheye import (
    kb3_project_np,
    kb3_project_numba,
    kb3_project_torch,
    kb3_unproject_np,
    kb3_unproject_numba,
    kb3_unproject_torch,
    theta_max_np,
)

PARAMS = np.array([1761.275757, 1761.275757, 1920.0, 1080.0, 0.036902, 0.057131, -0.057154, 0.018458])


def _points(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    d[:, 2] = np.abs(d[:, 2]) + 0.05  # in front, up to ~87 degrees off axis
    d[0] = [0.0, 0.0, 1.0]  # the optical axis
    return d * rng.uniform(0.5, 8.0, (n, 1))


PROJECT = {
    "torch": lambda p, k: kb3_project_torch(torch.as_tensor(p), torch.as_tensor(k)).numpy(),
    "numba": lambda p, k: kb3_project_numba(p, k),
}
UNPROJECT = {
    "torch": lambda uv, k: kb3_unproject_torch(torch.as_tensor(uv), torch.as_tensor(k)).numpy(),
    "numba": lambda uv, k: kb3_unproject_numba(uv, k),
}


@pytest.mark.parametrize("backend", sorted(PROJECT))
def test_projection_matches_numpy_reference(backend):
    p = _points()
    want = kb3_project_np(p, PARAMS)
    got = PROJECT[backend](p, PARAMS)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)


@pytest.mark.parametrize("backend", sorted(UNPROJECT))
def test_unprojection_matches_numpy_reference(backend):
    uv = kb3_project_np(_points(seed=1), PARAMS)
    uv = np.concatenate([uv[np.isfinite(uv).all(-1)], [[1e5, 1e5]]])  # one pixel beyond the valid disc
    want = kb3_unproject_np(uv, PARAMS)
    got = UNPROJECT[backend](uv, PARAMS)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(want[-1]).all()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)


def test_theta_max_is_where_the_radius_stops_growing():
    k = PARAMS.copy()
    k[4:] = [0.0, 0.0, 0.0, -0.05]  # r_d' = 1 - 0.45 theta^8 hits 0 at theta = (1/0.45)^(1/8)
    assert theta_max_np(k) == pytest.approx((1 / 0.45) ** 0.125, abs=2e-3)
    assert theta_max_np(PARAMS) == pytest.approx(np.pi / 2)
