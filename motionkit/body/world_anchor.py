"""The fitted body's world, anchored on the Aria trajectory (docs/pipeline.md, "fit": "world anchor").

The fit puts the body where the calibrated exo cameras triangulate it. A camera's calibration error
moves that world by about its distance times its angular error, so far cameras (a court's, 8-20 m)
leave the whole body a few centimetres from where the Aria glasses, localised by their own SLAM, put
the head; near cameras (2-5 m) leave millimetres. ``aria_world_shift`` estimates the offset of one take
as the median, over its valid frames, of the Aria CPF minus the fitted eye midpoint (frames more than
10 cm from a first median left out), and shrinks it by how much more the Aria estimate is to be
believed than the cameras' world (per axis):

    shift = median(cpf - eyes) * s_cam^2 / (s_cam^2 + s_aria^2),
    s_cam = camera_error_per_m * (median distance of the supporting cameras to the body),
    s_aria = aria_error_m.

The body (and the cameras with it, so that every reprojection is unchanged) is moved by ``shift``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motionkit.geometry.rotations import make_transform


@dataclass(frozen=True)
class WorldAnchorConfig:
    """How the fitted body's world is anchored on the Aria trajectory (``aria_world_shift``).

    ``use_aria``: move the fitted body (and the cameras it was fitted in) by the shift; False keeps the
    calibration's world. ``camera_error_per_m``: standard deviation, per axis, of the cameras' world
    offset per metre of camera distance (0.0015: 1.5 mm at 1 m, about 0.09 deg of calibration error).
    ``aria_error_m``: standard deviation, per axis, of the Aria estimate of that offset (the CPF sits a
    centimetre or so from the eye midpoint, and SLAM drifts a few centimetres over a take).
    ``inlier_m``: frames whose offset is farther than this from the median offset are left out of the
    final median. ``min_frames``: fewer valid frames with an Aria pose than this leave the world as it is."""

    use_aria: bool = True
    camera_error_per_m: float = 0.0015
    aria_error_m: float = 0.010
    inlier_m: float = 0.10
    min_frames: int = 10

    def __post_init__(self) -> None:
        if self.camera_error_per_m < 0 or self.aria_error_m <= 0 or self.inlier_m <= 0 or self.min_frames < 1:
            raise ValueError(
                "world_anchor: camera_error_per_m must be >= 0, aria_error_m and inlier_m > 0, min_frames >= 1; "
                f"got {self.camera_error_per_m}, {self.aria_error_m}, {self.inlier_m}, {self.min_frames}"
            )


def camera_distance_m(camera_centers: np.ndarray, body_position: np.ndarray, supporting: np.ndarray) -> float:
    """Median distance (m) from each camera to the body where it supports the fit.

    ``camera_centers (V, 3)`` world metres, ``body_position (M, 3)`` (the pelvis, world metres),
    ``supporting (M, V)`` bool: the camera supports frame ``m`` (``body.quality.ObservationSupport.cameras``).
    NaN when no camera supports any frame."""
    dist = np.linalg.norm(body_position[:, None] - camera_centers[None], axis=-1)  # (M, V)
    picked = dist[np.asarray(supporting, bool) & np.isfinite(dist)]
    return float(np.median(picked)) if picked.size else float("nan")


def aria_world_shift(eyes: np.ndarray, cpf: np.ndarray, usable: np.ndarray, camera_distance: float,
                     cfg: WorldAnchorConfig) -> np.ndarray:  # fmt: skip
    """``(3,)`` metres to add to the fitted world so that the body sits where the Aria trajectory puts it
    (the module docstring's rule).

    ``eyes (M, 3)`` fitted eye midpoint and ``cpf (M, 3)`` Aria CPF, world metres; ``usable (M,)`` bool:
    valid frames with an Aria pose; ``camera_distance`` metres (``camera_distance_m``). Zero when
    ``cfg.use_aria`` is off, with fewer than ``cfg.min_frames`` usable frames (or frames near the first
    median), or without a distance."""
    usable = np.asarray(usable, bool) & np.isfinite(eyes).all(-1) & np.isfinite(cpf).all(-1)
    if not cfg.use_aria or usable.sum() < cfg.min_frames or not np.isfinite(camera_distance):
        return np.zeros(3)
    diff = cpf[usable] - eyes[usable]
    offset = np.median(diff, axis=0)
    near = np.linalg.norm(diff - offset, axis=-1) <= cfg.inlier_m  # a relocalised stretch of SLAM is left out
    if near.sum() < cfg.min_frames:  # no consistent offset: the Aria track and the fit disagree too much
        return np.zeros(3)
    offset = np.median(diff[near], axis=0)
    s_cam2 = (cfg.camera_error_per_m * camera_distance) ** 2
    return offset * s_cam2 / (s_cam2 + cfg.aria_error_m**2)


def shifted_cameras(T_cam_world: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``(V, 4, 4)`` world -> camera transforms of cameras moved with the world by ``shift (3,)``: a point
    ``x + shift`` maps to where ``x`` did under ``T_cam_world (V, 4, 4)``."""
    return np.asarray(T_cam_world, np.float64) @ make_transform(np.eye(3), -np.asarray(shift, np.float64))
