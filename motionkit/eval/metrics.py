"""Pose-error metrics on arrays with leading batch dimensions (docs/pipeline.md, "evaluate").

Inputs are metres; joint-error outputs are millimetres. Missing joints are NaN in either input and
are excluded; a frame with fewer than ``min_joints`` joints present in both is NaN.

``pa_mpjpe`` uses similarity Procrustes (Umeyama: scale, proper rotation with the reflection
correction, translation) fitted per frame on the joints present. The default compiled path finds the
rotation with Horn's quaternion method (largest eigenvector of a 4x4 symmetric matrix, by Jacobi
sweeps), which optimises over proper rotations directly; ``backend="numpy"`` is the batched SVD
reference.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from motionkit.geometry.procrustes import procrustes

DEFAULT_MIN_JOINTS = 4


def _check(pred: np.ndarray, gt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(pred, dtype=np.float64)
    g = np.asarray(gt, dtype=np.float64)
    if p.shape != g.shape or p.ndim < 2 or p.shape[-1] != 3:
        raise ValueError(f"pred and gt must have the same shape (..., J, 3); got {p.shape} and {g.shape}")
    return p, g


def _mask(p: np.ndarray, g: np.ndarray) -> np.ndarray:
    return np.isfinite(p).all(-1) & np.isfinite(g).all(-1)


def mpjpe(pred: np.ndarray, gt: np.ndarray, *, min_joints: int = 1) -> np.ndarray:
    """Mean per-joint position error ``(...)`` in mm, no alignment (``mpjpe_world``)."""
    p, g = _check(pred, gt)
    m = _mask(p, g)
    d = np.where(m, np.linalg.norm(np.where(m[..., None], p - g, 0.0), axis=-1), 0.0)
    n = m.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n >= max(min_joints, 1), d.sum(-1) / n * 1000.0, np.nan)


def mpjpe_centroid(pred: np.ndarray, gt: np.ndarray, *, min_joints: int = 1) -> np.ndarray:
    """MPJPE after subtracting each skeleton's centroid over the shared joints, mm."""
    p, g = _check(pred, gt)
    m = _mask(p, g)[..., None]
    n = np.maximum(m.sum(-2, keepdims=True), 1)
    pc = np.where(m, p, 0.0).sum(-2, keepdims=True) / n
    gc = np.where(m, g, 0.0).sum(-2, keepdims=True) / n
    return mpjpe(np.where(m, p - pc, np.nan), np.where(m, g - gc, np.nan), min_joints=min_joints)


@numba.njit(cache=True)
def _max_eigvec4(A):  # pragma: no cover - compiled
    """Eigenvector of the largest eigenvalue of a symmetric 4x4 matrix (cyclic Jacobi)."""
    a = A.copy()
    v = np.eye(4)
    for _ in range(30):
        off = 0.0
        for i in range(4):
            for j in range(i + 1, 4):
                off += a[i, j] * a[i, j]
        if off < 1e-30 * (a[0, 0] ** 2 + a[1, 1] ** 2 + a[2, 2] ** 2 + a[3, 3] ** 2 + 1e-300):
            break
        for p in range(3):
            for q in range(p + 1, 4):
                if abs(a[p, q]) < 1e-300:
                    continue
                theta = (a[q, q] - a[p, p]) / (2.0 * a[p, q])
                t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(4):
                    akp, akq = a[k, p], a[k, q]
                    a[k, p] = c * akp - s * akq
                    a[k, q] = s * akp + c * akq
                for k in range(4):
                    apk, aqk = a[p, k], a[q, k]
                    a[p, k] = c * apk - s * aqk
                    a[q, k] = s * apk + c * aqk
                for k in range(4):
                    vkp, vkq = v[k, p], v[k, q]
                    v[k, p] = c * vkp - s * vkq
                    v[k, q] = s * vkp + c * vkq
    best = 0
    for i in range(1, 4):
        if a[i, i] > a[best, best]:
            best = i
    return v[0, best], v[1, best], v[2, best], v[3, best]


@numba.njit(cache=True, inline="always")
def _present(p, g, n, j):  # pragma: no cover - compiled
    ok = True
    for k in range(3):
        ok = ok and p[n, j, k] == p[n, j, k] and g[n, j, k] == g[n, j, k]  # NaN != NaN
    return ok


