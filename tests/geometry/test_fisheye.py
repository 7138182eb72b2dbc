import cv2
import numpy as np
import pytest
import torch

from motionkit.geometry.camera import Camera, CameraRig
from motionkit.geometry.fisheye import (
    kb3_project,
    kb3_project_np,
    kb3_project_torch,
    kb3_unproject,
    kb3_unproject_np,
    kb3_unproject_numba,
    kb3_unproject_torch,
    theta_max_np,
)

REP = np.array([1761.275757, 1761.275757, 1920.0, 1080.0, 0.036902, 0.057131, -0.057154, 0.018458])


def random_calibs(rng, n):
    f = rng.uniform(1600, 1900, n)
    return np.stack(
        [
            f,
            f * rng.uniform(0.998, 1.002, n),
            1920 + rng.normal(0, 15, n),
            1080 + rng.normal(0, 15, n),
            *(REP[4:8, None] + rng.normal(0, 0.006, (4, n))),
        ],
        axis=1,
    )


def image_grid(w=3840, h=2160, step=60):
    u, v = np.meshgrid(np.arange(-0.5, w, step), np.arange(-0.5, h, step))
    return np.stack([u.ravel(), v.ravel()], -1)


def test_golden_point():
    uv = kb3_project_np(np.array([0.3, -0.2, 1.5]), REP)
    np.testing.assert_allclose(uv, [2266.46456, 849.02363], atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_project_matches_opencv_over_the_image(seed):
    rng = np.random.default_rng(seed)
    p = random_calibs(rng, 1)[0]
    uv = image_grid()
    rays = kb3_unproject_np(uv, p)
    assert np.isfinite(rays).all()
    pts = rays * rng.uniform(0.5, 8.0, (len(rays), 1))
    ours = kb3_project_np(pts, p)
    K = np.array([[p[0], 0, p[2]], [0, p[1], p[3]], [0, 0, 1.0]])
    ref, _ = cv2.fisheye.projectPoints(pts[:, None, :], np.zeros(3), np.zeros(3), K, p[4:8].reshape(4, 1))
    assert np.abs(ours - ref[:, 0]).max() < 1e-6
    # unproject -> project returns the input pixels everywhere on the 4K frame
    assert np.abs(ours - uv).max() < 1e-6


def test_project_matches_projectaria():
    calib_mod = pytest.importorskip("projectaria_tools.core.calibration")
    sophus = pytest.importorskip("projectaria_tools.core.sophus")
    rng = np.random.default_rng(7)
    for p in random_calibs(rng, 3):
        cam = calib_mod.CameraCalibration(
            "cam", calib_mod.CameraModelType.KANNALA_BRANDT_K3, p, sophus.SE3(), 3840, 2160, None, np.pi, ""
        )
        pts = kb3_unproject_np(image_grid(step=240), p) * rng.uniform(0.5, 8.0, (1, 1))
        ref = np.array([cam.project_no_checks(x) for x in pts])
        assert np.abs(kb3_project_np(pts, p) - ref).max() < 1e-6
        back = np.array([cam.unproject_no_checks(u) for u in image_grid(step=480)])
        ours = kb3_unproject_np(image_grid(step=480), p)
        np.testing.assert_allclose(ours, back / np.linalg.norm(back, axis=1, keepdims=True), atol=1e-9)


def test_behind_and_beyond_valid_angle_are_nan():
    pts = np.array([[0.0, 0.0, -1.0], [1.0, 0.0, 0.0], [1.0, 0.0, -0.1], [0.0, 0.0, 1.0]])
    uv, valid = kb3_project_np(pts, REP, return_valid=True)
    assert valid.tolist() == [False, False, False, True]
    assert np.isnan(uv[:3]).all() and np.allclose(uv[3], [1920, 1080])
    # theta_max is pi/2 for the GoPro-like calibration, smaller when r_d stops increasing
    assert theta_max_np(REP) == pytest.approx(np.pi / 2)
    bad = REP.copy()
    bad[4:8] = [0.0, -0.3, 0.0, 0.0]
    assert theta_max_np(bad) < 1.2


def test_theta_max_of_many_distinct_cameras_matches_one_by_one():
    """A batch of 16 takes has ~70 distinct cameras (this once recursed without end)."""
    rng = np.random.default_rng(0)
    params = np.tile(REP, (3, 40, 1))
    params[..., 5] = rng.uniform(-0.35, 0.05, size=(3, 40))  # k1: some cameras fold over before pi/2
    params[1] = params[0]  # repeated rows as well
    got = theta_max_np(params)
    assert got.shape == (3, 40)
    one_by_one = np.array([[float(theta_max_np(p)) for p in row] for row in params])
    np.testing.assert_array_equal(got, one_by_one)
    assert (got < 1.5).any() and (got == np.pi / 2).any()


def test_unproject_nonconvergent_is_nan():
    p = REP.copy()
    p[4:8] = [0.0, -0.3, 0.0, 0.0]  # r_d(theta) peaks, so far pixels have no preimage
    rays, ok = kb3_unproject_np(np.array([[1920.0, 1080.0], [1920 + 5000.0, 1080]]), p, return_valid=True)
    assert ok.tolist() == [True, False] and np.isnan(rays[1]).all()
    np.testing.assert_allclose(rays[0], [0, 0, 1])


def test_batch_dims_broadcast():
    rng = np.random.default_rng(0)
    params = random_calibs(rng, 3)[:, None, :]  # (3, 1, 8)
    pts = rng.normal(size=(3, 5, 3)) + [0, 0, 4]
    uv = kb3_project(pts, params)
    assert uv.shape == (3, 5, 2)
    for i in range(3):
        np.testing.assert_allclose(uv[i], kb3_project_np(pts[i], params[i, 0]))
    np.testing.assert_allclose(kb3_unproject(uv, params), pts / np.linalg.norm(pts, axis=-1, keepdims=True), atol=1e-9)


def test_numba_unproject_matches_numpy():
    rng = np.random.default_rng(3)
    p = random_calibs(rng, 1)[0]
    uv = rng.uniform([0, 0], [3840, 2160], (50_000, 2))
    uv[:5] = np.nan
    a = kb3_unproject_numba(uv, p)
    b = kb3_unproject_np(uv, p)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    assert np.nanmax(np.abs(a - b)) < 1e-12
    np.testing.assert_allclose(kb3_unproject(uv, p), b, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-9), (torch.float32, 2e-2)])
