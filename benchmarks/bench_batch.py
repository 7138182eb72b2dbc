"""A whole-dataset rehearsal of ``motionkit batch`` under faults, on the local process pool and on Ray.

Writes a synthetic dataset of ``--takes`` takes (default 200) of mixed scenarios with durations from 5 s
to 2 min (log-spaced, in an order that spreads them over the run), then breaks some of them as a
real dataset breaks:

- data faults, permanent (the take must fail with a ``DataError`` naming the file, every time):
  a truncated ``closed_loop_trajectory.csv``, a truncated observation file, a ``gopro_calibs.csv``
  whose every camera has a non-finite pose (no usable camera);
- transient faults, on the first attempt only (the take must be retried and done):
  two workers killed with SIGKILL mid-take (by this script, from the pid in the batch's running
  marker), two takes that raise ``MemoryError`` and one whose result write finds the disk full
  (``motionkit.common.faults``, through ``$MOTIONKIT_FAULT_PLAN``).

Then fits every take with each executor and worker count (``--runs local:1,local:2,ray:1,ray:2``),
``--retries 1``, the fit reduced (``REHEARSAL_FIT``: fit grid 5 fps, 5 Adam iterations per stage) so that
the run measures the scheduling, not the optimizer. Per run it prints: wall time and throughput, the
scheduling overhead per take (a take's wall time from handing it to a worker to its answer reaching
the driver, minus its stage, write and plot times: median, p95, mean), the peak and the resident memory
of the workers at take 20 and at the last take, the outcome counts, and whether every injected fault
was recorded as it happened.

Last, the driver is killed (SIGKILL of its process group, workers included) when 40 % of the takes
are done, and the batch is run again into the same folder: the final outcome of every take and every
result file (all datasets and attributes but the creation time) must equal those of the uninterrupted
``local:2`` run.

Usage: ``python benchmarks/bench_batch.py [--takes 200] [--work DIR] [--runs local:1,local:2,ray:1,ray:2]``.
Acceptance (issue 31): every fault recorded, rerun equal, overhead per take < 0.5 s on the pool and
< 1 s on Ray, peak memory per worker at the last take within 10 % of take 20.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from motionkit.batch_report import read_manifest
from motionkit.common import faults
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.store import read_result
from motionkit.distributed import BatchConfig, run_batch
from motionkit.pipeline import PipelineConfig
from motionkit.synthetic.scenarios import SCENARIOS
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

REHEARSAL_FIT = {
    "fps": 5.0,
    "device": "cpu",
    "body_fit.iters": (5, 5, 5),
    "body_fit.second_pass_rounds": 1,
    "body_fit.second_pass_iters": 5,
    "body_fit.camera_refine_rounds": 1,
}
# where in the take list each fault goes (fractions of the list, so that any --takes works)
DATA_FAULTS = {"truncated_trajectory": 0.035, "truncated_observations": 0.305, "no_usable_camera": 0.565}
PLANNED = {"memory": (0.145, 0.755), "disk_full": (0.44,)}
KILLED = (0.225, 0.85)
EXPECTED_REASON = {"truncated_trajectory": "DataError", "truncated_observations": "DataError",
                   "no_usable_camera": "DataError", "memory": "MemoryError", "disk_full": "OSError",
                   "sigkill": "WorkerLost"}  # fmt: skip


def durations(n: int, lo: float = 5.0, hi: float = 120.0) -> list[float]:
    """``n`` durations log-spaced from ``lo`` to ``hi`` seconds, ordered by the golden-ratio sequence so that
    every stretch of the run mixes short and long takes."""
    u = [(i * (math.sqrt(5) - 1) / 2) % 1.0 for i in range(n)]
    return [round(lo * (hi / lo) ** x, 1) for x in u]


def write_rehearsal_dataset(root: Path, n: int, seed: int = 40) -> dict:
    """The dataset and its faults; returns ``{take_uid: fault}`` for every injected fault."""
    names = list(SCENARIOS)
    configs = [SynthConfig(seed=seed, duration=d, scenario=names[i % len(names)]) for i, d in enumerate(durations(n))]
    uids = write_synthetic_dataset(root, configs[0], progress=True, take_configs=configs)
    ds = EgoExoDataset(root)
    pick = lambda f: uids[min(n - 1, int(f * n))]  # noqa: E731
    plan = {}
    for fault, f in DATA_FAULTS.items():
        take = ds.take(pick(f))
        if fault == "truncated_trajectory":
            path = take.take_dir / "trajectory" / "closed_loop_trajectory.csv"
        elif fault == "truncated_observations":
            path = root / "observations" / f"{take.uid}.h5"
        else:
            path = take.take_dir / "trajectory" / "gopro_calibs.csv"
            head, *rows = path.read_text().splitlines()
            cols = head.split(",")
            pose = {"tx_world_cam", "qw_world_cam"}
            broken = [
                ",".join("nan" if c in pose else v for c, v in zip(cols, r.split(","), strict=True)) for r in rows
            ]
            path.write_text("\n".join([head, *broken]) + "\n")
            plan[take.uid] = fault
            continue
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * 0.4)])
        plan[take.uid] = fault
    for fault, fracs in PLANNED.items():
        for f in fracs:
            plan[pick(f)] = fault
    for f in KILLED:
        plan[pick(f)] = "sigkill"
    (root / "fault_plan.json").write_text(json.dumps(
        {u: {"fault": k, "attempts": [1]} for u, k in plan.items() if k in faults.FAULTS}, indent=1))  # fmt: skip
    (root / "faults.json").write_text(json.dumps(plan, indent=1))
    return plan


class Killer(threading.Thread):
    """SIGKILL the worker of each victim take on its first attempt, 0.3 s after its running marker appears."""

    def __init__(self, out: Path, victims: list[str]) -> None:
        super().__init__(daemon=True)
        self.out, self.victims, self.killed, self.stop = out, list(victims), {}, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set() and len(self.killed) < len(self.victims):
            for uid in self.victims:
                mark = self.out / ".running" / f"{uid}.json"
                if uid in self.killed or not mark.is_file():
                    continue
                try:
                    info = json.loads(mark.read_text())
                except (OSError, ValueError):
                    continue
                if info.get("attempt") != 1:
                    continue
                time.sleep(0.3)
                try:
                    os.kill(int(info["pid"]), signal.SIGKILL)
                except ProcessLookupError:  # finished in the meantime: try its next attempt... there is none
                    pass
                self.killed[uid] = int(info["pid"])
            time.sleep(0.02)


def batch_config(spec: str) -> BatchConfig:
    executor, workers = spec.split(":")
    return BatchConfig(executor=executor, workers=int(workers), cpus_per_task=1, retries=1)


def run_one(root: Path, out: Path, spec: str, uids: list[str], victims: list[str]) -> dict:
    """One batch run (in this process) with the worker killer; returns its wall time and kills."""
    killer = Killer(out, victims)
    killer.start()
    t0 = time.time()
    try:
        run_batch(root, out, uids, PipelineConfig.from_leaves(REHEARSAL_FIT), batch_config(spec))
    finally:
        killer.stop.set()
        if spec.startswith("ray"):
            import ray

            ray.shutdown()
    return {"wall_s": time.time() - t0, "killed": killer.killed}


def final_outcomes(out: Path) -> dict[str, str]:
    """Per take: ``done`` or the reason of its last failure (a skipped take counts as done)."""
    latest = {}
    for rec in read_manifest(out):
        latest[rec["take"]] = rec
    return {u: "done" if r["status"] in ("done", "skipped") else r.get("reason", "?").split(":")[0]
            for u, r in latest.items()}  # fmt: skip


def analyse(out: Path, wall_s: float, workers: int, plan: dict, killed: dict) -> dict:
    recs = read_manifest(out)
    ran = [r for r in recs if r.get("peak_memory_mb") is not None]  # attempts a worker answered
    done = [r for r in recs if r["status"] == "done"]
    over = np.array([r["wall_s"] - sum(r["stage_seconds"].values()) for r in done])
    stage_total = sum(sum(r.get("stage_seconds", {}).values()) for r in done)
    k20, kend = min(20, len(ran)), len(ran)
    peak = [r["peak_memory_mb"] for r in ran]
    rss = [r["rss_mb"] for r in ran]
    outcomes = final_outcomes(out)
    counts: dict[str, int] = {}
    for v in outcomes.values():
        counts[v] = counts.get(v, 0) + 1
    recorded = {}
    for uid, fault in plan.items():
        first = next((r for r in recs if r["take"] == uid and r.get("attempt") == 1), None)
        want = EXPECTED_REASON[fault]
        seen = first is not None and str(first.get("reason", "")).startswith(want)
        final_ok = outcomes.get(uid) == ("DataError" if want == "DataError" else "done")
        if fault == "sigkill":
            seen = seen and uid in killed
        recorded[f"{fault}:{uid[:8]}"] = bool(seen and final_ok)
    return {
        "wall_s": round(wall_s, 1),
        "takes_per_min": round(60 * len(outcomes) / wall_s, 1),
        "overhead_s": {
            "median": float(np.median(over)),
            "p95": float(np.percentile(over, 95)),
            "mean": float(over.mean()),
        },  # fmt: skip
        "overhead_all_s": round((wall_s * workers - stage_total) / max(1, len(outcomes)), 3),
        "peak_mb_take20": max(peak[:k20]),
        "peak_mb_last": max(peak[max(0, kend - 2 * workers) :]),
        "rss_mb_take20": float(np.median(rss[max(0, k20 - 10) : k20])),
        "rss_mb_last": float(np.median(rss[max(0, kend - 10) :])),
        "outcomes": counts,
        "faults_recorded": recorded,
        "temp_files_left": len(list(out.glob(".*.tmp"))),
    }


def same_results(a: Path, b: Path, uids: list[str]) -> list[str]:
    """The differences between two batch folders' result files (every dataset and attribute but the
    creation time); empty when they are equal."""
    diffs = []
    if sorted(p.name for p in a.glob("*.h5")) != sorted(p.name for p in b.glob("*.h5")):
        diffs.append("different result files")
    for uid in uids:
        pa, pb = a / f"{uid}.h5", b / f"{uid}.h5"
        if not (pa.is_file() and pb.is_file()):
            continue
        ra, rb = read_result(pa), read_result(pb)
        ka = {k: v for k, v in ra.attrs.items() if k != "created_utc"}
        kb = {k: v for k, v in rb.attrs.items() if k != "created_utc"}
        if ka != kb:
            diffs.append(f"{uid}: attributes {sorted(k for k in ka if ka.get(k) != kb.get(k))}")
        if set(ra.arrays) != set(rb.arrays):
            diffs.append(f"{uid}: datasets differ")
            continue
        for k in ra.arrays:
            x, y = np.asarray(ra.arrays[k]), np.asarray(rb.arrays[k])
            equal = np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
            if not equal:
                diffs.append(f"{uid}: {k}")
    return diffs


def driver_kill(root: Path, out: Path, uids: list[str], victims: list[str]) -> dict:
    """Run ``local:2`` in a child process, SIGKILL its process group when 40 % of the takes are done, run it
    again to the end."""
    cmd = [sys.executable, __file__, "--drive", str(root), str(out)]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    killer = Killer(out, victims)
    killer.start()
    while proc.poll() is None:
        if sum(r["status"] == "done" for r in read_manifest(out)) >= 0.4 * len(uids):
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.2)
    proc.wait()
    at_kill = len({r["take"] for r in read_manifest(out) if r["status"] == "done"})
    left = sorted(p.name for p in out.glob(".*.tmp")) + sorted(p.name for p in (out / ".running").glob("*"))
    rerun = subprocess.run(cmd, capture_output=True, text=True)
    killer.stop.set()
    return {"done_at_kill": at_kill, "left_by_kill": len(left), "rerun_rc": rerun.returncode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--takes", type=int, default=200)
    ap.add_argument("--work", type=Path, default=None, help="Folder for the dataset and the runs (default: temp).")
    ap.add_argument("--runs", default="local:1,local:2,ray:1,ray:2")
    ap.add_argument("--no-driver-kill", action="store_true")
    ap.add_argument("--drive", nargs=2, type=Path, metavar=("ROOT", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.drive:  # the child of the driver-kill check: the local:2 run
        root, out = args.drive
        os.environ[faults.PLAN_ENV] = str(root / "fault_plan.json")
        uids = [t.take_uid for t in EgoExoDataset(root).takes()]
        run_batch(root, out, uids, PipelineConfig.from_leaves(REHEARSAL_FIT), batch_config("local:2"))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_batch_"))
    root = work / f"ds{args.takes}"
    if not (root / "faults.json").is_file():
        shutil.rmtree(root, ignore_errors=True)
        t0 = time.time()
        write_rehearsal_dataset(root, args.takes)
        print(f"dataset: {args.takes} takes in {time.time() - t0:.0f} s ({root})")
    plan = json.loads((root / "faults.json").read_text())
    os.environ[faults.PLAN_ENV] = str(root / "fault_plan.json")  # the workers inherit it
    uids = [t.take_uid for t in EgoExoDataset(root).takes()]
    minutes = sum(t.n_frames for t in EgoExoDataset(root).takes()) / 30 / 60
    victims = [u for u, f in plan.items() if f == "sigkill"]
    print(f"# batch rehearsal: {len(uids)} takes ({minutes:.0f} min of video, 5 s - 2 min, scenarios mixed), "
          f"{len(plan)} faults; {platform.machine()}, {os.cpu_count()} cores; fit {REHEARSAL_FIT}")  # fmt: skip
    print(
        "| run | wall | takes / min | overhead per take: median / p95 / mean | all idle per take "
        "| peak MB take 20 -> last | RSS MB take 20 -> last | outcomes | faults recorded |"
    )
    print("|---|---:|---:|---|---:|---|---|---|---|")
    results = {}
    for spec in args.runs.split(","):
        out = work / f"run_{spec.replace(':', '')}"
        shutil.rmtree(out, ignore_errors=True)
        r = run_one(root, out, spec, uids, victims)
        a = analyse(out, r["wall_s"], int(spec.split(":")[1]), plan, r["killed"])
        results[spec] = a
        o = a["overhead_s"]
        print(f"| {spec} | {a['wall_s']:.0f} s | {a['takes_per_min']:.1f} | {o['median']:.2f} / {o['p95']:.2f} / "
              f"{o['mean']:.2f} s | {a['overhead_all_s']:.2f} s | {a['peak_mb_take20']:.0f} -> {a['peak_mb_last']:.0f} "
              f"| {a['rss_mb_take20']:.0f} -> {a['rss_mb_last']:.0f} | "
              f"{', '.join(f'{k} {v}' for k, v in sorted(a['outcomes'].items()))} | "
              f"{sum(a['faults_recorded'].values())} / {len(a['faults_recorded'])} |", flush=True)  # fmt: skip
    if not args.no_driver_kill and "local:2" in results:
        out = work / "run_local2_killed"
        shutil.rmtree(out, ignore_errors=True)
        k = driver_kill(root, out, uids, victims)
        ref = work / "run_local2"
        diffs = same_results(ref, out, uids)
        same_outcomes = final_outcomes(ref) == final_outcomes(out)
        results["driver_kill"] = {**k, "same_outcomes": same_outcomes, "result_differences": diffs[:20]}
        print(f"driver killed with {k['done_at_kill']} takes done ({k['left_by_kill']} markers/temp files left, "
              f"cleared by the rerun); rerun exit {k['rerun_rc']}; outcomes equal to the uninterrupted run: "
              f"{same_outcomes}; result files equal: {not diffs} {diffs[:3] if diffs else ''}")  # fmt: skip
    (work / "bench_batch.json").write_text(json.dumps(results, indent=1))
    print(f"details: {work / 'bench_batch.json'}")


if __name__ == "__main__":
    main()
