"""Ego-Exo4D undistorted annotation pixels <-> raw fisheye pixels (docs/conventions.md, "Cameras").

Ego-Exo4D's exo ``annotation2D`` lives in the pinhole image made by OpenCV's fisheye undistortion
with ``new_K = estimateNewCameraMatrixForUndistortRectify(K, D, (W, H), I, balance=0.8)``.
"""

from __future__ import annotations

import cv2
import numpy as np

from motionkit.geometry.camera import Camera
from motionkit.geometry.fisheye import kb3_project_np, kb3_unproject_np

ANNOTATION_BALANCE = 0.8


def undistorted_new_K(camera: Camera, balance: float = ANNOTATION_BALANCE) -> np.ndarray:
    """The ``(3, 3)`` pinhole K of the undistorted image (OpenCV's balance rule, ``(W, H)`` size)."""
    K = camera.K
    D = camera.D.reshape(4, 1)
    return cv2.fisheye.estimateNewCameraMatrixForUndistortRectify(
        K, D, (int(camera.width), int(camera.height)), np.eye(3), balance=balance
    ).astype(np.float64)


def annotation_to_raw(pixels: np.ndarray, camera: Camera, new_K: np.ndarray | None = None) -> np.ndarray:
    """Undistorted annotation pixels ``(..., 2)`` -> raw fisheye pixels ``(..., 2)``."""
    K = undistorted_new_K(camera) if new_K is None else new_K
    p = np.asarray(pixels, dtype=np.float64)
    n = np.stack([(p[..., 0] - K[0, 2]) / K[0, 0], (p[..., 1] - K[1, 2]) / K[1, 1], np.ones(p.shape[:-1])], -1)
    return kb3_project_np(n, camera.params)


def raw_to_annotation(pixels: np.ndarray, camera: Camera, new_K: np.ndarray | None = None) -> np.ndarray:
    """Raw fisheye pixels ``(..., 2)`` -> undistorted annotation pixels (NaN at or beyond 90 degrees)."""
    K = undistorted_new_K(camera) if new_K is None else new_K
    ray = kb3_unproject_np(pixels, camera.params)
    z = np.where(ray[..., 2] > 1e-9, ray[..., 2], np.nan)
    return np.stack([K[0, 0] * ray[..., 0] / z + K[0, 2], K[1, 1] * ray[..., 1] / z + K[1, 2]], -1)


def pinhole_project(points_cam: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Camera-frame points ``(..., 3)`` -> pinhole pixels with ``K``; NaN for z <= 0."""
    z = np.where(points_cam[..., 2] > 1e-9, points_cam[..., 2], np.nan)
    return np.stack([K[0, 0] * points_cam[..., 0] / z + K[0, 2], K[1, 1] * points_cam[..., 1] / z + K[1, 2]], -1)
