"""Long takes: fit seconds per minute of take and peak memory for 20-s, 2-min and 10-min takes.

Each take (generic scenario, realistic preset) is written once, then fitted by ``run_take`` in a fresh
child process so that its peak resident memory is its own (after an untimed warm-up run that builds the
fused operators and compiles the Numba functions into their caches). Long takes are fitted in overlapping
30-s windows, batched ``body_fit.max_batch_frames`` frames at a time, so memory stays bounded and
time grows linearly with length.

Prints, per duration: seconds of the whole run (load .. evaluate) and of the fit stage, both per
minute of take, the ratio of the fit's seconds per minute to the shortest take's, and the child's
peak memory. Acceptance: a 10-minute take under 4 GB on the CPU, within 1.3x of a 20-s take's
seconds per minute.

Usage: ``python benchmarks/bench_long_take.py [--durations 20,120,600] [--device cpu]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, resource, sys, time
from motionkit.pipeline import PipelineConfig, run_take
root, uid, out, device = sys.argv[1:5]
t0 = time.perf_counter()
run = run_take(root, uid, out, PipelineConfig(device=device), progress=False, plot=False)
wall = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print(json.dumps({"wall_s": wall, "stages": run.timings, "peak_mb": peak,
                  "valid": float(run.result["valid"].mean())}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--durations", default="20,120,600", help="take durations in seconds, comma-separated")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mk_bench_long_"))
    home = Path(os.environ.get("MOTIONKIT_HOME", "~/.cache/motionkit")).expanduser()
    env = {**os.environ, "MOTIONKIT_HOME": str(tmp / "home"),
           "MOTIONKIT_KERNELS_DIR": os.environ.get("MOTIONKIT_KERNELS_DIR", str(home / "kernels"))}  # fmt: skip
    from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

    rows = []
    # warm-up (not timed): builds or loads the fused operators and compiles the Numba functions once
    (warm,) = write_synthetic_dataset(tmp / "warm", SynthConfig(takes=1, seed=3, duration=2.0))
    subprocess.run([sys.executable, "-c", CHILD, str(tmp / "warm"), warm, str(tmp / "warm" / "fits"), args.device],
                   env=env, capture_output=True, text=True, check=True)  # fmt: skip
    for seconds in (float(s) for s in args.durations.split(",")):
        root = tmp / f"take_{int(seconds)}s"
        (uid,) = write_synthetic_dataset(root, SynthConfig(takes=1, seed=3, duration=seconds))
        out = subprocess.run([sys.executable, "-c", CHILD, str(root), uid, str(root / "fits"), args.device],
                             env=env, capture_output=True, text=True, check=True)  # fmt: skip
        r = json.loads(out.stdout.strip().splitlines()[-1])
        minutes = seconds / 60.0
        rows.append((seconds, r["wall_s"] / minutes, r["stages"]["fit"] / minutes, r["peak_mb"], r["valid"]))
    base = rows[0][2]
    print(f"# long takes ({platform.machine()}, {os.cpu_count()} cores, device {args.device})")
    print("| take      | run s / min of take | fit s / min of take | fit vs shortest | peak memory MB | valid |")
    print("|-----------|--------------------:|--------------------:|----------------:|---------------:|------:|")
    for seconds, run_pm, fit_pm, peak, valid in rows:
        print(f"| {seconds:6.0f} s  | {run_pm:19.1f} | {fit_pm:19.1f} | {fit_pm / base:14.2f}x | {peak:14.0f} | "
              f"{valid:5.1%} |")  # fmt: skip


if __name__ == "__main__":
    main()