def test_torch_matches_numpy(dtype, tol):
    rng = np.random.default_rng(5)
    p = random_calibs(rng, 1)[0]
    pts = kb3_unproject_np(image_grid(step=120), p) * 3.0
    pts = np.vstack([pts, [[0.0, 0.0, 2.0], [0.0, 0.0, -2.0]]])
    ours = kb3_project_torch(torch.tensor(pts, dtype=dtype), torch.tensor(p, dtype=dtype)).double().numpy()
    ref = kb3_project_np(pts, p)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    assert np.nanmax(np.abs(ours - ref)) < tol
    uv = torch.tensor(ref[:-1], dtype=dtype)
    rays = kb3_unproject_torch(uv, torch.tensor(p, dtype=dtype)).double().numpy()
    np.testing.assert_allclose(rays, kb3_unproject_np(ref[:-1], p), atol=1e-9 if dtype == torch.float64 else 1e-5)


def test_torch_gradcheck_including_axis_and_edge():
    p = torch.tensor(REP, dtype=torch.float64)
    tmax = float(theta_max_np(REP))
    edge = np.tan(tmax - 1e-3)
    pts = torch.tensor(
        [[0.0, 0.0, 2.0], [0.3, -0.2, 1.5], [1e-12, 0.0, 1.0], [edge, 0.0, 1.0], [-0.8, 0.6, 0.9]], dtype=torch.float64
    ).requires_grad_()

    def f(x):
        uv, valid = kb3_project_torch(x, p, return_valid=True)
        assert bool(valid.all())
        return uv

    assert torch.autograd.gradcheck(f, (pts,), eps=1e-7, atol=1e-5)
    # the gradient at the optical axis is the pinhole one and finite
    uv = f(pts)
    g = torch.autograd.grad(uv[0, 0], pts)[0][0]
    np.testing.assert_allclose(g.numpy(), [REP[0] / 2.0, 0.0, 0.0], atol=1e-9)


def test_torch_masked_loss_has_finite_gradient_behind_camera():
    p = torch.tensor(REP, dtype=torch.float64)
    pts = torch.tensor([[0.0, 0.0, -1.0], [0.1, 0.1, 1.0]], dtype=torch.float64, requires_grad=True)
    uv, valid = kb3_project_torch(pts, p, return_valid=True)
    loss = torch.where(valid[:, None], uv, torch.zeros_like(uv)).sum()
    loss.backward()
    assert torch.isfinite(pts.grad).all()


def test_bad_input():
    with pytest.raises(ValueError, match=r"\(\.\.\., 8\)"):
        kb3_project_np(np.zeros(3), np.zeros(7))
    with pytest.raises(ValueError, match=r"\(\.\.\., 3\)"):
        kb3_project_np(np.zeros(2), REP)
    with pytest.raises(ValueError, match=r"\(\.\.\., 2\)"):
        kb3_unproject_np(np.zeros(3), REP)
    with pytest.raises(ValueError, match="non-finite"):
        Camera("c", 3840, 2160, np.r_[REP[:7], np.nan], np.eye(4))
    with pytest.raises(ValueError, match="shape"):
        Camera("c", 3840, 2160, REP, np.eye(3))
    with pytest.raises(ValueError, match="proper rotation"):
        Camera("c", 3840, 2160, REP, np.diag([1.0, 1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match="at least one camera"):
        CameraRig([])
