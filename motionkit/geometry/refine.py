"""Per-take refinement of the exo cameras' poses against a fitted body (docs/pipeline.md, "fit").

A GoPro calibration from structure-from-motion is a few pixels off in every view, and a fit through it
inherits the views' disagreement. Once the body is fitted, its landmarks are the best 3D points the take
has: each camera's pose is moved by a small rotation and translation (in the camera's frame) that brings
the landmarks' projections onto the observations, robustly and under a Gaussian prior that keeps the
correction small (and the world frame where the calibration put it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import roma
import torch

from motionkit.geometry.camera import rig_to_camera_torch
from motionkit.geometry.fisheye import kb3_project_torch, theta_max_np
from motionkit.geometry.robust import gmof


@dataclass(frozen=True)
class CameraRefineConfig:
    """``rotation_sigma_deg`` / ``translation_sigma_m``: the prior's scale of the correction (per camera,
    per axis); ``robust_px``: the Geman-McClure scale of the pixel residuals; ``iters``: L-BFGS
    iterations."""

    rotation_sigma_deg: float = 0.5
    translation_sigma_m: float = 0.05
    robust_px: float = 20.0
    iters: int = 60


@dataclass
class CameraRefinement:
    """``T_cam_world (V, 4, 4)`` the refined poses; ``rotation_deg``, ``translation_m (V,)`` the size of
    each camera's correction; ``residual_px_before`` / ``_after (V,)`` the median pixel residual
    of the landmarks (NaN for a view without weight)."""

    T_cam_world: np.ndarray
    rotation_deg: np.ndarray
    translation_m: np.ndarray
    residual_px_before: np.ndarray
    residual_px_after: np.ndarray


def refine_camera_poses(
    T_cam_world: np.ndarray,
    params: np.ndarray,
    points: np.ndarray,
    pixels: np.ndarray,
    weights: np.ndarray,
    cfg: CameraRefineConfig | None = None,
    step: float = 1.0,
) -> CameraRefinement:
    """Move each camera so that ``points`` project onto ``pixels``.

    Args:
        T_cam_world: ``(V, 4, 4)`` world -> camera.
        params: ``(V, 8)`` KB3 intrinsics (fixed).
        points: ``(M, J, 3)`` world metres (the fitted landmarks; NaN where missing).
        pixels: ``(M, V, J, 2)`` raw pixels of the observations (NaN where missing).
        weights: ``(M, V, J)`` >= 0, the fit's final observation weights.
        step: the multiple of the minimising correction that is applied (``r_v``, ``t_v`` scaled): 1 the
            minimiser; above 1 an over-relaxed step for an alternation in which the points follow the
            moved cameras part of the way (``body.fitting.fit_takes``).

    Minimises, over a rotation vector ``r_v`` and translation ``t_v`` per camera (camera frame,
    ``T_v' = [exp(r_v) | t_v] T_v``), ``sum w GM(|proj_v(X) - x|^2) / sum w + sum |r_v / sigma_r|^2 + |t_v /
    sigma_t|^2`` with Geman-McClure ``GM(e2) = e2 rho^2 / (e2 + rho^2)``. A camera without weight keeps
    its pose.
    """
    cfg = cfg or CameraRefineConfig()
    V = len(T_cam_world)
    f64 = torch.float64
    T = torch.as_tensor(T_cam_world, dtype=f64)
    P = torch.as_tensor(params, dtype=f64)
    theta_max = torch.as_tensor(theta_max_np(np.asarray(params, np.float64)), dtype=f64)
    ok = np.isfinite(pixels).all(-1) & np.isfinite(points).all(-1)[:, None] & (weights > 0)
    X = torch.as_tensor(np.nan_to_num(points), dtype=f64)
    x = torch.as_tensor(np.nan_to_num(pixels), dtype=f64)
    w = torch.as_tensor(np.where(ok, weights, 0.0), dtype=f64)
    rot = torch.zeros(V, 3, dtype=f64, requires_grad=True)
    trans = torch.zeros(V, 3, dtype=f64, requires_grad=True)
    sigma_r = np.deg2rad(cfg.rotation_sigma_deg)

    def residuals_sq(r: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        dR = roma.rotvec_to_rotmat(r)
        R = dR @ T[:, :3, :3]
        tt = (dR @ T[:, :3, 3:])[..., 0] + t
        pc = rig_to_camera_torch(X, R, tt)
        uv, valid = kb3_project_torch(pc, P[None, :, None], return_valid=True, theta_max=theta_max[None, :, None])
        e2 = torch.where(valid, ((uv - x) ** 2).sum(-1), torch.zeros_like(uv[..., 0]))
        return e2, valid

    total = w.sum().clamp_min(1e-12)
    opt = torch.optim.LBFGS([rot, trans], max_iter=cfg.iters, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        e2, valid = residuals_sq(rot, trans)
        data = cfg.robust_px**2 * (w * valid * gmof(e2, cfg.robust_px)).sum() / total
        loss = data + ((rot / sigma_r) ** 2).sum() + ((trans / cfg.translation_sigma_m) ** 2).sum()
        loss.backward()
        return loss

    with torch.no_grad():
        before = residuals_sq(rot, trans)
    if ok.any():
        opt.step(closure)
    with torch.no_grad():
        rot, trans = rot * step, trans * step
        after = residuals_sq(rot, trans)
        dR = roma.rotvec_to_rotmat(rot)
        out = np.array(T_cam_world, dtype=np.float64, copy=True)
        out[:, :3, :3] = (dR @ T[:, :3, :3]).numpy()
        out[:, :3, 3] = ((dR @ T[:, :3, 3:])[..., 0] + trans).numpy()
    return CameraRefinement(out, *pose_change(T_cam_world, out), _median_px(before, ok), _median_px(after, ok))


def pose_change(T_from: np.ndarray, T_to: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rotation_deg (V,), translation_m (V,))``: the size of the correction ``[dR | dt] = T_to
    T_from^-1`` between two sets of world -> camera poses ``(V, 4, 4)`` (in the camera's frame)."""
    D = np.asarray(T_to, np.float64) @ np.linalg.inv(np.asarray(T_from, np.float64))
    cos = np.clip((np.trace(D[:, :3, :3], axis1=-2, axis2=-1) - 1) / 2, -1.0, 1.0)
    return np.rad2deg(np.arccos(cos)), np.linalg.norm(D[:, :3, 3], axis=-1)


def chain_refinements(T_calibrated: np.ndarray, rounds: list[CameraRefinement]) -> CameraRefinement:
    """One ``CameraRefinement`` for several rounds run one after the other: the last poses, their
    change from the calibration, the residuals before the first round and after the last."""
    last = rounds[-1]
    return CameraRefinement(
        last.T_cam_world,
        *pose_change(T_calibrated, last.T_cam_world),
        rounds[0].residual_px_before,
        last.residual_px_after,
    )


def _median_px(res: tuple[torch.Tensor, torch.Tensor], ok: np.ndarray) -> np.ndarray:
    """``(V,)`` median pixel residual over the used observations of each view."""
    e = np.sqrt(res[0].numpy())
    use = ok & res[1].numpy()
    return np.array([np.median(e[:, v][use[:, v]]) if use[:, v].any() else np.nan for v in range(e.shape[1])])
