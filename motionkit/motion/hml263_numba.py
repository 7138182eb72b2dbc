"""Compiled (Numba) path of ``joints_to_hml263``: the same steps as ``hml263._features`` per frame,
parallel over clips. ``hml263.py`` is the reference path; tests check both agree."""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy.ndimage import gaussian_filter1d

from motionkit.motion.hml263_skeleton import FEET_THRESHOLD, KINEMATIC_CHAIN, RAW_OFFSETS, SMOOTH_SIGMA, TARGET_LENGTHS

# chains as flat (parent, child) bone lists in processing order
_BONES = np.array([(a, b) for ch in KINEMATIC_CHAIN for a, b in zip(ch[:-1], ch[1:], strict=True)], dtype=np.int64)
_CHAIN_START = np.array([0] + list(np.cumsum([len(c) - 1 for c in KINEMATIC_CHAIN])), dtype=np.int64)


@numba.njit(cache=True, inline="always")
def _qmul(a0, a1, a2, a3, b0, b1, b2, b3):  # pragma: no cover - compiled
    return (
        a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3,
        a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
        a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1,
        a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0,
    )


@numba.njit(cache=True, inline="always")
def _qrot(q0, q1, q2, q3, x, y, z):  # pragma: no cover - compiled
    uvx = q2 * z - q3 * y
    uvy = q3 * x - q1 * z
    uvz = q1 * y - q2 * x
    uuvx = q2 * uvz - q3 * uvy
    uuvy = q3 * uvx - q1 * uvz
    uuvz = q1 * uvy - q2 * uvx
    return x + 2 * (q0 * uvx + uuvx), y + 2 * (q0 * uvy + uuvy), z + 2 * (q0 * uvz + uuvz)


@numba.njit(cache=True, inline="always")
def _qbetween(ax, ay, az, bx, by, bz):  # pragma: no cover - compiled
    vx = ay * bz - az * by
    vy = az * bx - ax * bz
    vz = ax * by - ay * bx
    w = math.sqrt((ax * ax + ay * ay + az * az) * (bx * bx + by * by + bz * bz)) + ax * bx + ay * by + az * bz
    n = math.sqrt(w * w + vx * vx + vy * vy + vz * vz)
    return w / n, vx / n, vy / n, vz / n


