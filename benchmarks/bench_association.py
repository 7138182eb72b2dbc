"""Wearer selection throughput on a 10-minute, 4-camera synthetic take from cached detections
(the observation cache), processed at 20 fps: the SOMA rule with tracking, then the cross-view check
(leave-one-out triangulation, tracklets). Target: under 10 s on 2 CPU cores. Also the row medians the
tracklets and the cross-view check take (``common.nanstats``) against numpy's, on rows as many and as
short as the check's."""

from __future__ import annotations

import os
import platform
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def main(duration: float = 600.0) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="mk_bench_assoc_"))
    os.environ.setdefault("MOTIONKIT_HOME", str(tmp / "home"))
    from motionkit.common.nanstats import nan_median
    from motionkit.conventions import fit_grid_frames, nearest_take_frames
    from motionkit.data.egoexo4d import EgoExoDataset
    from motionkit.data.observations import read_observations
    from motionkit.detect.association import select_wearer
    from motionkit.detect.crossview import cross_view_check
    from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

    t0 = time.perf_counter()
    write_synthetic_dataset(tmp / "ds", SynthConfig(takes=1, seed=3, duration=duration, bystanders=2))
    t_gen = time.perf_counter() - t0
    ds = EgoExoDataset(tmp / "ds")
    take = ds.take(ds.takes()[0].take_uid)
    t0 = time.perf_counter()
    obs = read_observations(tmp / "ds" / "observations" / f"{take.uid}.h5")
    frames = nearest_take_frames(fit_grid_frames(take.n_frames, 20.0))
    anchor = take.head_anchor(frames)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    a = select_wearer(obs, take.rig, frames, anchor.position, anchor.valid, anchor_rotation=anchor.rotation)
    t_sel = time.perf_counter() - t0
    t0 = time.perf_counter()
    a = cross_view_check(a, obs, take.rig)
    t_cross = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(len(obs), 17))
    rows[rng.random(rows.shape) < 0.3] = np.nan
    t0 = time.perf_counter()
    ours = nan_median(rows)
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs = np.nanmedian(rows, axis=-1)
    t_numpy = time.perf_counter() - t0
    cf = len(frames) * len(take.rig)
    minutes = duration / 60
    head = f"# wearer selection, {minutes:.0f}-minute take, {len(take.rig)} cameras, {len(frames):,} frames at 20 fps"
    print(f"{head} ({platform.machine()}, {os.cpu_count()} cores); {len(obs):,} cached detections")
    print(f"| {'step':<44} | {'seconds':>8} | {'camera-frames/s':>16} |")
    print(f"|{'-' * 46}|{'-' * 10}|{'-' * 18}|")
    print(f"| {'load cache + Aria anchors':<44} | {t_load:8.2f} | {'':>16} |")
    print(f"| {'select_wearer (SOMA rule + tracking)':<44} | {t_sel:8.2f} | {cf / t_sel:16,.0f} |")
    print(f"| {'cross_view_check (leave-one-out, tracklets)':<44} | {t_cross:8.2f} | {cf / t_cross:16,.0f} |")
    total = t_load + t_sel + t_cross
    print(
        f"total {total:.2f} s (target < 10 s); selected in {np.mean(a.selected):.1%} of camera-frames; "
        f"(generating the take took {t_gen:.0f} s, not counted)"
    )
    same = np.array_equal(ours, theirs, equal_nan=True)
    print(
        f"row medians, {len(rows):,} rows of 17 with 30 % NaN: nan_median {t_ours:.3f} s, np.nanmedian "
        f"{t_numpy:.3f} s ({t_numpy / t_ours:.0f}x); identical: {same}"
    )


if __name__ == "__main__":
    main()