@numba.njit(parallel=True, cache=True)
def _pa_kernel(p, g, min_joints, out):  # pragma: no cover - compiled
    N, J = p.shape[0], p.shape[1]
    for n in numba.prange(N):
        cnt = 0
        mp0 = mp1 = mp2 = mg0 = mg1 = mg2 = 0.0
        for j in range(J):
            if _present(p, g, n, j):
                cnt += 1
                mp0 += p[n, j, 0]
                mp1 += p[n, j, 1]
                mp2 += p[n, j, 2]
                mg0 += g[n, j, 0]
                mg1 += g[n, j, 1]
                mg2 += g[n, j, 2]
        if cnt < min_joints or cnt == 0:
            out[n] = np.nan
            continue
        mp0 /= cnt
        mp1 /= cnt
        mp2 /= cnt
        mg0 /= cnt
        mg1 /= cnt
        mg2 /= cnt
        S = np.zeros((3, 3))
        var = 0.0
        for j in range(J):
            if not _present(p, g, n, j):
                continue
            a = (p[n, j, 0] - mp0, p[n, j, 1] - mp1, p[n, j, 2] - mp2)
            b = (g[n, j, 0] - mg0, g[n, j, 1] - mg1, g[n, j, 2] - mg2)
            var += a[0] * a[0] + a[1] * a[1] + a[2] * a[2]
            for r in range(3):
                for c in range(3):
                    S[r, c] += a[r] * b[c]  # S = sum p g^T (Horn: left = pred, right = gt)
        N4 = np.empty((4, 4))
        N4[0, 0] = S[0, 0] + S[1, 1] + S[2, 2]
        N4[0, 1] = N4[1, 0] = S[1, 2] - S[2, 1]
        N4[0, 2] = N4[2, 0] = S[2, 0] - S[0, 2]
        N4[0, 3] = N4[3, 0] = S[0, 1] - S[1, 0]
        N4[1, 1] = S[0, 0] - S[1, 1] - S[2, 2]
        N4[1, 2] = N4[2, 1] = S[0, 1] + S[1, 0]
        N4[1, 3] = N4[3, 1] = S[2, 0] + S[0, 2]
        N4[2, 2] = -S[0, 0] + S[1, 1] - S[2, 2]
        N4[2, 3] = N4[3, 2] = S[1, 2] + S[2, 1]
        N4[3, 3] = -S[0, 0] - S[1, 1] + S[2, 2]
        w, x, y, z = _max_eigvec4(N4)
        R00, R01, R02 = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
        R10, R11, R12 = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
        R20, R21, R22 = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
        # scale = sum (R p).g / sum |p|^2 = trace(R^T S^T ...) computed directly
        num = (
            R00 * S[0, 0]
            + R01 * S[1, 0]
            + R02 * S[2, 0]
            + R10 * S[0, 1]
            + R11 * S[1, 1]
            + R12 * S[2, 1]
            + R20 * S[0, 2]
            + R21 * S[1, 2]
            + R22 * S[2, 2]
        )
        s = num / var if var > 0 else 0.0
        tot = 0.0
        for j in range(J):
            if not _present(p, g, n, j):
                continue
            a0, a1, a2 = p[n, j, 0] - mp0, p[n, j, 1] - mp1, p[n, j, 2] - mp2
            e0 = s * (R00 * a0 + R01 * a1 + R02 * a2) + mg0 - g[n, j, 0]
            e1 = s * (R10 * a0 + R11 * a1 + R12 * a2) + mg1 - g[n, j, 1]
            e2 = s * (R20 * a0 + R21 * a1 + R22 * a2) + mg2 - g[n, j, 2]
            tot += math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        out[n] = tot / cnt * 1000.0


def pa_mpjpe(
    pred: np.ndarray, gt: np.ndarray, *, min_joints: int = DEFAULT_MIN_JOINTS, backend: str = "numba"
) -> np.ndarray:
    """Procrustes-aligned MPJPE per frame, mm: ``(..., J, 3)`` -> ``(...)``.

    Similarity alignment (scale, proper rotation, translation) of ``pred`` onto ``gt`` on the
    joints present in both; frames with fewer than ``min_joints`` of them are NaN.
    """
    p, g = _check(pred, gt)
    batch = p.shape[:-2]
    J = p.shape[-2]
    if backend == "numba":
        pf = np.ascontiguousarray(p.reshape(-1, J, 3))
        gf = np.ascontiguousarray(g.reshape(-1, J, 3))
        out = np.empty(len(pf))
        _pa_kernel(pf, gf, int(min_joints), out)
        return out.reshape(batch)
    if backend != "numpy":
        raise ValueError(f"unknown backend {backend!r}")
    m = _mask(p, g)
    s, R, t = procrustes(p, g, m, scaling=True)
    aligned = s[..., None, None] * np.einsum("...ij,...kj->...ki", R, np.where(m[..., None], p, 0.0)) + t[..., None, :]
    d = np.where(m, np.linalg.norm(aligned - np.where(m[..., None], g, 0.0), axis=-1), 0.0)
    n = m.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n >= max(min_joints, 1), d.sum(-1) / n * 1000.0, np.nan)


