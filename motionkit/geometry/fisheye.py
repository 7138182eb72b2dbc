"""Kannala-Brandt K3 (KB3) fisheye projection and unprojection (cameras.md section 1).

Parameters ``params (..., 8)`` = fx, fy, cx, cy, k0, k1, k2, k3 in pixels at the calibration
resolution (``gopro_calibs.csv`` ``intrinsics_0..7``). Camera frame: x right, y down, z forward.
Pixel convention: integer pixel centres (projectaria).

Three implementations with identical semantics:

* numpy float64 (``kb3_project_np``, ``kb3_unproject_np``), the reference;
* torch (``kb3_project_torch``, ``kb3_unproject_torch``), differentiable, any device and dtype,
  with a NaN-free gradient at the optical axis;
* Numba (``kb3_unproject_numba``), a compiled parallel CPU path for large point sets.

``kb3_project`` / ``kb3_unproject`` dispatch on the array type.
"""

from __future__ import annotations

import math

import numba
import numpy as np

try:  # torch is a hard dependency of the package, but keep the numpy path importable alone
    import torch
except ImportError:  # pragma: no cover
    torch = None

NEWTON_MAX_ITERS = 20
NEWTON_TOL = 1e-12
CONVERGED_TOL = 1e-9


def _check_params(params, name: str = "params") -> None:
    if params.shape[-1] != 8:
        raise ValueError(f"{name} must have shape (..., 8) = fx, fy, cx, cy, k0..k3; got {tuple(params.shape)}")


def theta_max_np(params: np.ndarray) -> np.ndarray:
    """Largest valid incidence angle per camera: min(pi/2, first theta where d r_d / d theta <= 0).

    ``params (..., 8)`` -> ``(...)`` radians.
    """
    params = np.asarray(params, dtype=np.float64)
    _check_params(params)
    flat = params.reshape(-1, 8)
    if flat.shape[0] > 16:  # many rows usually repeat a few cameras: evaluate each distinct one once
        uniq, inv = np.unique(flat, axis=0, return_inverse=True)
        return theta_max_np(uniq)[inv.reshape(-1)].reshape(params.shape[:-1])
    th = np.linspace(0.0, np.pi / 2, 2049)
    k = params[..., 4:8, None]
    t2 = th * th
    dr = 1 + 3 * k[..., 0, :] * t2 + 5 * k[..., 1, :] * t2**2 + 7 * k[..., 2, :] * t2**3 + 9 * k[..., 3, :] * t2**4
    bad = dr <= 0
    first = np.where(bad.any(-1), np.argmax(bad, axis=-1), th.size - 1)
    return np.where(bad.any(-1), th[np.maximum(first - 1, 0)], np.pi / 2)


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
    t2 = th * th
    rd = th * (1 + t2 * (k0 + t2 * (k1 + t2 * (k2 + t2 * k3))))
    near_axis = r <= 1e-9 * np.abs(z)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(near_axis, 1.0 / np.where(z == 0, 1.0, z), rd / np.where(near_axis, 1.0, r))
    uv = np.stack([fx * s * x + cx, fy * s * y + cy], axis=-1)
    valid = (th < theta_max_np(params)) & np.isfinite(uv).all(-1)
    uv = np.where(valid[..., None], uv, np.nan)
    return (uv, valid) if return_valid else uv


def kb3_unproject_np(pixels: np.ndarray, params: np.ndarray, *, return_valid: bool = False):
    """Raw fisheye pixels -> unit rays in the camera frame (Newton on theta, cameras.md 1.2).

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
        t2 = th * th
        f = th * (1 + t2 * (k0 + t2 * (k1 + t2 * (k2 + t2 * k3)))) - rho
        df = 1 + t2 * (3 * k0 + t2 * (5 * k1 + t2 * (7 * k2 + t2 * 9 * k3)))
        step = f / np.where(df == 0, np.nan, df)
        th = th - step
        if not np.any(np.abs(step) >= NEWTON_TOL):  # NaN steps compare False and stop iterating
            break
    t2 = th * th
    f = th * (1 + t2 * (k0 + t2 * (k1 + t2 * (k2 + t2 * k3)))) - rho
    df = 1 + t2 * (3 * k0 + t2 * (5 * k1 + t2 * (7 * k2 + t2 * 9 * k3)))
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
    t2 = th * th
    rd = th * (1 + t2 * (k0 + t2 * (k1 + t2 * (k2 + t2 * k3))))
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
        t2 = th * th
        f = th * (1 + t2 * (k0 + t2 * (k1 + t2 * (k2 + t2 * k3)))) - rho
        df = 1 + t2 * (3 * k0 + t2 * (5 * k1 + t2 * (7 * k2 + t2 * 9 * k3)))
        th = th - f / df
    t2 = th * th
    f = th * (1 + t2 * (k0 + t2 * (k1 + t2 * (k2 + t2 * k3)))) - rho
    df = 1 + t2 * (3 * k0 + t2 * (5 * k1 + t2 * (7 * k2 + t2 * 9 * k3)))
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
@numba.njit(parallel=True, fastmath=False, cache=True)
def _unproject_kernel(uv, params, tmax, out):  # pragma: no cover - compiled
    n = uv.shape[0]
    fx, fy, cx, cy, k0, k1, k2, k3 = params
    for i in numba.prange(n):
        mx = (uv[i, 0] - cx) / fx
        my = (uv[i, 1] - cy) / fy
        rho = math.sqrt(mx * mx + my * my)
        th = rho
        for _ in range(NEWTON_MAX_ITERS):
            t2 = th * th
            f = th * (1 + t2 * (k0 + t2 * (k1 + t2 * (k2 + t2 * k3)))) - rho
            df = 1 + t2 * (3 * k0 + t2 * (5 * k1 + t2 * (7 * k2 + t2 * 9 * k3)))
            step = f / df
            th -= step
            if not abs(step) >= NEWTON_TOL:
                break
        t2 = th * th
        f = th * (1 + t2 * (k0 + t2 * (k1 + t2 * (k2 + t2 * k3)))) - rho
        df = 1 + t2 * (3 * k0 + t2 * (5 * k1 + t2 * (7 * k2 + t2 * 9 * k3)))
        if abs(f) < CONVERGED_TOL and df > 0 and th >= 0 and th < tmax:
            st = math.sin(th)
            if rho < 1e-12:
                out[i, 0] = 0.0
                out[i, 1] = 0.0
            else:
                out[i, 0] = st * mx / rho
                out[i, 1] = st * my / rho
            out[i, 2] = math.cos(th)
        else:
            out[i, 0] = np.nan
            out[i, 1] = np.nan
            out[i, 2] = np.nan


def kb3_unproject_numba(pixels: np.ndarray, params: np.ndarray) -> np.ndarray:
    """Compiled parallel unprojection for one camera: ``pixels (..., 2)``, ``params (8,)`` -> ``(..., 3)``."""
    params = np.ascontiguousarray(params, dtype=np.float64)
    if params.shape != (8,):
        raise ValueError(f"kb3_unproject_numba takes one camera's params (8,); got {params.shape}")
    uv = np.ascontiguousarray(np.asarray(pixels, dtype=np.float64).reshape(-1, 2))
    out = np.empty((uv.shape[0], 3))
    _unproject_kernel(uv, params, float(theta_max_np(params)), out)
    return out.reshape(*np.shape(pixels)[:-1], 3)


# ------------------------------------------------------------------------------------------------ dispatch
def _is_torch(x) -> bool:
    return torch is not None and isinstance(x, torch.Tensor)


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
