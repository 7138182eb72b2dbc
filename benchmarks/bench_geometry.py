"""Geometry throughput: KB3 unprojection vs OpenCV, and robust triangulation vs a per-point SVD loop.

Both comparisons run in the same process on the same inputs. Prints a table; figures go to
benchmarks/README.md.
"""

from __future__ import annotations

import os
import platform
import time

import cv2
import numpy as np

from motionkit.geometry.camera import Camera, CameraRig, look_at
from motionkit.geometry.fisheye import kb3_unproject, kb3_unproject_np
from motionkit.geometry.triangulation import triangulate, triangulate_naive

REP = np.array([1761.275757, 1761.275757, 1920.0, 1080.0, 0.036902, 0.057131, -0.057154, 0.018458])


def best_of(fn, repeat=3):
    best = np.inf
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def bench_unproject(n=1_000_000):
    rng = np.random.default_rng(0)
    uv = rng.uniform([0, 0], [3840, 2160], (n, 2))
    K = np.array([[REP[0], 0, REP[2]], [0, REP[1], REP[3]], [0, 0, 1]])
    D = REP[4:8].reshape(4, 1)
    kb3_unproject(uv[:100_000], REP)  # compile / warm up
    t_ours, rays = best_of(lambda: kb3_unproject(uv, REP))
    t_np, rays_np = best_of(lambda: kb3_unproject_np(uv, REP), repeat=1)
    crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 20, 1e-12)
    t_cv, ref = best_of(lambda: cv2.fisheye.undistortPoints(uv[:, None, :], K, D, criteria=crit)[:, 0])
    ours_n = rays[:, :2] / rays[:, 2:]
    diff_norm = np.abs(ours_n - ref).max()
    # identical to 1e-9 px when mapped back to pixels with the focal length
    return (
        [
            ("kb3_unproject (numba, dispatch)", n / t_ours, t_ours),
            ("kb3_unproject_np (numpy reference)", n / t_np, t_np),
            ("cv2.fisheye.undistortPoints", n / t_cv, t_cv),
        ],
        diff_norm * REP[0],
        np.abs(rays - rays_np).max(),
    )


def make_rig():
    angles = np.linspace(0, 2 * np.pi, 4, endpoint=False) + 0.3
    centers = [np.array([4 * np.cos(a), 4 * np.sin(a), 1.5]) for a in angles]
    cams = [
        Camera(f"cam0{i + 1}", 3840, 2160, REP, look_at(c, np.array([0.0, 0.0, 1.0]))) for i, c in enumerate(centers)
    ]
    return CameraRig(cams)


def bench_triangulation(frames=6000):
    rng = np.random.default_rng(1)
    rig = make_rig()
    X = np.array([0.0, 0.0, 1.0]) + rng.normal(0, 0.4, (frames, 17, 3))
    px = rig.project(X)
    noisy = px + rng.normal(0, 4.0, px.shape)
    outl = rng.random(px.shape[:-1]) < 0.1
    noisy[outl] += rng.uniform(80, 300, (outl.sum(), 1)) * rng.choice([-1, 1], (outl.sum(), 2))
    conf = np.full(px.shape[:-1], 0.9)
    triangulate(noisy[:10], conf[:10], rig)  # compile / warm up
    t_ours, res = best_of(lambda: triangulate(noisy, conf, rig))
    t_np, res_np = best_of(lambda: triangulate(noisy, conf, rig, backend="numpy"), repeat=1)
    sub = 600
    t_naive, naive = best_of(lambda: triangulate_naive(noisy[:sub], conf[:sub], rig), repeat=1)
    n = frames * 17
    err = np.nanmedian(np.linalg.norm(res.points - X, axis=-1)) * 1000
    err_naive = np.nanmedian(np.linalg.norm(naive - X[:sub], axis=-1)) * 1000
    rate_naive = sub * 17 / t_naive
    return [
        ("triangulate (numba, RANSAC + rejection)", n / t_ours, err),
        (
            "triangulate (numpy reference backend)",
            n / t_np,
            np.nanmedian(np.linalg.norm(res_np.points - X, axis=-1)) * 1000,
        ),
        ("per-point numpy SVD DLT loop (no RANSAC)", rate_naive, err_naive),
    ], (n / t_ours) / rate_naive


def main():
    print(f"# geometry benchmarks ({platform.machine()}, {os.cpu_count()} cores)")
    rows, dpx, dref = bench_unproject()
    print("\n## KB3 unprojection, 1,000,000 points over a 3840x2160 image")
    print(f"| {'method':<40} | {'points/s':>14} | {'seconds':>8} |")
    print(f"|{'-' * 42}|{'-' * 16}|{'-' * 10}|")
    for name, rate, sec in rows:
        print(f"| {name:<40} | {rate:14,.0f} | {sec:8.3f} |")
    print(
        f"speed-up vs OpenCV: {rows[0][1] / rows[2][1]:.1f}x; max difference vs OpenCV {dpx:.2e} px; "
        f"numba vs numpy {dref:.1e}"
    )
    rows, ratio = bench_triangulation()
    print("\n## Triangulation, 4 views, 17 joints, 4 px noise, 10 % outliers (>= 80 px)")
    print(f"| {'method':<42} | {'joints/s':>12} | {'median error mm':>15} |")
    print(f"|{'-' * 44}|{'-' * 14}|{'-' * 17}|")
    for name, rate, err in rows:
        print(f"| {name:<42} | {rate:12,.0f} | {err:15.2f} |")
    print(f"speed-up vs the per-point loop: {ratio:.0f}x (target >= 30x)")


if __name__ == "__main__":
    main()