@numba.njit(parallel=True, cache=True)
def _stage1(joints, lengths, bones, out_g, out_fwd, reference):  # pragma: no cover - compiled
    B, T = joints.shape[0], joints.shape[1]
    for b in numba.prange(B):
        j = joints[b]
        g = out_g[b]
        src_leg = 0.0
        for a, c in ((2, 5), (5, 8)):
            src_leg += math.sqrt(
                (j[0, c, 0] - j[0, a, 0]) ** 2 + (j[0, c, 1] - j[0, a, 1]) ** 2 + (j[0, c, 2] - j[0, a, 2]) ** 2
            )
        scale = (lengths[5] + lengths[8]) / src_leg
        ymin = np.inf
        for t in range(T):
            for k in range(3):
                g[t, 0, k] = j[t, 0, k] * scale
            for i in range(bones.shape[0]):
                a, c = bones[i, 0], bones[i, 1]
                dx, dy, dz = j[t, c, 0] - j[t, a, 0], j[t, c, 1] - j[t, a, 1], j[t, c, 2] - j[t, a, 2]
                s = lengths[c] / math.sqrt(dx * dx + dy * dy + dz * dz)
                g[t, c, 0] = g[t, a, 0] + s * dx
                g[t, c, 1] = g[t, a, 1] + s * dy
                g[t, c, 2] = g[t, a, 2] + s * dz
            for i in range(22):
                ymin = min(ymin, g[t, i, 1])
        ox, oz = g[0, 0, 0], g[0, 0, 2]
        ax = (g[0, 2, 0] - g[0, 1, 0]) + (g[0, 17, 0] - g[0, 16, 0])
        az = (g[0, 2, 2] - g[0, 1, 2]) + (g[0, 17, 2] - g[0, 16, 2])
        # forward = (0,1,0) x across = (az, 0, -ax); normalised across then forward
        fx, fz = az, -ax
        n = math.sqrt(fx * fx + fz * fz)
        fx, fz = fx / n, fz / n
        if fz < -1 + 1e-12:
            q0, q1, q2, q3 = 0.0, 0.0, 1.0, 0.0
        else:
            q0, q1, q2, q3 = _qbetween(fx, 0.0, fz, 0.0, 0.0, 1.0)
        for t in range(T):
            for i in range(22):
                x, y, z = _qrot(q0, q1, q2, q3, g[t, i, 0] - ox, g[t, i, 1] - ymin, g[t, i, 2] - oz)
                g[t, i, 0], g[t, i, 1], g[t, i, 2] = x, y, z
            if reference:  # Q1
                cx = (g[t, 1, 0] - g[t, 2, 0]) + (g[t, 17, 0] - g[t, 16, 0])
                cy = (g[t, 1, 1] - g[t, 2, 1]) + (g[t, 17, 1] - g[t, 16, 1])
                cz = (g[t, 1, 2] - g[t, 2, 2]) + (g[t, 17, 2] - g[t, 16, 2])
            else:
                cx = (g[t, 2, 0] - g[t, 1, 0]) + (g[t, 17, 0] - g[t, 16, 0])
                cy = (g[t, 2, 1] - g[t, 1, 1]) + (g[t, 17, 1] - g[t, 16, 1])
                cz = (g[t, 2, 2] - g[t, 1, 2]) + (g[t, 17, 2] - g[t, 16, 2])
            n = math.sqrt(cx * cx + cy * cy + cz * cz)
            out_fwd[b, t, 0] = cz / n
            out_fwd[b, t, 1] = 0.0
            out_fwd[b, t, 2] = -cx / n


