import cv2
import numpy as np
import pytest

from motionkit.geometry.camera import Camera, CameraRig
from motionkit.geometry.rotations import axis_rotation, make_transform
from motionkit.geometry.undistort import annotation_to_raw, raw_to_annotation, undistorted_new_K

REP = np.array([1761.275757, 1761.275757, 1921.3, 1078.4, 0.036902, 0.057131, -0.057154, 0.018458])


def cam(w=3840, h=2160):
    T = make_transform(axis_rotation("y", 0.3) @ axis_rotation("x", -0.2), np.array([1.0, -2.0, 0.5]))
    p = REP.copy()
    if h > w:  # portrait: the principal point swaps too
        p[2], p[3] = REP[3], REP[2]
    return Camera("cam01", w, h, p, T)


def test_project_unproject_world():
    c = cam()
    rng = np.random.default_rng(0)
    X = c.T_world_cam[:3, :3] @ np.array([0.2, -0.1, 1.0]) * 3 + c.center + rng.normal(0, 0.3, (50, 3))
    uv = c.project(X)
    rays, center = c.unproject(uv)
    d = X - center
    np.testing.assert_allclose(rays, d / np.linalg.norm(d, axis=1, keepdims=True), atol=1e-9)


def test_rig_project_shapes_and_order():
    c1, c2 = cam(), Camera("cam02", 3840, 2160, REP, make_transform(np.eye(3), np.array([0.0, 0.0, -5.0])))
    rig = CameraRig([c1, c2])
    X = np.random.default_rng(1).normal(size=(7, 17, 3))
    uv = rig.project(X)
    assert uv.shape == (7, 2, 17, 2)
    np.testing.assert_allclose(uv[:, 1], c2.project(X), equal_nan=True)
    per_view = rig.project(np.stack([X, X + 1], axis=1), per_view=True)
    np.testing.assert_allclose(per_view[:, 1], c2.project(X + 1), equal_nan=True)
    assert rig["cam02"] is c2 and rig.names == ["cam01", "cam02"]
    with pytest.raises(ValueError, match="duplicate"):
        CameraRig([c1, c1])


def test_scaled_camera_pixel_centre_rule():
    c = cam()
    s = 448 / 2160
    small = c.scaled(s)
    X = c.center + c.T_world_cam[:3, :3] @ np.array([0.3, 0.1, 2.0])
    u_full = c.project(X)
    u_small = small.project(X)
    np.testing.assert_allclose((u_small + 0.5) / s - 0.5, u_full, atol=1e-9)


@pytest.mark.parametrize("size", [(3840, 2160), (2160, 3840)])
def test_annotation_conversions_match_opencv(size):
    c = cam(*size)
    K, D = c.K, c.D.reshape(4, 1)
    newK = cv2.fisheye.estimateNewCameraMatrixForUndistortRectify(K, D, size, np.eye(3), balance=0.8)
    np.testing.assert_allclose(undistorted_new_K(c), newK)
    rng = np.random.default_rng(2)
    raw = rng.uniform([0, 0], size, (2000, 2))
    ann = raw_to_annotation(raw, c)
    ref = cv2.fisheye.undistortPoints(raw[:, None, :], K, D, R=np.eye(3), P=newK)[:, 0]
    assert np.abs(ann - ref).max() < 1e-6
    back = annotation_to_raw(ann, c)
    assert np.abs(back - raw).max() < 1e-6
    n = np.stack([(ann[:, 0] - newK[0, 2]) / newK[0, 0], (ann[:, 1] - newK[1, 2]) / newK[1, 1]], -1)
    ref_raw = cv2.fisheye.distortPoints(n[:, None, :], K, D)[:, 0]
    assert np.abs(back - ref_raw).max() < 1e-6
