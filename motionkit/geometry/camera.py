"""Static exo cameras: KB3 intrinsics plus a pose, and the rig of one take (docs/conventions.md, "Cameras")."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from motionkit.geometry.fisheye import kb3_project_np, kb3_unproject_np
from motionkit.geometry.rotations import axis_rotation, invert_transform, make_transform


def inside_image(pixels: np.ndarray, width, height, margin: float = 0.0) -> np.ndarray:
    """``(...)`` bool: raw pixels ``(..., 2)`` inside an image of ``width`` x ``height`` (broadcast against
    the pixels' leading dims) enlarged by ``margin`` (a fraction of each side). Pixel centres are integers,
    so the image spans ``-0.5 .. width - 0.5`` (docs/conventions.md); NaN pixels are outside."""
    u, v = pixels[..., 0], pixels[..., 1]
    mw, mh = margin * width, margin * height
    return (u >= -0.5 - mw) & (u <= width - 0.5 + mw) & (v >= -0.5 - mh) & (v <= height - 0.5 + mh)


def rig_to_camera(points: np.ndarray, R_cw: np.ndarray, t_cw: np.ndarray) -> np.ndarray:
    """World points ``(..., V, J, 3)`` (one set per view; a size-1 view axis broadcasts) into the frames of
    ``V`` cameras, ``R_cw (V, 3, 3)`` and ``t_cw (V, 3)`` world -> camera: ``(..., V, J, 3)``. The world ->
    camera step of every rig projection (``CameraRig.to_camera``, ``CameraRig.project``)."""
    return np.einsum("vij,...vkj->...vki", R_cw, points) + t_cw[:, None, :]


def rig_to_camera_torch(points: torch.Tensor, R_cw: torch.Tensor, t_cw: torch.Tensor) -> torch.Tensor:
    """Torch twin of ``rig_to_camera`` for points shared by the views: ``points (..., M, J, 3)`` world,
    ``R_cw (..., V, 3, 3)``, ``t_cw (..., V, 3)`` -> ``(..., M, V, J, 3)`` camera frames."""
    return torch.einsum("...vij,...mkj->...mvki", R_cw, points) + t_cw[..., None, :, None, :]


def look_at(center: np.ndarray, target: np.ndarray, roll: float = 0.0) -> np.ndarray:
    """``T_world_cam (4, 4)`` for a camera at ``center`` looking at ``target`` (world z up, image x level,
    then ``roll`` radians about the optical axis)."""
    z = target - center
    z /= np.linalg.norm(z)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    R = np.stack([x, y, z], axis=1) @ axis_rotation("z", roll)
    return make_transform(R, center)


@dataclass(frozen=True)
class Camera:
    """One static fisheye camera.

    ``params (8,)`` = fx, fy, cx, cy, k0..k3 at ``width x height``; ``T_world_cam (4, 4)`` maps
    camera-frame points (x right, y down, z forward) to the world (metres, z up).
    """

    name: str
    width: int
    height: int
    params: np.ndarray
    T_world_cam: np.ndarray
    meta: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        params = np.asarray(self.params, dtype=np.float64)
        T = np.asarray(self.T_world_cam, dtype=np.float64)
        if params.shape != (8,):
            raise ValueError(f"camera {self.name}: params must have shape (8,), got {params.shape}")
        if T.shape != (4, 4):
            raise ValueError(f"camera {self.name}: T_world_cam must have shape (4, 4), got {T.shape}")
        if not (np.isfinite(params).all() and np.isfinite(T).all()):
            raise ValueError(f"camera {self.name}: non-finite intrinsics or pose")
        if params[0] <= 0 or params[1] <= 0:
            raise ValueError(f"camera {self.name}: focal lengths must be positive, got {params[:2]}")
        if not np.allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-6) or np.linalg.det(T[:3, :3]) < 0:
            raise ValueError(f"camera {self.name}: T_world_cam rotation is not a proper rotation")
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "T_world_cam", T)

    @property
    def T_cam_world(self) -> np.ndarray:
        return invert_transform(self.T_world_cam)

    @property
    def center(self) -> np.ndarray:
        """Camera centre in the world, ``(3,)``."""
        return self.T_world_cam[:3, 3].copy()

    @property
    def K(self) -> np.ndarray:
        fx, fy, cx, cy = self.params[:4]
        return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])

    @property
    def D(self) -> np.ndarray:
        return self.params[4:8].copy()

    def world_to_cam(self, points_world: np.ndarray) -> np.ndarray:
        """``(..., 3)`` world -> camera frame."""
        T = self.T_cam_world
        return np.asarray(points_world, dtype=np.float64) @ T[:3, :3].T + T[:3, 3]

    def project(self, points_world: np.ndarray, *, return_valid: bool = False):
        """World points ``(..., 3)`` -> raw pixels ``(..., 2)``; NaN behind the camera."""
        return kb3_project_np(self.world_to_cam(points_world), self.params, return_valid=return_valid)

    def unproject(self, pixels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw pixels ``(..., 2)`` -> (world-frame unit rays ``(..., 3)``, camera centre ``(3,)``)."""
        rays_cam = kb3_unproject_np(pixels, self.params)
        return rays_cam @ self.T_world_cam[:3, :3].T, self.center

    def in_image(self, pixels: np.ndarray, margin: float = 0.0) -> np.ndarray:
        """``(...)`` bool: pixel inside the image enlarged by ``margin`` (fraction of each side)."""
        return inside_image(pixels, self.width, self.height, margin)

    def scaled(self, s: float) -> Camera:
        """The same camera for an image resized by ``s`` (pixel-centre rule ``c' = s (c + 0.5) - 0.5``)."""
        p = self.params.copy()
        p[0:2] *= s
        p[2:4] = s * (p[2:4] + 0.5) - 0.5
        return Camera(self.name, round(self.width * s), round(self.height * s), p, self.T_world_cam, dict(self.meta))


@dataclass(frozen=True)
class CameraRig:
    """The exo cameras of one take, in a fixed order."""

    cameras: tuple[Camera, ...]

    def __init__(self, cameras) -> None:
        cams = tuple(cameras)
        if not cams:
            raise ValueError("a camera rig needs at least one camera")
        names = [c.name for c in cams]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate camera names in rig: {names}")
        object.__setattr__(self, "cameras", cams)

    def __len__(self) -> int:
        return len(self.cameras)

    def __iter__(self):
        return iter(self.cameras)

    def __getitem__(self, i):
        if isinstance(i, str):
            return self.cameras[self.names.index(i)]
        return self.cameras[i]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.cameras]

    @property
    def params(self) -> np.ndarray:
        """``(V, 8)`` intrinsics."""
        return np.stack([c.params for c in self.cameras])

    @property
    def T_cam_world(self) -> np.ndarray:
        """``(V, 4, 4)`` world-to-camera transforms."""
        return np.stack([c.T_cam_world for c in self.cameras])

    @property
    def centers(self) -> np.ndarray:
        return np.stack([c.center for c in self.cameras])

    @property
    def sizes(self) -> np.ndarray:
        """``(V, 2)`` (width, height)."""
        return np.array([[c.width, c.height] for c in self.cameras])

    def subset(self, names) -> CameraRig:
        return CameraRig([self[n] for n in names])

    def project(self, points_world: np.ndarray, *, per_view: bool = False, return_valid: bool = False):
        """Project world points into every view.

        ``points_world (..., J, 3)`` broadcasts to all views, or with ``per_view`` it is
        ``(..., V, J, 3)``; returns ``(..., V, J, 2)`` raw pixels (NaN where invalid).
        """
        return kb3_project_np(self.to_camera(points_world, per_view=per_view), self.params[:, None, :],
                              return_valid=return_valid)  # fmt: skip

    def in_image(self, pixels: np.ndarray, margin: float = 0.0) -> np.ndarray:
        """``(..., V, J)`` bool: pixels ``(..., V, J, 2)`` inside their view's image (``inside_image``)."""
        W, H = self.sizes[:, 0][:, None], self.sizes[:, 1][:, None]
        return inside_image(pixels, W, H, margin)

    def to_camera(self, points_world: np.ndarray, *, per_view: bool = False) -> np.ndarray:
        """World points ``(..., J, 3)`` (or ``(..., V, J, 3)`` with ``per_view``) in every camera's frame:
        ``(..., V, J, 3)`` (``rig_to_camera``)."""
        P = np.asarray(points_world, dtype=np.float64)
        if per_view and (P.ndim < 3 or P.shape[-3] != len(self)):
            raise ValueError(f"per_view points must have shape (..., {len(self)}, J, 3); got {P.shape}")
        T = self.T_cam_world  # (V, 4, 4)
        return rig_to_camera(P if per_view else P[..., None, :, :], T[:, :3, :3], T[:, :3, 3])
