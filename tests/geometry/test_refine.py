import numpy as np
import pytest
import roma
import torch

from motionkit.geometry.fisheye import kb3_project_np
from motionkit.geometry.refine import CameraRefineConfig, chain_refinements, refine_camera_poses
from tests.helpers import wearer_landmarks


@pytest.fixture(scope="module")
def scene(default_root):
    t, X = wearer_landmarks(default_root, step=3)
    return t.rig.T_cam_world, t.rig.params, X


def _project(T, params, X):
    pc = np.einsum("vij,mkj->mvki", T[:, :3, :3], X) + T[None, :, None, :3, 3]
    return kb3_project_np(pc, params[None, :, None])


def _perturb(T, rng, deg=0.3, metres=0.03):
    dR = roma.rotvec_to_rotmat(torch.as_tensor(rng.normal(0, np.deg2rad(deg), (len(T), 3)))).numpy()
    out = T.copy()
    out[:, :3, :3] = dR @ T[:, :3, :3]
    out[:, :3, 3] = (dR @ T[:, :3, 3:])[..., 0] + rng.normal(0, metres, (len(T), 3))
    return out


def _angle_deg(A, B):
    R = A[:, :3, :3] @ np.swapaxes(B[:, :3, :3], -1, -2)
    return np.rad2deg(np.arccos(np.clip((np.trace(R, axis1=-2, axis2=-1) - 1) / 2, -1, 1)))


def test_refinement_recovers_perturbed_cameras_despite_noise_and_outliers(scene):
    T_true, params, X = scene
    rng = np.random.default_rng(0)
    px = _project(T_true, params, X) + rng.normal(0, 3.0, (len(X), len(T_true), 17, 2))
    gross = rng.random(px.shape[:-1]) < 0.05  # 5 % gross errors of 100-300 px
    ang = rng.uniform(0, 2 * np.pi, gross.sum())
    px[gross] += np.stack([np.cos(ang), np.sin(ang)], -1) * rng.uniform(100, 300, (gross.sum(), 1))
    w = np.where(np.isfinite(px).all(-1), 1.0, 0.0)
    T_cal = _perturb(T_true, rng)
    ref = refine_camera_poses(T_cal, params, X, px, w)
    clean_px = _project(T_true, params, X)
    err_before = np.nanmedian(np.linalg.norm(_project(T_cal, params, X) - clean_px, axis=-1), axis=(0, 2))
    err_after = np.nanmedian(np.linalg.norm(_project(ref.T_cam_world, params, X) - clean_px, axis=-1), axis=(0, 2))
    # the calibration misses the true projections by 5-30 px; the refined cameras by under a pixel (0.4-0.8
    # measured; rotation and translation trade off for a body-sized cloud of points, so the pose itself
    # is only partly recovered: what matters is where it puts the body)
    assert (err_before > 4).all()
    assert (err_after < 1.0).all(), (err_before, err_after)
    assert (ref.residual_px_after < ref.residual_px_before).all()
    np.testing.assert_allclose(ref.rotation_deg, _angle_deg(ref.T_cam_world, T_cal), atol=1e-6)


def test_a_view_without_weight_keeps_its_pose_and_the_prior_bounds_the_move(scene):
    T_true, params, X = scene
    rng = np.random.default_rng(1)
    px = _project(T_true, params, X)
    T_cal = _perturb(T_true, rng)
    w = np.where(np.isfinite(px).all(-1), 1.0, 0.0)
    w[:, 2] = 0.0
    ref = refine_camera_poses(T_cal, params, X, px, w)
    np.testing.assert_allclose(ref.T_cam_world[2], T_cal[2], atol=1e-9)
    assert np.isnan(ref.residual_px_after[2])
    # a strong prior keeps the cameras where they are
    stiff = refine_camera_poses(
        T_cal, params, X, px, w, CameraRefineConfig(rotation_sigma_deg=1e-4, translation_sigma_m=1e-5)
    )
    assert stiff.rotation_deg.max() < 0.01 and stiff.translation_m.max() < 1e-4
    # nothing to fit: the calibration comes back
    none = refine_camera_poses(T_cal, params, X, px, np.zeros_like(w))
    np.testing.assert_array_equal(none.T_cam_world, T_cal)


def test_rounds_chain_into_one_change_from_the_calibration(scene):
    T_true, params, X = scene
    rng = np.random.default_rng(3)
    px = _project(T_true, params, X) + rng.normal(0, 3.0, (len(X), len(T_true), 17, 2))
    w = np.where(np.isfinite(px).all(-1), 1.0, 0.0)
    T_cal = _perturb(T_true, rng)
    first = refine_camera_poses(T_cal, params, X, px, w, CameraRefineConfig(iters=3))  # stopped early
    second = refine_camera_poses(first.T_cam_world, params, X, px, w)
    both = chain_refinements(T_cal, [first, second])
    np.testing.assert_array_equal(both.T_cam_world, second.T_cam_world)
    np.testing.assert_array_equal(both.residual_px_before, first.residual_px_before)
    np.testing.assert_array_equal(both.residual_px_after, second.residual_px_after)
    np.testing.assert_allclose(both.rotation_deg, _angle_deg(second.T_cam_world, T_cal), atol=1e-6)
    moved = second.T_cam_world[:, :3, 3] + (second.T_cam_world[:, :3, :3] @ np.linalg.inv(T_cal)[:, :3, 3:])[..., 0]
    np.testing.assert_allclose(both.translation_m, np.linalg.norm(moved, axis=-1), atol=1e-9)


def test_an_over_relaxed_step_applies_a_multiple_of_the_minimising_correction(scene):
    """``step`` scales the rotation vector and translation of each camera's correction: twice the
    step, twice the angle and the translation (the fit's alternation steps past the minimiser because
    the refit body absorbs part of each correction)."""
    T_true, params, X = scene
    rng = np.random.default_rng(5)
    px = _project(T_true, params, X) + rng.normal(0, 3.0, (len(X), len(T_true), 17, 2))
    w = np.where(np.isfinite(px).all(-1), 1.0, 0.0)
    T_cal = _perturb(T_true, rng)
    plain = refine_camera_poses(T_cal, params, X, px, w)
    double = refine_camera_poses(T_cal, params, X, px, w, step=2.0)
    assert plain.rotation_deg.min() > 0.05
    np.testing.assert_allclose(double.rotation_deg, 2 * plain.rotation_deg, rtol=1e-6)
    D1 = plain.T_cam_world @ np.linalg.inv(T_cal)
    D2 = double.T_cam_world @ np.linalg.inv(T_cal)
    np.testing.assert_allclose(D2[:, :3, 3], 2 * D1[:, :3, 3], atol=1e-9)
    # past the minimiser: the residual after the doubled step is larger than after the plain one
    assert np.nanmedian(double.residual_px_after) > np.nanmedian(plain.residual_px_after)