def pa_mpjpe_naive(pred: np.ndarray, gt: np.ndarray, min_joints: int = DEFAULT_MIN_JOINTS) -> np.ndarray:
    """Slow reference of ``pa_mpjpe``: a Python loop over frames, each a similarity Procrustes by SVD
    in float64 (SPIN's ``compute_similarity_transform``). ``pred``, ``gt (F, J, 3)`` metres, NaN joints
    left out -> ``(F,)`` mm, NaN where fewer than ``min_joints`` joints are present in both."""
    out = np.full(len(pred), np.nan)
    for i, (p, g) in enumerate(zip(np.asarray(pred, np.float64), np.asarray(gt, np.float64), strict=True)):
        m = np.isfinite(p).all(-1) & np.isfinite(g).all(-1)
        if m.sum() < min_joints:
            continue
        X1, X2 = p[m].T, g[m].T
        mu1, mu2 = X1.mean(1, keepdims=True), X2.mean(1, keepdims=True)
        A, B = X1 - mu1, X2 - mu2
        K = A @ B.T
        U, _, Vt = np.linalg.svd(K)
        Z = np.eye(3)
        Z[-1, -1] = np.sign(np.linalg.det(U @ Vt))
        R = Vt.T @ Z @ U.T
        scale = np.trace(R @ K) / (A**2).sum()
        t = mu2 - scale * R @ mu1
        out[i] = np.linalg.norm(scale * R @ X1 + t - X2, axis=0).mean() * 1000
    return out


def accel_error(pred: np.ndarray, gt: np.ndarray, fps: float, valid: np.ndarray | None = None) -> np.ndarray:
    """GVHMR acceleration error per window ``(T - 2,)`` in m/s^2 (inputs ``(T, J, 3)`` metres).

    A window whose 3 frames include an invalid one is NaN.
    """
    p, g = _check(pred, gt)
    ap = p[:-2] - 2 * p[1:-1] + p[2:]
    ag = g[:-2] - 2 * g[1:-1] + g[2:]
    e = np.linalg.norm(ap - ag, axis=-1).mean(-1) * fps**2
    if valid is not None:
        v = np.asarray(valid, bool)
        e = np.where(v[:-2] & v[1:-1] & v[2:], e, np.nan)
    return e


def jitter(pred: np.ndarray, fps: float) -> np.ndarray:
    """GVHMR jitter per window ``(T - 3,)``: third difference x fps^3, mean over joints, / 10
    (unit: 10 m/s^3 for metres)."""
    p = np.asarray(pred, dtype=np.float64)
    d3 = p[3:] - 3 * p[2:-1] + 3 * p[1:-2] - p[:-3]
    return np.linalg.norm(d3, axis=-1).mean(-1) * fps**3 / 10.0


def foot_sliding_gt_free(joints_smplx: np.ndarray, *, up_axis: int = 2, floor_percentile: float = 2.0) -> float:
    """EgoEgo/UniEgoMotion foot sliding without GT, mm: ankles (7, 8) with H = 0.08 m and feet
    (10, 11) with H = 0.04 m; horizontal per-frame displacement on frames below H, weighted by
    (2 - 2^(h/H)); summed over frames / sequence length; mean of the 4 joints.

    ``joints_smplx (T, >=12, 3)`` metres; height along ``up_axis`` (Ego-Exo4D: z).
    """
    j = np.asarray(joints_smplx, dtype=np.float64)
    if len(j) < 2:
        return float("nan")
    ids = [7, 8, 10, 11]
    Hs = [0.08, 0.08, 0.04, 0.04]
    floor = np.nanpercentile(j[:, ids, up_axis], floor_percentile)
    horiz = [a for a in range(3) if a != up_axis]
    out = []
    for i, H in zip(ids, Hs, strict=True):
        h = j[1:, i, up_axis] - floor
        d = np.linalg.norm(j[1:, i][:, horiz] - j[:-1, i][:, horiz], axis=-1)
        w = np.where(h < H, 2 - np.power(2.0, np.clip(h, 0, None) / H), 0.0)
        out.append(np.nansum(d * w) / len(j) * 1000.0)
    return float(np.mean(out))