@numba.njit(parallel=True, cache=True)
def _stage2(g, fwd, raw, bones, chain_start, out, reference, feet_thr):  # pragma: no cover - compiled
    B, T = g.shape[0], g.shape[1]

    for b in numba.prange(B):
        r = np.empty((T, 4))
        for t in range(T):
            fx, fy, fz = fwd[b, t, 0], fwd[b, t, 1], fwd[b, t, 2]
            n = math.sqrt(fx * fx + fy * fy + fz * fz)
            r[t, 0], r[t, 1], r[t, 2], r[t, 3] = _qbetween(fx / n, fy / n, fz / n, 0.0, 0.0, 1.0)
        if reference:
            r[0, 0], r[0, 1], r[0, 2], r[0, 3] = 1.0, 0.0, 0.0, 0.0  # Q2
        for t in range(T - 1):
            o = out[b, t]
            q0, q1, q2, q3 = r[t + 1, 0], r[t + 1, 1], r[t + 1, 2], r[t + 1, 3]
            # rot_vel: arcsin(y of r[t+1] * r[t]^-1)
            w, x, y, z = _qmul(q0, q1, q2, q3, r[t, 0], -r[t, 1], -r[t, 2], -r[t, 3])
            if not reference and w < 0:
                y = -y
            o[0] = math.asin(min(1.0, max(-1.0, y)))
            vx, vy, vz = _qrot(
                q0,
                q1,
                q2,
                q3,
                g[b, t + 1, 0, 0] - g[b, t, 0, 0],
                g[b, t + 1, 0, 1] - g[b, t, 0, 1],
                g[b, t + 1, 0, 2] - g[b, t, 0, 2],
            )
            o[1], o[2] = vx, vz
            p0, p1, p2, p3 = r[t, 0], r[t, 1], r[t, 2], r[t, 3]
            rx0, rz0 = g[b, t, 0, 0], g[b, t, 0, 2]
            for i in range(22):
                x, y, z = _qrot(p0, p1, p2, p3, g[b, t, i, 0] - rx0, g[b, t, i, 1], g[b, t, i, 2] - rz0)
                if i == 0:
                    o[3] = y
                else:
                    o[4 + 3 * (i - 1)], o[5 + 3 * (i - 1)], o[6 + 3 * (i - 1)] = x, y, z
            # local velocities (Q5)
            if reference:
                l0, l1, l2, l3 = p0, p1, p2, p3
            else:
                l0, l1, l2, l3 = q0, q1, q2, q3
            for i in range(22):
                x, y, z = _qrot(
                    l0,
                    l1,
                    l2,
                    l3,
                    g[b, t + 1, i, 0] - g[b, t, i, 0],
                    g[b, t + 1, i, 1] - g[b, t, i, 1],
                    g[b, t + 1, i, 2] - g[b, t, i, 2],
                )
                o[193 + 3 * i], o[194 + 3 * i], o[195 + 3 * i] = x, y, z
            # contacts
            for k, i in enumerate((7, 10, 8, 11)):
                d = (
                    (g[b, t + 1, i, 0] - g[b, t, i, 0]) ** 2
                    + (g[b, t + 1, i, 1] - g[b, t, i, 1]) ** 2
                    + (g[b, t + 1, i, 2] - g[b, t, i, 2]) ** 2
                )
                o[259 + k] = 1.0 if d < feet_thr else 0.0
            # IK: swing-only rotations along each chain, from the root rotation, stored at the child
            for c in range(chain_start.shape[0] - 1):
                R0, R1, R2, R3 = p0, p1, p2, p3
                for k in range(chain_start[c], chain_start[c + 1]):
                    a, ch = bones[k, 0], bones[k, 1]
                    dx, dy, dz = (
                        g[b, t, ch, 0] - g[b, t, a, 0],
                        g[b, t, ch, 1] - g[b, t, a, 1],
                        g[b, t, ch, 2] - g[b, t, a, 2],
                    )
                    n = math.sqrt(dx * dx + dy * dy + dz * dz)
                    s0, s1, s2, s3 = _qbetween(raw[ch, 0], raw[ch, 1], raw[ch, 2], dx / n, dy / n, dz / n)
                    m0, m1, m2, m3 = _qmul(R0, -R1, -R2, -R3, s0, s1, s2, s3)
                    R0, R1, R2, R3 = _qmul(R0, R1, R2, R3, m0, m1, m2, m3)
                    # cont6d: first two columns of the local rotation matrix
                    base = 67 + 6 * (ch - 1)
                    o[base + 0] = 1 - 2 * (m2 * m2 + m3 * m3)
                    o[base + 1] = 2 * (m1 * m2 + m0 * m3)
                    o[base + 2] = 2 * (m1 * m3 - m0 * m2)
                    o[base + 3] = 2 * (m1 * m2 - m0 * m3)
                    o[base + 4] = 1 - 2 * (m1 * m1 + m3 * m3)
                    o[base + 5] = 2 * (m2 * m3 + m0 * m1)


def features_numba(joints: np.ndarray, variant: str) -> np.ndarray:
    """``(B, T, 22, 3)`` float64 -> ``(B, T - 1, 263)`` float32 (Q9 not reproduced: the caller routes T = 3)."""
    B, T = joints.shape[:2]
    ref = variant == "reference"
    g = np.empty_like(joints)
    fwd = np.empty((B, T, 3))
    _stage1(np.ascontiguousarray(joints), TARGET_LENGTHS, _BONES, g, fwd, ref)
    fwd = gaussian_filter1d(fwd, SMOOTH_SIGMA, axis=1, mode="nearest")  # Q3
    out = np.empty((B, T - 1, 263), dtype=np.float32)
    _stage2(g, fwd, RAW_OFFSETS, _BONES, _CHAIN_START, out, ref, FEET_THRESHOLD)
    return out
