"""Kannala-Brandt K3 (KB3) fisheye projection and unprojection (docs/conventions.md, "Cameras").

Parameters ``params (..., 8)`` = fx, fy, cx, cy, k0, k1, k2, k3 in pixels at the calibration
resolution (``gopro_calibs.csv`` ``intrinsics_0..7``). Camera frame: x right, y down, z forward.
Pixel convention: integer pixel centres (projectaria).

Three implementations with identical semantics:

* numpy float64 (``kb3_project_np``, ``kb3_unproject_np``), the reference;
* torch (``kb3_project_torch``, ``kb3_unproject_torch``), differentiable, any device and dtype,
  with a NaN-free gradient at the optical axis;
* Numba (``kb3_project_point_nb``, ``kb3_unproject_point_nb`` for one point inside compiled
  kernels such as triangulation; ``kb3_unproject_numba``, a parallel CPU path for large point sets).

The distortion polynomial ``r_d(theta) = theta (1 + k0 theta^2 + k1 theta^4 + k2 theta^6 + k3 theta^8)``
and its derivative are written once (``kb3_distort``, ``kb3_distort_derivative``): plain arithmetic
that numpy arrays and torch tensors evaluate directly and that Numba compiles for its kernels.

``kb3_project`` / ``kb3_unproject`` dispatch on the array type.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch

NEWTON_MAX_ITERS = 20
NEWTON_TOL = 1e-12
CONVERGED_TOL = 1e-9


def kb3_distort(theta, k0, k1, k2, k3):
    """KB3 distorted radius ``r_d(theta)`` (normalised image units) for arrays, tensors or scalars."""
    t2 = theta * theta
    return theta * (1 + t2 * (k0 + t2 * (k1 + t2 * (k2 + t2 * k3))))


def kb3_distort_derivative(theta, k0, k1, k2, k3):
    """``d r_d / d theta`` of ``kb3_distort``."""
    t2 = theta * theta
    return 1 + t2 * (3 * k0 + t2 * (5 * k1 + t2 * (7 * k2 + t2 * 9 * k3)))


_distort_nb = numba.njit(cache=True, inline="always")(kb3_distort)
_distort_derivative_nb = numba.njit(cache=True, inline="always")(kb3_distort_derivative)


def _check_params(params, name: str = "params") -> None:
    if params.shape[-1] != 8:
        raise ValueError(f"{name} must have shape (..., 8) = fx, fy, cx, cy, k0..k3; got {tuple(params.shape)}")


def theta_max_np(params: np.ndarray) -> np.ndarray:
    """Largest valid incidence angle per camera: min(pi/2, first theta where d r_d / d theta <= 0).

    ``params (..., 8)`` -> ``(...)`` radians.
    """
    params = np.asarray(params, dtype=np.float64)
    _check_params(params)
    # many rows usually repeat a few cameras: evaluate each distinct one once
    uniq, inv = np.unique(params.reshape(-1, 8), axis=0, return_inverse=True)
    th = np.linspace(0.0, np.pi / 2, 2049)
    k = uniq[:, 4:8, None]
    bad = kb3_distort_derivative(th, k[:, 0], k[:, 1], k[:, 2], k[:, 3]) <= 0  # (U, 2049)
    first = np.argmax(bad, axis=-1)
    out = np.where(bad.any(-1), th[np.maximum(first - 1, 0)], np.pi / 2)
    return out[inv.reshape(-1)].reshape(params.shape[:-1])


def kb3_project_np(points_cam: np.ndarray, params: np.ndarray, *, return_valid: bool = False):
    """Project camera-frame points to raw fisheye pixels.

    ``points_cam (..., 3)`` metres (any unit), ``params (..., 8)`` -> ``(..., 2)`` pixels. Points with
    incidence angle >= theta_max (behind the camera for GoPros) are NaN. With ``return_valid`` also
    returns the ``(...)`` bool mask.
    """
    p = np.asarray(points_cam, dtype=np.float64)
    params = np.asarray(params, dtype=np.float64)
    if p.shape[-1] != 3:
        raise ValueError(f"points_cam must have shape (..., 3); got {p.shape}")
    _check_params(params)
    x, y, z = p[..., 0], p[..., 1], p[..., 2]
    fx, fy, cx, cy, k0, k1, k2, k3 = np.moveaxis(params, -1, 0)
    r = np.hypot(x, y)
    th = np.arctan2(r, z)
    rd = kb3_distort(th, k0, k1, k2, k3)
    near_axis = r <= 1e-9 * np.abs(z)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(near_axis, 1.0 / np.where(z == 0, 1.0, z), rd / np.where(near_axis, 1.0, r))
    uv = np.stack([fx * s * x + cx, fy * s * y + cy], axis=-1)
    valid = (th < theta_max_np(params)) & np.isfinite(uv).all(-1)
    uv = np.where(valid[..., None], uv, np.nan)
    return (uv, valid) if return_valid else uv


def kb3_unproject_np(pixels: np.ndarray, params: np.ndarray, *, return_valid: bool = False):
    """Raw fisheye pixels -> unit rays in the camera frame (Newton on theta).

    ``pixels (..., 2)``, ``params (..., 8)`` -> ``(..., 3)`` unit vectors; NaN where Newton does not
    converge or theta >= theta_max. With ``return_valid`` also returns the ``(...)`` bool mask.
    """
    uv = np.asarray(pixels, dtype=np.float64)
    params = np.asarray(params, dtype=np.float64)
    if uv.shape[-1] != 2:
        raise ValueError(f"pixels must have shape (..., 2); got {uv.shape}")
    _check_params(params)
    fx, fy, cx, cy, k0, k1, k2, k3 = np.moveaxis(params, -1, 0)
    mx = (uv[..., 0] - cx) / fx
    my = (uv[..., 1] - cy) / fy
    rho = np.hypot(mx, my)
    th = rho.copy()
    for _ in range(NEWTON_MAX_ITERS):
        df = kb3_distort_derivative(th, k0, k1, k2, k3)
        step = (kb3_distort(th, k0, k1, k2, k3) - rho) / np.where(df == 0, np.nan, df)
        th = th - step
        if not np.any(np.abs(step) >= NEWTON_TOL):  # NaN steps compare False and stop iterating
            break
    f = kb3_distort(th, k0, k1, k2, k3) - rho
    df = kb3_distort_derivative(th, k0, k1, k2, k3)
    valid = (np.abs(f) < CONVERGED_TOL) & (df > 0) & (th >= 0) & (th < theta_max_np(params))
    small = rho < 1e-12
    inv_rho = 1.0 / np.where(small, 1.0, rho)
    st = np.sin(th)
    ray = np.stack(
        [np.where(small, 0.0, st * mx * inv_rho), np.where(small, 0.0, st * my * inv_rho), np.cos(th)], axis=-1
    )
    ray = np.where(valid[..., None], ray, np.nan)
    return (ray, valid) if return_valid else ray


# ------------------------------------------------------------------------------------------------ torch
def kb3_project_torch(points_cam, params, *, return_valid: bool = False, theta_max=None):
    """Differentiable KB3 projection (see ``kb3_project_np``); invalid points are NaN.

    For loss terms use ``return_valid=True`` and mask with ``valid``: gradients of the masked
    entries are finite (the two-``where`` trick keeps 0/0 out of the graph). ``theta_max``: the
    cameras' valid angle (broadcastable to the points), precomputed by hot loops to avoid a host sync.
    """
    _check_params(params)
    x, y, z = points_cam[..., 0], points_cam[..., 1], points_cam[..., 2]
    fx, fy, cx, cy, k0, k1, k2, k3 = params.unbind(-1)
    r2 = x * x + y * y
    near_axis = r2 <= (1e-9 * z) ** 2
    r = torch.sqrt(torch.where(near_axis, torch.ones_like(r2), r2))
    th = torch.atan2(r, z)
    rd = kb3_distort(th, k0, k1, k2, k3)
    z_safe = torch.where(z.abs() > 0, z, torch.ones_like(z))
    # pinhole limit near the axis: r_d / r -> 1/z (exact to O(theta^2))
    s = torch.where(near_axis, 1.0 / z_safe, rd / r)
    uv = torch.stack([fx * s * x + cx, fy * s * y + cy], dim=-1)
    if theta_max is None:
        theta_max = torch.as_tensor(theta_max_np(params.detach().cpu().double().numpy()), device=th.device)
    valid = (th < theta_max.to(th.dtype)) & (z > 0)
    if return_valid:
        return uv, valid
    return torch.where(valid[..., None], uv, torch.full_like(uv, float("nan")))


def kb3_unproject_torch(pixels, params, *, return_valid: bool = False):
    """Torch KB3 unprojection (Newton, fixed iterations, no grad through the loop's control flow)."""
    _check_params(params)
    fx, fy, cx, cy, k0, k1, k2, k3 = params.unbind(-1)
    mx = (pixels[..., 0] - cx) / fx
    my = (pixels[..., 1] - cy) / fy
    rho = torch.sqrt(mx * mx + my * my)
    th = rho
    for _ in range(NEWTON_MAX_ITERS):
        th = th - (kb3_distort(th, k0, k1, k2, k3) - rho) / kb3_distort_derivative(th, k0, k1, k2, k3)
    f = kb3_distort(th, k0, k1, k2, k3) - rho
    df = kb3_distort_derivative(th, k0, k1, k2, k3)
    tol = CONVERGED_TOL if th.dtype == torch.float64 else 1e-5
    tmax = torch.as_tensor(theta_max_np(params.detach().cpu().double().numpy()), device=th.device)
    valid = (f.abs() < tol) & (df > 0) & (th >= 0) & (th < tmax.to(th.dtype))
    small = rho < 1e-12
    inv_rho = 1.0 / torch.where(small, torch.ones_like(rho), rho)
    st = torch.sin(th)
    zero = torch.zeros_like(rho)
    ray = torch.stack(
        [torch.where(small, zero, st * mx * inv_rho), torch.where(small, zero, st * my * inv_rho), torch.cos(th)],
        dim=-1,
    )
    if return_valid:
        return ray, valid
    return torch.where(valid[..., None], ray, torch.full_like(ray, float("nan")))


# ------------------------------------------------------------------------------------------------ numba
@numba.njit(cache=True, inline="always")
def kb3_project_point_nb(X0, X1, X2, R, t, p, tmax):  # pragma: no cover - compiled
    """One world point -> raw pixel ``(u, v)`` for a camera ``R (3, 3)``, ``t (3,)`` (camera from world),
    ``p (8,)``; NaN where the incidence angle is not below ``tmax``. Semantics of ``kb3_project_np``."""
    x = R[0, 0] * X0 + R[0, 1] * X1 + R[0, 2] * X2 + t[0]
    y = R[1, 0] * X0 + R[1, 1] * X1 + R[1, 2] * X2 + t[1]
    z = R[2, 0] * X0 + R[2, 1] * X1 + R[2, 2] * X2 + t[2]
    r = math.sqrt(x * x + y * y)
    th = math.atan2(r, z)
    if not th < tmax:
        return np.nan, np.nan
    rd = _distort_nb(th, p[4], p[5], p[6], p[7])
    s = 1.0 / z if r <= 1e-9 * abs(z) else rd / r
    return p[0] * s * x + p[2], p[1] * s * y + p[3]


@numba.njit(cache=True, inline="always")
def kb3_unproject_point_nb(u, v, p, tmax):  # pragma: no cover - compiled
    """One raw pixel -> ``(ok, x, y, z)`` unit camera ray (Newton on theta, as ``kb3_unproject_np``)."""
    mx = (u - p[2]) / p[0]
    my = (v - p[3]) / p[1]
    rho = math.sqrt(mx * mx + my * my)
    th = rho
    for _ in range(NEWTON_MAX_ITERS):
        step = (_distort_nb(th, p[4], p[5], p[6], p[7]) - rho) / _distort_derivative_nb(th, p[4], p[5], p[6], p[7])
        th -= step
        if not abs(step) >= NEWTON_TOL:
            break
    f = _distort_nb(th, p[4], p[5], p[6], p[7]) - rho
    df = _distort_derivative_nb(th, p[4], p[5], p[6], p[7])
    if not (abs(f) < CONVERGED_TOL and df > 0 and th >= 0 and th < tmax):
        return False, np.nan, np.nan, np.nan
    if rho < 1e-12:
        return True, 0.0, 0.0, 1.0
    st = math.sin(th)
    return True, st * mx / rho, st * my / rho, math.cos(th)


@numba.njit(parallel=True, cache=True)
def _unproject_kernel(uv, params, tmax, out):  # pragma: no cover - compiled
    for i in numba.prange(uv.shape[0]):
        _, out[i, 0], out[i, 1], out[i, 2] = kb3_unproject_point_nb(uv[i, 0], uv[i, 1], params, tmax)


@numba.njit(parallel=True, cache=True)
def _project_kernel(pc, params, tmax, out):  # pragma: no cover - compiled
    eye = np.eye(3)
    zero = np.zeros(3)
    for i in numba.prange(pc.shape[0]):
        out[i, 0], out[i, 1] = kb3_project_point_nb(pc[i, 0], pc[i, 1], pc[i, 2], eye, zero, params, tmax)


def _run_one_camera(kernel, points: np.ndarray, params: np.ndarray, d_in: int, d_out: int, name: str) -> np.ndarray:
    """Run a compiled per-point ``kernel(flat_in, params, theta_max, out)`` over ``points (..., d_in)``
    of one camera ``params (8,)`` -> ``(..., d_out)``."""
    params = np.ascontiguousarray(params, dtype=np.float64)
    if params.shape != (8,):
        raise ValueError(f"{name} takes one camera's params (8,); got {params.shape}")
    flat = np.ascontiguousarray(np.asarray(points, dtype=np.float64).reshape(-1, d_in))
    out = np.empty((flat.shape[0], d_out))
    kernel(flat, params, float(theta_max_np(params)), out)
    return out.reshape(*np.shape(points)[:-1], d_out)


def kb3_project_numba(points_cam: np.ndarray, params: np.ndarray) -> np.ndarray:
    """Compiled parallel projection for one camera: ``points_cam (..., 3)``, ``params (8,)`` -> ``(..., 2)``
    raw pixels (NaN where invalid), as ``kb3_project_np``."""
    return _run_one_camera(_project_kernel, points_cam, params, 3, 2, "kb3_project_numba")


def kb3_unproject_numba(pixels: np.ndarray, params: np.ndarray) -> np.ndarray:
    """Compiled parallel unprojection for one camera: ``pixels (..., 2)``, ``params (8,)`` -> ``(..., 3)``."""
    return _run_one_camera(_unproject_kernel, pixels, params, 2, 3, "kb3_unproject_numba")


# ------------------------------------------------------------------------------------------------ dispatch
def _is_torch(x) -> bool:
    return isinstance(x, torch.Tensor)


def kb3_project(points_cam, params, *, return_valid: bool = False):
    """KB3 projection; torch tensors go to ``kb3_project_torch``, anything else to numpy."""
    if _is_torch(points_cam):
        return kb3_project_torch(points_cam, params, return_valid=return_valid)
    return kb3_project_np(points_cam, params, return_valid=return_valid)


NUMBA_MIN_POINTS = 20_000


def kb3_unproject(pixels, params, *, return_valid: bool = False):
    """KB3 unprojection; torch tensors go to ``kb3_unproject_torch``; large numpy point sets of one
    camera to the compiled ``kb3_unproject_numba``; anything else to ``kb3_unproject_np``."""
    if _is_torch(pixels):
        return kb3_unproject_torch(pixels, params, return_valid=return_valid)
    params_np = np.asarray(params)
    if params_np.shape == (8,) and np.size(pixels) >= 2 * NUMBA_MIN_POINTS:
        ray = kb3_unproject_numba(pixels, params_np)
        return (ray, np.isfinite(ray[..., 0])) if return_valid else ray
    return kb3_unproject_np(pixels, params, return_valid=return_valid)
