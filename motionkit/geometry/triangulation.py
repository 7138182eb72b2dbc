"""Robust multi-view triangulation of keypoints from raw fisheye pixels (docs/pipeline.md, "triangulate").

Per frame, view and joint: a raw pixel and a confidence. Observations with ``conf >= conf_min``
are unprojected (KB3, Newton) to world rays. The linear solve is the confidence-weighted DLT in
ray space: for a view with unit ray ``d`` and an orthonormal basis ``e1, e2`` of the plane normal
to ``d``, the rows ``w e_k^T [R | t]`` act on the homogeneous point; with ``X_4 = 1`` this is the
3x3 system ``sum_v w_v^2 (I - d_v d_v^T) (X - C_v) = 0`` (``C_v`` the camera centre), which works
for any ray direction. Then:

1. RANSAC over all pairs of valid views (3+ views): each pair's point is reprojected into every
   valid view; views within ``ransac_px`` are inliers; most inliers wins, ties go to the lower mean
   inlier error; the winner is re-solved on its inliers.
2. While the worst inlier residual exceeds ``max_residual_px`` and more than ``min_views``
   inliers remain, drop that view and re-solve.
3. Fewer than ``min_views`` inliers -> ``TOO_FEW_VIEWS``; mean (or max) inlier residual above
   ``max_residual_px`` -> ``RESIDUAL_REJECTED``; a point behind an inlier camera -> ``CHEIRALITY``.
4. Optional Huber refinement (Gauss-Newton / IRLS on pixel residuals of the inliers).

Two implementations with identical results: a Numba kernel (default, one compiled loop over
points, parallel) and a batched numpy reference (``backend="numpy"``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from dataclasses import dataclass

import numba
import numpy as np

from motionkit.common.nanstats import nan_median
from motionkit.geometry.camera import CameraRig
from motionkit.geometry.fisheye import (
    kb3_project_np,
    kb3_project_point_nb,
    kb3_unproject_np,
    kb3_unproject_point_nb,
    theta_max_np,
)

STATUS_NAMES = ("OK", "TOO_FEW_VIEWS", "RESIDUAL_REJECTED", "CHEIRALITY", "NO_CONVERGENCE")
OK, TOO_FEW_VIEWS, RESIDUAL_REJECTED, CHEIRALITY, NO_CONVERGENCE = range(5)


@dataclass(frozen=True)
class TriangulationConfig:
    """How joints are triangulated (``triangulate``) and whole views judged (``view_outliers``).

    ``min_views``: views a joint needs; ``max_residual_px``: the worst view is removed while its
    residual exceeds this; ``ransac_px``: inlier threshold of the RANSAC over view pairs; ``conf_min``:
    keypoints below this confidence are not used; ``residual_stat``: "mean" or "max" over the inlier
    views for the final rejection; ``huber_*``: optional Huber refinement of the points.
    ``view_outlier_*`` (``view_outliers``): at frames seen by ``view_outlier_min_views`` views or more, a
    view with ``view_outlier_min_joints`` keypoints or more is someone else when a share of
    ``view_outlier_share`` of them is rejected; its limit is at most the pixels that
    ``view_outlier_offset_m`` spans at the head's distance; keypoints of ``view_outlier_confident_min``
    confidence or more count as confident."""

    min_views: int = 2
    max_residual_px: float = 60.0
    ransac_px: float = 35.0
    conf_min: float = 0.3
    residual_stat: str = "mean"  # "mean" or "max" over inlier views for the final rejection
    huber_refine: bool = False
    huber_delta_px: float = 10.0
    huber_iters: int = 4
    view_outlier_min_views: int = 3
    view_outlier_min_joints: int = 4
    view_outlier_share: float = 0.5
    view_outlier_offset_m: float = 0.15
    view_outlier_confident_min: float = 0.5


@dataclass
class TriangulationResult:
    """``points (F, J, 3)`` world metres (NaN unless status OK); ``residual_px (F, V, J)`` pixel
    reprojection error of the final point in every view with a valid observation (NaN otherwise);
    ``inlier (F, V, J)``; ``n_views (F, J)`` inlier count; ``status (F, J)`` int8 (``STATUS_NAMES``);
    ``resid_mean``, ``resid_max (F, J)`` over inliers."""

    points: np.ndarray
    residual_px: np.ndarray
    inlier: np.ndarray
    n_views: np.ndarray
    status: np.ndarray
    resid_mean: np.ndarray
    resid_max: np.ndarray

    def status_counts(self) -> dict[str, int]:
        return {n: int((self.status == i).sum()) for i, n in enumerate(STATUS_NAMES)}


def _validate(pixels: np.ndarray, conf: np.ndarray, rig: CameraRig) -> None:
    if not isinstance(rig, CameraRig) or len(rig) == 0:
        raise ValueError("triangulate needs a non-empty CameraRig")
    if pixels.ndim != 4 or pixels.shape[-1] != 2:
        raise ValueError(f"pixels must have shape (F, V, J, 2); got {pixels.shape}")
    if conf.shape != pixels.shape[:-1]:
        raise ValueError(f"conf must have shape {pixels.shape[:-1]} (F, V, J); got {conf.shape}")
    if pixels.shape[1] != len(rig):
        raise ValueError(f"pixels have {pixels.shape[1]} views but the rig has {len(rig)} cameras")
    if not np.isfinite(rig.params).all():
        raise ValueError("camera parameters must be finite")


def _flatten(pixels: np.ndarray, conf: np.ndarray, conf_min: float):
    """``(F, V, J, ...)`` -> points first: pixels ``(N, V, 2)``, weights ``(N, V)`` with N = F*J."""
    F, V, J, _ = pixels.shape
    px = np.ascontiguousarray(np.moveaxis(pixels, 1, 2).reshape(F * J, V, 2))
    w = np.moveaxis(conf, 1, 2).reshape(F * J, V)
    w = np.where((w >= conf_min) & np.isfinite(px).all(-1), w, 0.0)
    return px, w


def _world_rays(px: np.ndarray, w: np.ndarray, rig: CameraRig):
    """World rays ``(N, V, 3)`` of the usable observations and their weights (0 where unusable)."""
    dirs = np.empty(px.shape[:-1] + (3,))
    for v, cam in enumerate(rig):  # a loop over cameras (a handful), not points
        dirs[:, v] = kb3_unproject_np(px[:, v], cam.params) @ cam.T_world_cam[:3, :3].T
    ok = (w > 0) & np.isfinite(dirs).all(-1)
    return dirs, np.where(ok, w, 0.0)


# ------------------------------------------------------------------------------------------------ numpy reference
def _solve_np(C: np.ndarray, dirs: np.ndarray, w: np.ndarray, mask: np.ndarray):
    """Weighted ray-space DLT for each row: ``mask (..., V)`` -> ``X (..., 3)``, ``ok (...)``.

    Two passes: plain confidence weights, then weights divided by each view's depth so that the
    residuals are angles (close to pixels) rather than metres.
    """
    X, ok = _solve_once_np(C, dirs, w, mask, None)
    X2, ok2 = _solve_once_np(C, dirs, w, mask, np.where(ok[..., None], X, 0.0))
    return np.where(ok[..., None], X2, np.nan), ok & ok2


def _solve_once_np(C, dirs, w, mask, X0):
    """One weighted solve; with ``X0`` the weights are divided by each view's squared depth at X0."""
    ww = np.where(mask, w, 0.0) ** 2
    if X0 is not None:
        dep = _ray_depth(X0, np.nan_to_num(dirs), C)
        ww = ww / np.maximum(dep * dep, 1e-4)
    d = np.nan_to_num(dirs)
    P = np.eye(3) - d[..., :, None] * d[..., None, :]  # (..., V, 3, 3)
    A = np.einsum("...v,...vij->...ij", ww, P)
    b = np.einsum("...v,...vij,vj->...i", ww, P, C)
    det = np.linalg.det(A)
    scale = np.einsum("...ii->...", A) ** 3 + 1e-300
    ok = (mask.sum(-1) >= 2) & (np.abs(det) > 1e-12 * scale)
    A = np.where(ok[..., None, None], A, np.eye(3))
    X = np.linalg.solve(A, b[..., None])[..., 0]
    return np.where(ok[..., None], X, np.nan), ok


