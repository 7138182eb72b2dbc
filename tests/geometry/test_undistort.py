import cv2
import numpy as np

from motionkit.geometry.camera import Camera
from motionkit.geometry.undistort import annotation_to_raw, pinhole_project, raw_to_annotation, undistorted_new_K

PARAMS = np.array([1761.275757, 1761.275757, 1920.0, 1080.0, 0.036902, 0.057131, -0.057154, 0.018458])


def _camera():
    return Camera("cam01", 3840, 2160, PARAMS, np.eye(4))


def test_annotation_pixels_match_opencv_undistortion():
    cam = _camera()
    K = undistorted_new_K(cam)
    raw = np.random.default_rng(0).uniform([400, 300], [3400, 1800], (500, 2))
    want = cv2.fisheye.undistortPoints(
        raw[:, None],
        cam.K,
        cam.D.reshape(4, 1),
        P=K,
        criteria=(cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 20, 1e-12),
    )[:, 0]
    np.testing.assert_allclose(raw_to_annotation(raw, cam, K), want, atol=1e-6)


def test_round_trip_raw_annotation_raw():
    cam = _camera()
    raw = np.random.default_rng(1).uniform([200, 200], [3600, 1900], (500, 2))
    np.testing.assert_allclose(annotation_to_raw(raw_to_annotation(raw, cam), cam), raw, atol=1e-6)


def test_pinhole_projection():
    K = np.array([[1000.0, 0, 500], [0, 900.0, 400], [0, 0, 1]])
    uv = pinhole_project(np.array([[0.1, -0.2, 2.0]]), K)
    np.testing.assert_allclose(uv, [[550.0, 310.0]])
