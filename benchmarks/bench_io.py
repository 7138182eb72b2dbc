"""Loading a 10-minute, 1 kHz Aria trajectory (600k rows): parse, cached load, projectaria reference.

Prints a table; figures go to benchmarks/README.md.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np


def main(n_rows: int = 600_000) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="mk_bench_io_"))
    os.environ["MOTIONKIT_HOME"] = str(tmp / "home")
    from motionkit.data.egoexo4d import read_closed_loop_trajectory
    from motionkit.geometry.rotations import axis_rotation, make_transform
    from motionkit.synthetic.writer import write_trajectory_csv

    t_us = 10**9 + np.arange(n_rows, dtype=np.int64) * 1000
    s = np.arange(n_rows) / 1000.0
    T = make_transform(axis_rotation("z", 0.3 * s), np.stack([np.sin(s), np.cos(s), 0.1 * s], 1))
    path = tmp / "closed_loop_trajectory.csv"
    t0 = time.perf_counter()
    write_trajectory_csv(path, t_us, T)
    t_write = time.perf_counter() - t0

    rows = []
    t0 = time.perf_counter()
    a = read_closed_loop_trajectory(path, cache=False)
    rows.append(("motionkit parse (no cache)", time.perf_counter() - t0))
    read_closed_loop_trajectory(path, cache=True)  # fills the cache
    t0 = time.perf_counter()
    b = read_closed_loop_trajectory(path, cache=True)
    rows.append(("motionkit cached load", time.perf_counter() - t0))
    assert np.array_equal(a.t_us, b.t_us)
    try:
        from projectaria_tools.core import mps

        t0 = time.perf_counter()
        ref = mps.read_closed_loop_trajectory(str(path))
        rows.append(("projectaria-tools read_closed_loop_trajectory", time.perf_counter() - t0))
        assert len(ref) == n_rows
    except ImportError:
        pass
    size_mb = path.stat().st_size / 1e6
    print(f"# trajectory loading, {n_rows:,} rows ({size_mb:.0f} MB), {platform.machine()}, {os.cpu_count()} cores")
    print(f"(writing the file took {t_write:.1f} s)")
    print(f"| {'reader':<46} | {'seconds':>8} | {'rows/s':>12} |")
    print(f"|{'-' * 48}|{'-' * 10}|{'-' * 14}|")
    for name, sec in rows:
        print(f"| {name:<46} | {sec:8.3f} | {n_rows / sec:12,.0f} |")


if __name__ == "__main__":
    main()