def _reproject_np(X: np.ndarray, rig: CameraRig, px: np.ndarray) -> np.ndarray:
    """Pixel errors ``(..., V)`` of points ``X (..., 3)`` in every view against ``px (..., V, 2)``
    (broadcasting over the leading dims)."""
    pc = rig.to_camera(X[..., None, :])[..., 0, :]  # (..., V, 3)
    return np.linalg.norm(kb3_project_np(pc, rig.params) - px, axis=-1)


def _ray_depth(X: np.ndarray, dirs: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Depth of ``X (..., 3)`` along each view's ray: ``d_v . (X - C_v)`` -> ``(..., V)``."""
    return np.einsum("...vi,...vi->...v", dirs, X[..., None, :] - C)


def _triangulate_np(px, dirs, w, rig: CameraRig, cfg: TriangulationConfig):
    N, V, _ = dirs.shape
    C = rig.centers
    valid = w > 0
    nvalid = valid.sum(-1)
    pairs = np.array(list(itertools.combinations(range(V), 2))) if V >= 2 else np.zeros((0, 2), int)
    inl = valid.copy()
    if len(pairs):
        pm = np.zeros((len(pairs), V), bool)
        pm[np.arange(len(pairs)), pairs[:, 0]] = True
        pm[np.arange(len(pairs)), pairs[:, 1]] = True
        pmask = pm[None] & valid[:, None, :]  # (N, P, V)
        pair_ok = pmask.sum(-1) == 2
        Xp, okp = _solve_once_np(C, dirs[:, None], w[:, None], pmask, None)  # (N, P, 3), one pass
        err = _reproject_np(Xp, rig, px[:, None])  # (N, P, V)
        depth_ok = _ray_depth(Xp, np.nan_to_num(dirs)[:, None], C) > 0
        cheir = np.where(pmask, depth_ok, True).all(-1)
        good = pair_ok & okp & cheir
        e_in = valid[:, None] & (err < cfg.ransac_px)
        count = np.where(good, e_in.sum(-1), -1)
        mean_in = np.where(e_in, err, 0).sum(-1) / np.maximum(e_in.sum(-1), 1)
        # most inliers, then lowest mean inlier error, then the first pair
        key = count * 1e7 - np.minimum(mean_in, 1e6)
        best = np.argmax(np.where(good, key, -np.inf), axis=-1)
        Xa, oka = _solve_np(C, dirs, w, valid)
        all_agree = oka & np.where(valid, _reproject_np(Xa, rig, px) < cfg.ransac_px, True).all(-1)
        use_ransac = (nvalid >= 3) & good.any(-1) & ~all_agree
        inl = np.where(use_ransac[:, None], e_in[np.arange(N), best], valid)
    X, ok = _solve_np(C, dirs, w, inl)
    for _ in range(max(V - cfg.min_views, 0)):
        err = _reproject_np(X, rig, px)
        e = np.where(inl, np.where(np.isfinite(err), err, np.inf), -1.0)
        worst = np.argmax(e, -1)
        drop = (e.max(-1) > cfg.max_residual_px) & (inl.sum(-1) > cfg.min_views)
        if not drop.any():
            break
        inl[np.flatnonzero(drop), worst[drop]] = False
        X2, ok2 = _solve_np(C, dirs[drop], w[drop], inl[drop])
        X[drop], ok[drop] = X2, ok2
    return X, inl, ok


# ------------------------------------------------------------------------------------------------ numba kernel
@numba.njit(cache=True)
def _nb_solve_once(C, d, w, mask, X0, X1, X2, reweight):  # pragma: no cover - compiled
    a00 = a01 = a02 = a11 = a12 = a22 = 0.0
    b0 = b1 = b2 = 0.0
    n = 0
    for v in range(C.shape[0]):
        if not (mask >> v) & 1:
            continue
        n += 1
        ww = w[v] * w[v]
        if reweight:
            dep = d[v, 0] * (X0 - C[v, 0]) + d[v, 1] * (X1 - C[v, 1]) + d[v, 2] * (X2 - C[v, 2])
            ww /= max(dep * dep, 1e-4)
        dx, dy, dz = d[v, 0], d[v, 1], d[v, 2]
        p00, p01, p02 = 1 - dx * dx, -dx * dy, -dx * dz
        p11, p12, p22 = 1 - dy * dy, -dy * dz, 1 - dz * dz
        a00 += ww * p00
        a01 += ww * p01
        a02 += ww * p02
        a11 += ww * p11
        a12 += ww * p12
        a22 += ww * p22
        cx, cy, cz = C[v, 0], C[v, 1], C[v, 2]
        b0 += ww * (p00 * cx + p01 * cy + p02 * cz)
        b1 += ww * (p01 * cx + p11 * cy + p12 * cz)
        b2 += ww * (p02 * cx + p12 * cy + p22 * cz)
    if n < 2:
        return False, np.nan, np.nan, np.nan
    c00 = a11 * a22 - a12 * a12
    c01 = a02 * a12 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    det = a00 * c00 + a01 * c01 + a02 * c02
    tr = a00 + a11 + a22
    if not abs(det) > 1e-12 * (tr * tr * tr + 1e-300):
        return False, np.nan, np.nan, np.nan
    c11 = a00 * a22 - a02 * a02
    c12 = a01 * a02 - a00 * a12
    c22 = a00 * a11 - a01 * a01
    inv = 1.0 / det
    return (
        True,
        (c00 * b0 + c01 * b1 + c02 * b2) * inv,
        (c01 * b0 + c11 * b1 + c12 * b2) * inv,
        (c02 * b0 + c12 * b1 + c22 * b2) * inv,
    )


@numba.njit(cache=True)
def _nb_solve(C, d, w, mask):  # pragma: no cover - compiled
    ok, X0, X1, X2 = _nb_solve_once(C, d, w, mask, 0.0, 0.0, 0.0, False)
    if ok:  # second pass: weight by 1 / depth^2, so that residuals are angles (~pixels), not metres
        ok, X0, X1, X2 = _nb_solve_once(C, d, w, mask, X0, X1, X2, True)
    return ok, X0, X1, X2


@numba.njit(parallel=True, cache=True)
def _nb_kernel(
    px, w, C, Rcw, tcw, params, tmax, min_views, max_res, ransac_px, X_out, inl_out, ok_out, err_out, dirs
):  # pragma: no cover
    N, V = w.shape
    for n in numba.prange(N):
        valid = 0
        nv = 0
        for v in range(V):
            if w[n, v] > 0:
                okr, dx, dy, dz = kb3_unproject_point_nb(px[n, v, 0], px[n, v, 1], params[v], tmax[v])
                if okr:  # camera ray -> world: R_wc = R_cw^T
                    dirs[n, v, 0] = Rcw[v, 0, 0] * dx + Rcw[v, 1, 0] * dy + Rcw[v, 2, 0] * dz
                    dirs[n, v, 1] = Rcw[v, 0, 1] * dx + Rcw[v, 1, 1] * dy + Rcw[v, 2, 1] * dz
                    dirs[n, v, 2] = Rcw[v, 0, 2] * dx + Rcw[v, 1, 2] * dy + Rcw[v, 2, 2] * dz
                    valid |= 1 << v
                    nv += 1
                    continue
            dirs[n, v, 0] = dirs[n, v, 1] = dirs[n, v, 2] = 0.0
        inl = valid
        need_ransac = False
        if nv >= 3:
            ok, X0, X1, X2 = _nb_solve(C, dirs[n], w[n], valid)
            need_ransac = not ok
            if ok:
                for v in range(V):
                    if (valid >> v) & 1:
                        u, vv = kb3_project_point_nb(X0, X1, X2, Rcw[v], tcw[v], params[v], tmax[v])
                        e = math.sqrt((u - px[n, v, 0]) ** 2 + (vv - px[n, v, 1]) ** 2)
                        if not e < ransac_px:
                            need_ransac = True
        if need_ransac:
            best_cnt = -1
            best_mean = np.inf
            best_inl = 0
            for a in range(V):
                if not (valid >> a) & 1:
                    continue
                for b in range(a + 1, V):
                    if not (valid >> b) & 1:
                        continue
                    pm = (1 << a) | (1 << b)
                    ok, X0, X1, X2 = _nb_solve_once(C, dirs[n], w[n], pm, 0.0, 0.0, 0.0, False)
                    if not ok:
                        continue
                    bad = False
                    for v in (a, b):
                        dep = (
                            dirs[n, v, 0] * (X0 - C[v, 0])
                            + dirs[n, v, 1] * (X1 - C[v, 1])
                            + dirs[n, v, 2] * (X2 - C[v, 2])
                        )
                        if not dep > 0:
                            bad = True
                    if bad:
                        continue
                    cnt = 0
                    tot = 0.0
                    cur = 0
                    for v in range(V):
                        if not (valid >> v) & 1:
                            continue
                        u, vv = kb3_project_point_nb(X0, X1, X2, Rcw[v], tcw[v], params[v], tmax[v])
                        e = math.sqrt((u - px[n, v, 0]) ** 2 + (vv - px[n, v, 1]) ** 2)
                        if e < ransac_px:
                            cur |= 1 << v
                            cnt += 1
                            tot += e
                    mean = tot / max(cnt, 1)
                    if cnt > best_cnt or (cnt == best_cnt and mean < best_mean):
                        best_cnt, best_mean, best_inl = cnt, mean, cur
            if best_cnt >= 0:
                inl = best_inl
        ok, X0, X1, X2 = _nb_solve(C, dirs[n], w[n], inl)
        for _ in range(max(V - min_views, 0)):
            if not ok:
                break
            worst = -1
            wv = -1.0
            ninl = 0
            for v in range(V):
                if (inl >> v) & 1:
                    ninl += 1
                    u, vv = kb3_project_point_nb(X0, X1, X2, Rcw[v], tcw[v], params[v], tmax[v])
                    e = math.sqrt((u - px[n, v, 0]) ** 2 + (vv - px[n, v, 1]) ** 2)
                    if e != e:
                        e = np.inf  # an inlier that no longer projects is the worst view
                    if e > wv:
                        wv = e
                        worst = v
            if not (wv > max_res and ninl > min_views):
                break
            inl &= ~(1 << worst)
            ok, X0, X1, X2 = _nb_solve(C, dirs[n], w[n], inl)
        for v in range(V):
            inl_out[n, v] = (inl >> v) & 1
            if ok and (valid >> v) & 1:
                u, vv = kb3_project_point_nb(X0, X1, X2, Rcw[v], tcw[v], params[v], tmax[v])
                err_out[n, v] = math.sqrt((u - px[n, v, 0]) ** 2 + (vv - px[n, v, 1]) ** 2)
            else:
                err_out[n, v] = np.nan
        X_out[n, 0], X_out[n, 1], X_out[n, 2] = X0, X1, X2
        ok_out[n] = ok


def _triangulate_numba(px, w, rig: CameraRig, cfg: TriangulationConfig):
    """Compiled path: unprojection, RANSAC, rejection and residuals in one parallel loop over points."""
    N, V = w.shape
    T = rig.T_cam_world
    X = np.empty((N, 3))
    inl = np.empty((N, V), dtype=np.bool_)
    ok = np.empty(N, dtype=np.bool_)
    err = np.empty((N, V))
    dirs = np.empty((N, V, 3))
    _nb_kernel(
        np.ascontiguousarray(px, dtype=np.float64),
        np.ascontiguousarray(w),
        rig.centers,
        np.ascontiguousarray(T[:, :3, :3]),
        np.ascontiguousarray(T[:, :3, 3]),
        rig.params,
        theta_max_np(rig.params),
        cfg.min_views,
        cfg.max_residual_px,
        cfg.ransac_px,
        X,
        inl,
        ok,
        err,
        dirs,
    )
    w = np.where((dirs != 0).any(-1), w, 0.0)
    return X, inl, ok, err, dirs, w


# ------------------------------------------------------------------------------------------------ public API
def triangulate(
    pixels: np.ndarray,
    conf: np.ndarray,
    rig: CameraRig,
    cfg: TriangulationConfig | None = None,
    *,
    backend: str = "numba",
    **overrides,
) -> TriangulationResult:
    """Triangulate keypoints seen in several fisheye views.

    Args:
        pixels: ``(F, V, J, 2)`` raw fisheye pixels (NaN = missing), views in ``rig`` order.
        conf: ``(F, V, J)`` confidences in [0, 1]; observations below ``cfg.conf_min`` are ignored.
        rig: the cameras.
        cfg: thresholds (``TriangulationConfig``); ``overrides`` replace single fields of it
            (``max_residual_px=200.0``).
        backend: ``"numba"`` (compiled, default) or ``"numpy"`` (batched reference, ``triangulate_naive``).

    Returns:
        A ``TriangulationResult`` (see its docstring).
    """
    cfg = dataclasses.replace(cfg or TriangulationConfig(), **overrides)
    pixels = np.asarray(pixels, dtype=np.float64)
    conf = np.asarray(conf, dtype=np.float64)
    _validate(pixels, conf, rig)
    if cfg.min_views < 2:
        raise ValueError("min_views must be >= 2")
    if cfg.residual_stat not in ("mean", "max"):
        raise ValueError("residual_stat must be 'mean' or 'max'")
    min_views, max_residual_px, residual_stat = cfg.min_views, cfg.max_residual_px, cfg.residual_stat
    F, V, J, _ = pixels.shape
    px, w = _flatten(pixels, conf, cfg.conf_min)
    if backend == "numba":
        X, inl, ok, err, dirs, w = _triangulate_numba(px, w, rig, cfg)
    elif backend == "numpy":
        dirs, w = _world_rays(px, w, rig)
        X, inl, ok = _triangulate_np(px, dirs, w, rig, cfg)
        err = None
    else:
        raise ValueError(f"unknown backend {backend!r}")
    if cfg.huber_refine:
        X = huber_refine_points(X, px, np.where(inl, w, 0.0), rig, cfg.huber_delta_px, cfg.huber_iters)
        err = None
    if err is None:
        err = _reproject_np(X, rig, px)
    valid = w > 0
    err = np.where(valid & ok[:, None], err, np.nan)
    n_inl = inl.sum(-1)
    e_in = np.where(inl & np.isfinite(err), err, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rmean = np.where(n_inl > 0, e_in.sum(-1) / n_inl, np.nan)
    rmax = np.where(n_inl > 0, np.where(inl, np.nan_to_num(err, nan=np.inf), -np.inf).max(-1), np.nan)
    depth_bad = (inl & ~(_ray_depth(X, np.nan_to_num(dirs), rig.centers) > 0)).any(-1)
    status = np.full(len(X), OK, dtype=np.int8)
    stat = rmax if residual_stat == "max" else rmean
    status[~(stat <= max_residual_px)] = RESIDUAL_REJECTED
    status[depth_bad] = CHEIRALITY
    status[~ok | (n_inl < min_views)] = TOO_FEW_VIEWS
    X = np.where((status == OK)[:, None], X, np.nan)
    inl = inl & (status == OK)[:, None]
    return TriangulationResult(
        points=X.reshape(F, J, 3),
        residual_px=np.moveaxis(err.reshape(F, J, V), 2, 1),
        inlier=np.moveaxis(inl.reshape(F, J, V), 2, 1),
        n_views=np.where(status == OK, n_inl, 0).reshape(F, J),
        status=status.reshape(F, J),
        resid_mean=rmean.reshape(F, J),
        resid_max=rmax.reshape(F, J),
    )


def triangulate_naive(px: np.ndarray, conf: np.ndarray, rig: CameraRig, conf_min: float = 0.3) -> np.ndarray:
    """Slow reference of ``triangulate`` without its robustness: undistort every observation (vectorised
    per camera), then per point build the 2V x 4 DLT matrix in normalised coordinates and take its SVD.
    ``px (F, V, J, 2)`` raw pixels, ``conf (F, V, J)`` -> ``(F, J, 3)`` world metres (NaN with fewer
    than two views of ``conf >= conf_min``)."""
    F, V, J, _ = px.shape
    P = [c.T_cam_world[:3] for c in rig]
    rays = np.stack([kb3_unproject_np(px[:, v], rig[v].params) for v in range(V)], axis=1)  # (F, V, J, 3)
    xy = rays[..., :2] / rays[..., 2:]
    use = (conf >= conf_min) & np.isfinite(xy).all(-1)
    out = np.full((F, J, 3), np.nan)
    for f in range(F):
        for j in range(J):
            rows = []
            for v in range(V):
                if use[f, v, j]:
                    x, y = xy[f, v, j]
                    rows += [x * P[v][2] - P[v][0], y * P[v][2] - P[v][1]]
            if len(rows) >= 4:
                X = np.linalg.svd(np.array(rows))[2][-1]
                out[f, j] = X[:3] / X[3]
    return out


def view_outliers(
    tri: TriangulationResult,
    config: TriangulationConfig | None = None,
    rig: CameraRig | None = None,
    confidence: np.ndarray | None = None,
    head_joints: tuple[int, ...] = (0, 1, 2, 3, 4),
) -> np.ndarray:
    """``(F, V)`` bool: views whose person as a whole disagrees with the others (``VIEW_OUTLIER``), e.g.
    a bystander selected while the wearer is hidden in that view.

    With the thresholds of ``config`` (``TriangulationConfig``'s ``max_residual_px`` and
    ``view_outlier_*``): at a frame seen by at least ``view_outlier_min_views`` views, a view is an
    outlier when a share of ``view_outlier_share`` or more of its keypoints (``view_outlier_min_joints``
    at least) is rejected: of all of them, those that are no inlier of a triangulated joint or lie more
    than ``max_residual_px`` from the best point of the others; or of its confident ones, those that are
    no inlier or lie farther than the limit from the point. It is one as well when the median residual
    of its confident ``head_joints`` exceeds the limit, leaving out the head joints that two views
    observe and disagree on (no third view says which one is wrong: an ear that the wearer's view and a
    bystander's both show would make both outliers). The limit is ``max_residual_px`` and, given the
    ``rig``, at most the pixels that ``view_outlier_offset_m`` spans at the head's distance from that
    camera (a person 0.3 m from the wearer is ~50 px away in a camera 10 m off, within any pixel
    threshold that near cameras need). Confident are the keypoints of ``view_outlier_confident_min`` or
    more given their ``confidence (F, V, J)``, else all: a camera
    behind the wearer gets the hidden face as low-confidence guesses a tenth of the body's height off,
    which are no evidence of someone else. With two views nothing says which one is wrong: no
    outliers there.
    """
    cfg = config or TriangulationConfig()
    max_residual_px, min_joints = cfg.max_residual_px, cfg.view_outlier_min_joints
    res = tri.residual_px  # (F, V, J) NaN where the view has no observation
    has = np.isfinite(res)
    confident = has if confidence is None else has & (confidence >= cfg.view_outlier_confident_min)
    limit = np.full(res.shape[:2], max_residual_px)
    if rig is not None:  # metres to pixels at the head (the fisheye's r ~ f theta near its centre)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            head_pt = np.nanmean(tri.points[:, list(head_joints)], axis=1)  # (F, 3)
        dist = np.linalg.norm(head_pt[:, None] - rig.centers[None], axis=-1)  # (F, V)
        limit = np.fmin(limit, cfg.view_outlier_offset_m * rig.params[:, 0] / dist)
    ok = (tri.status == OK)[:, None, :]
    off_all = has & ((ok & ~tri.inlier) | (~ok & (res > max_residual_px)))  # NaN compares False
    off_confident = confident & ((ok & ~tri.inlier) | (res > limit[..., None]))
    undecided = ~ok & (has.sum(1, keepdims=True) == 2)  # (F, 1, J) two views that disagree: which is wrong?
    seen = (has.any(-1).sum(-1) >= cfg.view_outlier_min_views)[:, None]
    outlier = np.zeros(res.shape[:2], bool)
    for judged, off in ((has, off_all), (confident, off_confident)):
        n = judged.sum(-1)
        outlier |= seen & (n >= min_joints) & (off.sum(-1) >= cfg.view_outlier_share * n)
    head = np.where((confident & ~undecided)[..., list(head_joints)], res[..., list(head_joints)], np.nan)
    head_med = nan_median(head)  # NaN for views without a head observation
    return outlier | (seen & (has.sum(-1) >= min_joints) & (head_med > limit))


def huber_refine_points(X, px, w, rig: CameraRig, delta: float = 10.0, iters: int = 4) -> np.ndarray:
    """IRLS / Gauss-Newton on pixel residuals with Huber weights, batched over points.

    ``X (N, 3)``, ``px (N, V, 2)``, ``w (N, V)`` (0 = not used) -> refined ``(N, 3)``.
    """
    X = X.copy()
    ok = np.isfinite(X).all(-1) & ((w > 0).sum(-1) >= 2)
    h = 1e-6
    for _ in range(iters):
        Xs = X[ok]
        pts = np.concatenate([Xs[:, None], Xs[:, None] + h * np.eye(3)[None]], axis=1)  # (n, 4, 3)
        uv = kb3_project_np(rig.to_camera(pts[..., None, :])[..., 0, :], rig.params)  # (n, 4, V, 2)
        r = uv[:, 0] - px[ok]  # (n, V, 2)
        Jm = (uv[:, 1:] - uv[:, :1]) / h  # (n, 3, V, 2)
        Jm = np.moveaxis(Jm, 1, -1)  # (n, V, 2, 3)
        e = np.linalg.norm(r, axis=-1)
        hub = np.where(e <= delta, 1.0, delta / np.maximum(e, 1e-12))
        ww = np.where(np.isfinite(e), w[ok] * hub, 0.0)
        r = np.nan_to_num(r)
        Jm = np.nan_to_num(Jm)
        H = np.einsum("nv,nvki,nvkj->nij", ww, Jm, Jm) + 1e-9 * np.eye(3)
        g = np.einsum("nv,nvki,nvk->ni", ww, Jm, r)
        X[ok] = Xs - np.linalg.solve(H, g[..., None])[..., 0]
    return X


@dataclass(frozen=True)
class PruneResult:
    kept: list[str]
    dropped: dict[str, str]  # camera -> reason
    median_distance_m: dict[str, float]


PRUNE_NEVER_BELOW_M = 25.0


def prune_far_cameras(
    rig: CameraRig, subject_points: np.ndarray, ratio: float = 3.0, never_below_m: float = PRUNE_NEVER_BELOW_M
) -> PruneResult:
    """Drop cameras whose median distance to the subject exceeds ``ratio`` x the closest camera's
    (SOMA's rule) and ``never_below_m``.

    The floor is motionkit's: without it, one camera standing close to the wearer (1.5 m) prunes
    every camera beyond 4.5 m, although a person 20 m from a 4K GoPro (f ~ 1,770 px) is still ~150 px
    tall and well detected (court cameras stand 8-22 m from the players). ``subject_points (T, 3)``
    world metres (e.g. the Aria head anchor; NaN rows ignored).
    """
    if len(rig) == 0:
        raise ValueError("prune_far_cameras needs a non-empty rig")
    P = np.asarray(subject_points, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] != 3:
        raise ValueError(f"subject_points must have shape (T, 3); got {P.shape}")
    P = P[np.isfinite(P).all(1)]
    if len(P) == 0:
        return PruneResult(rig.names, {}, {n: math.nan for n in rig.names})
    d = np.median(np.linalg.norm(P[:, None, :] - rig.centers[None], axis=-1), axis=0)
    dmin = d.min()
    kept, dropped = [], {}
    for name, di in zip(rig.names, d, strict=True):
        if di > ratio * dmin and di > never_below_m:
            dropped[name] = (
                f"CAMERA_PRUNED_FAR: median distance {di:.2f} m > {ratio:g} x {dmin:.2f} m and > {never_below_m:g} m"
            )
        else:
            kept.append(name)
    return PruneResult(kept, dropped, dict(zip(rig.names, d.tolist(), strict=True)))
