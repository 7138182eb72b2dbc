"""Motion-feature throughput: HumanML3D 263-d conversion on 1,000 clips of 200 frames, and spatial-code
event extraction. The reference path (numpy, same maths as the original implementation) runs in the
same process for the ratio."""

from __future__ import annotations

import os
import platform
import time

import numpy as np

from motionkit.geometry.rotations import axis_rotation
from motionkit.motion.codes import extract_events
from motionkit.motion.hml263 import joints_to_hml263_batch
from motionkit.motion.hml263_skeleton import TARGET_SKELETON
from motionkit.motion.trajectory import anchor_trajectory


def make_clips(n=1000, T=200, seed=0):
    rng = np.random.default_rng(seed)
    base = TARGET_SKELETON - TARGET_SKELETON[0] * [1, 0, 1]
    t = np.arange(T) / 20.0
    clips = []
    for _ in range(n):
        yaw = np.cumsum(rng.normal(0, 0.02, T))
        R = axis_rotation("y", yaw)
        pose = np.broadcast_to(base, (T, 22, 3)).copy()
        sw = 0.2 * np.sin(2 * np.pi * t * rng.uniform(0.8, 1.2))
        pose[:, [4, 7, 10], 2] += sw[:, None]
        pose[:, [5, 8, 11], 2] -= sw[:, None]
        root = np.cumsum(np.stack([np.sin(yaw), 0 * yaw, np.cos(yaw)], 1) * 0.06, axis=0)
        clips.append(np.einsum("tij,tkj->tki", R, pose) + root[:, None] + rng.normal(0, 0.003, (T, 22, 3)))
    return clips


def main():
    clips = make_clips()
    frames = sum(len(c) for c in clips)
    joints_to_hml263_batch(clips[:4])  # compile / warm up
    t0 = time.perf_counter()
    joints_to_hml263_batch(clips)
    t_nb = time.perf_counter() - t0
    t0 = time.perf_counter()
    joints_to_hml263_batch(clips[:100], backend="numpy")
    t_np = (time.perf_counter() - t0) * 10
    trajs = [anchor_trajectory(c[:, 0], axis_rotation("y", np.zeros(len(c))), fps=20.0) for c in clips[:200]]
    t0 = time.perf_counter()
    n_ev = sum(len(extract_events(tr, 20.0).events) for tr in trajs)
    t_ev = time.perf_counter() - t0
    ev_frames = sum(len(tr.pos_m) for tr in trajs)
    print(f"# motion features ({platform.machine()}, {os.cpu_count()} cores), 1,000 clips x 200 frames at 20 fps")
    print(f"| {'step':<46} | {'frames/s':>12} | {'seconds':>8} |")
    print(f"|{'-' * 48}|{'-' * 14}|{'-' * 10}|")
    print(f"| {'joints_to_hml263_batch (numba, default)':<46} | {frames / t_nb:12,.0f} | {t_nb:8.3f} |")
    print(f"| {'joints_to_hml263_batch (numpy reference path)':<46} | {frames / t_np:12,.0f} | {t_np:8.3f} |")
    print(f"| {'extract_events (6 codes, 200 clips)':<46} | {ev_frames / t_ev:12,.0f} | {t_ev:8.3f} |")
    print(f"numba / numpy: {t_np / t_nb:.1f}x; {n_ev} events found")


if __name__ == "__main__":
    main()
