"""Many takes at once on an existing engine: a local process pool, Ray, or Slurm through submitit.

One task per take calls ``pipeline.run_take`` (exactly what ``motionkit fit`` runs); with
``takes_per_task = K > 1`` one task fits K takes in one batched fit on its device
(``pipeline.run_fits``), which is what keeps a GPU busy. Results are
written atomically by the task; the driver alone appends to ``<out>/manifest.jsonl`` (one JSON line
per attempt: take, status, error, attempt, duration, host, and ``final``: no retry follows). A take
whose result file is complete, ``ok`` and made with the same config hash and motionkit version is
skipped, so an interrupted run is resumed by running it again.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import multiprocessing as mp
import os
import resource
import signal
import socket
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from motionkit.batch_report import MANIFEST, RUNNING_DIR, write_batch_report
from motionkit.body.quality import flag_shares
from motionkit.common import faults
from motionkit.common.errors import DataError, one_line_warning
from motionkit.common.files import write_json_atomic
from motionkit.data.store import TakeResult, result_path
from motionkit.pipeline import STAGES, PipelineConfig, TakeRun, reusable_result, run_take, run_takes, trusted_share

EXECUTORS = ("local", "ray", "slurm")


@dataclass
class BatchConfig:
    """How ``run_batch`` runs the takes (``motionkit batch``'s options): the ``executor`` (``EXECUTORS``),
    its parallelism and each task's CPUs, GPUs (a fraction on Ray) and takes (fitted in one batched
    optimisation), retries of a task that failed for a reason other than its data, ``force`` (fit again
    what could be reused), and the Ray and Slurm settings. Counts below their least are refused."""

    executor: str = "local"
    workers: int = 2  # local: processes; slurm: array parallelism
    cpus_per_task: int = 1
    gpus_per_task: float = 0  # Ray accepts fractions (two tasks sharing a GPU overlap CPU stages and fits)
    takes_per_task: int = 1
    retries: int = 0
    force: bool = False
    ray_address: str | None = None
    slurm_partition: str | None = None
    slurm_time_min: int = 60
    slurm_local: bool = False  # submitit's local executor (tests, single machine)
    slurm_folder: str | None = None

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}; got {self.executor!r}")
        least = {"workers": 1, "cpus_per_task": 1, "gpus_per_task": 0, "takes_per_task": 1, "retries": 0,
                 "slurm_time_min": 1}  # fmt: skip
        for name, low in least.items():
            if not getattr(self, name) >= low:
                raise ValueError(f"BatchConfig.{name} must be >= {low}; got {getattr(self, name)!r}")


def _task_config(fit_config: dict) -> PipelineConfig:
    """The task's ``PipelineConfig``, after setting torch's threads to the task's ``_threads`` (if any) and
    installing the one-line warnings."""
    warnings.formatwarning = one_line_warning  # as on the CLI's terminal
    fit_config = dict(fit_config)
    threads = int(fit_config.pop("_threads", 0) or 0)
    if threads:
        torch.set_num_threads(threads)
    return PipelineConfig.from_dict(fit_config)


def _memory_mb() -> tuple[float, float]:
    """This process's peak resident memory so far and its resident memory now (MB): ``VmHWM`` and ``VmRSS``
    of ``/proc/self/status`` (``ru_maxrss`` survives ``exec``, so a spawned worker would report its
    parent's peak), or ``ru_maxrss`` twice where there is no ``/proc``."""
    try:
        with open("/proc/self/status") as fh:
            kb = {k: float(v.split()[0]) for k, _, v in (ln.partition(":") for ln in fh) if k in ("VmHWM", "VmRSS")}
        return kb["VmHWM"] / 1024.0, kb["VmRSS"] / 1024.0
    except (OSError, KeyError, ValueError):  # not Linux
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kilobytes on Linux
        return peak, peak


def _run_facts(run: TakeRun) -> dict:
    """What the batch report reads from a take's run: seconds per stage and ``_result_facts``."""
    return {"stage_seconds": {k: round(v, 3) for k, v in run.timings.items()}, **_result_facts(run.result)}


def _result_facts(r: TakeResult) -> dict:
    """What the batch report reads from a take's result: the fit's device, its coverage of the video
    time, its valid samples, the share of each body part's landmarks it trusts in them and the share of
    them each flag marks (``body.quality.trust_by_part``, ``flag_shares``), and the camera-frames the fit
    was given a weighted observation in and those of them it dropped whole (``fit`` attrs
    ``views_weighted``, ``second_pass_views_dropped``; None for what it lacks)."""
    cov = r["eval/coverage_video_time"] if "eval/coverage_video_time" in r.arrays else None
    valid = r["valid"].astype(bool) if "valid" in r.arrays else None
    flags = r.group("flags")
    return {
        "device": r.attrs.get("fit_device"),
        "coverage_video_time": None if cov is None else float(cov),
        "valid_samples": None if valid is None else int(valid.sum()),
        "trusted_share": trusted_share(r),
        "flag_share": flag_shares(flags, valid) if flags and valid is not None else None,
        "views_weighted": r.group_attrs.get("fit", {}).get("views_weighted"),
        "views_dropped": r.group_attrs.get("fit", {}).get("second_pass_views_dropped"),
    }


def _record(take_uid: str, base: dict, t0: float, error: BaseException | None = None, **extra) -> dict:
    """A manifest record: ``done``, or ``failed`` with the error (a ``DataError`` as its message, anything
    else with its type and a short traceback) and a short ``reason``; the worker's peak and current
    resident memory."""
    rec = {"take": take_uid, **base, **extra}
    if error is None:
        rec.update(status="done", error="")
    elif isinstance(error, DataError):
        rec.update(status="failed", error=str(error), reason=f"DataError: {error.message.split(':')[0][:60]}")
    else:
        rec.update(status="failed", error=f"{type(error).__name__}: {error}", reason=type(error).__name__)
        if error.__traceback__ is not None:
            rec["traceback"] = "".join(traceback.format_exception(error, limit=5))
    rec["started"] = round(t0, 3)
    rec["duration_s"] = round(time.time() - t0, 3)
    rec["peak_memory_mb"], rec["rss_mb"] = (round(m, 1) for m in _memory_mb())
    return rec


def _base(attempt: int) -> dict:
    return {"attempt": attempt, "host": socket.gethostname(), "pid": os.getpid()}


@contextlib.contextmanager
def _running(out_dir: str, take_uids: list[str], attempt: int) -> Iterator[None]:
    """Mark ``take_uids`` as running in ``<out_dir>/.running/`` (host, pid, attempt, since) while the block
    runs: ``motionkit status`` lists them; a marker left behind names a worker that died."""
    folder = Path(out_dir) / RUNNING_DIR
    marks = [folder / f"{uid}.json" for uid in take_uids]
    info = {**_base(attempt), "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
    for uid, mark in zip(take_uids, marks, strict=True):
        write_json_atomic(mark, {"take": uid, **info})
    try:
        yield
    finally:
        for mark in marks:
            mark.unlink(missing_ok=True)


def fit_task(root: str, take_uid: str, out_dir: str, fit_config: dict, attempt: int = 1) -> dict:
    """Run one take; never raises: returns the manifest record (status ``done`` or ``failed``)."""
    t0 = time.time()
    try:
        with _running(out_dir, [take_uid], attempt), faults.armed(take_uid, attempt):
            faults.check_start()
            run = run_take(root, take_uid, out_dir, _task_config(fit_config), progress=False)
    except Exception as exc:  # noqa: BLE001 - a crashing take must not stop the others
        return _record(take_uid, _base(attempt), t0, exc)
    return _record(take_uid, _base(attempt), t0, **_run_facts(run))


def fit_group_task(root: str, take_uids: list[str], out_dir: str, fit_config: dict, attempt: int = 1) -> list[dict]:
    """Run several takes with one batched fit; never raises: one manifest record per take."""
    t0 = time.time()
    try:
        with _running(out_dir, take_uids, attempt):
            results = run_takes(root, take_uids, out_dir, _task_config(fit_config), plot=True)
    except Exception as exc:  # noqa: BLE001 - the whole group failed (e.g. out of GPU memory)
        results = [exc] * len(take_uids)
    return [
        _record(uid, _base(attempt), t0, res, group=take_uids) if isinstance(res, BaseException)
        else _record(uid, _base(attempt), t0, group=take_uids, **_run_facts(res))
        for uid, res in zip(take_uids, results, strict=True)
    ]  # fmt: skip


def _call(job: tuple) -> list[dict]:
    """Run one job tuple (one take, or a list of takes) and return its records as a list."""
    if isinstance(job[1], list):
        return fit_group_task(*job)
    return [fit_task(*job)]


def _job_takes(job: tuple) -> list[str]:
    return job[1] if isinstance(job[1], list) else [job[1]]


def _lost(job: tuple, why: str) -> list[dict]:
    """The records of a job whose worker died before it could answer (killed, out of memory); its running
    markers are removed (the driver's account of the job replaces them)."""
    records = []
    for uid in _job_takes(job):
        mark = Path(job[2]) / RUNNING_DIR / f"{uid}.json"
        where = json.loads(mark.read_text()) if mark.is_file() else {}
        mark.unlink(missing_ok=True)
        records.append({"take": uid, "attempt": job[4], "host": where.get("host"), "pid": where.get("pid"),
                        "status": "failed", "reason": "WorkerLost", "error": f"WorkerLost: {why}"})  # fmt: skip
    return records


def _timed(records: list[dict], dispatched: float) -> list[dict]:
    """Add ``wall_s``: seconds from handing the job to a worker to its answer reaching the driver."""
    wall = round(time.time() - dispatched, 3)
    return [{**r, "wall_s": wall} for r in records]


def _need(module: str):
    try:
        return __import__(module)
    except ImportError as exc:
        raise RuntimeError(
            f"the {module} executor needs the optional dependencies: pip install 'motionkit[dist]'"
        ) from exc


def _exit_reason(procs: list) -> str:
    """How the worker process of a broken single-process pool ended (its exit code or signal); ``procs``:
    the pool's processes, taken when the job was handed over (the pool forgets them once broken)."""
    for p in procs:
        deadline = time.monotonic() + 5
        p.join(timeout=5)
        # the pool's own thread reaps its broken processes too: if it won the race for the exit status, this
        # thread's wait saw none, and the status appears on the shared Popen a moment later
        while p.exitcode is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if p.exitcode is not None and p.exitcode < 0:
            return f"worker process {p.pid} was killed by {signal.Signals(-p.exitcode).name}"
        if p.exitcode:
            return f"worker process {p.pid} exited with code {p.exitcode}"
    return "the worker process ended abruptly (killed, or out of memory)"


def _run_local(jobs: list[tuple], bc: BatchConfig) -> Iterator[dict]:
    """``bc.workers`` single-process pools, one job in flight on each: a worker killed mid-take (SIGKILL, the
    kernel's out-of-memory killer) breaks only its own pool, its job is recorded as ``WorkerLost`` and its
    slot starts a fresh process."""
    ctx = mp.get_context("spawn")
    queue = collections.deque(jobs)
    pools: list[ProcessPoolExecutor | None] = [None] * bc.workers
    running: dict[Future, tuple[int, tuple, float, list]] = {}
    try:
        while queue or running:
            busy = {slot for slot, *_ in running.values()}
            for slot in range(bc.workers):
                if queue and slot not in busy:
                    pools[slot] = pools[slot] or ProcessPoolExecutor(max_workers=1, mp_context=ctx)
                    job = queue.popleft()
                    fut = pools[slot].submit(_call, job)
                    procs = list((getattr(pools[slot], "_processes", None) or {}).values())  # the stdlib's own
                    running[fut] = (slot, job, time.time(), procs)
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                slot, job, dispatched, procs = running.pop(fut)
                try:
                    records = fut.result()
                except BrokenProcessPool:
                    records = _lost(job, _exit_reason(procs))
                    pools[slot].shutdown(wait=False)
                    pools[slot] = None
                yield from _timed(records, dispatched)
    finally:
        for pool in pools:
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)


def _run_ray(jobs: list[tuple], bc: BatchConfig) -> Iterator[dict]:
    """Ray tasks, as many in flight as the cluster has room for (``bc.workers`` on the local cluster this
    starts); a task whose worker died is recorded as ``WorkerLost``."""
    ray = _need("ray")
    if not ray.is_initialized():
        if bc.ray_address:
            ray.init(address=bc.ray_address, log_to_driver=False)
        else:
            ray.init(num_cpus=max(bc.workers * bc.cpus_per_task, 1), include_dashboard=False, log_to_driver=False)
    room = ray.cluster_resources()
    slots = int(room.get("CPU", 1) // max(bc.cpus_per_task, 1))
    if bc.gpus_per_task:
        slots = min(slots, int(room.get("GPU", 0) // bc.gpus_per_task))
    slots = max(1, slots if bc.ray_address else min(slots, bc.workers))
    remote = ray.remote(num_cpus=bc.cpus_per_task, num_gpus=bc.gpus_per_task, max_retries=0)(_call)
    queue = collections.deque(jobs)
    running: dict = {}  # object ref -> (job, dispatched)
    while queue or running:
        while queue and len(running) < slots:
            job = queue.popleft()
            running[remote.remote(job)] = (job, time.time())
        finished, _ = ray.wait(list(running), num_returns=1)
        for ref in finished:
            job, dispatched = running.pop(ref)
            try:
                records = ray.get(ref)
            except ray.exceptions.RayError as exc:  # the worker died (killed, out of memory, node lost)
                records = _lost(job, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            yield from _timed(records, dispatched)


class SacctNoticeOnce(logging.Filter):
    """On clusters without Slurm accounting every poll of submitit fails to call ``sacct`` and logs a
    warning; this filter lets one short notice through and drops the repeats."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if "Bypassing sacct error" not in record.getMessage():
            return True
        if self.seen:
            return False
        self.seen = True
        record.msg, record.args = "sacct failed (no Slurm accounting?); job states come from submitit's files", ()
        return True


def _run_slurm(jobs: list[tuple], bc: BatchConfig, out_dir: Path) -> Iterator[dict]:
    submitit = _need("submitit")
    quiet = SacctNoticeOnce()
    logging.getLogger("submitit").addFilter(quiet)
    try:
        yield from _poll_slurm(submitit, jobs, bc, out_dir)
    finally:
        logging.getLogger("submitit").removeFilter(quiet)


def _poll_slurm(submitit, jobs: list[tuple], bc: BatchConfig, out_dir: Path) -> Iterator[dict]:
    folder = Path(bc.slurm_folder or out_dir / "slurm_logs") / "%j"
    ex = submitit.AutoExecutor(folder=folder, cluster="local" if bc.slurm_local else None)
    params = {"timeout_min": bc.slurm_time_min * max(1, bc.takes_per_task), "cpus_per_task": bc.cpus_per_task}
    if not bc.slurm_local:
        params.update(slurm_array_parallelism=bc.workers)
        if bc.slurm_partition:
            params["slurm_partition"] = bc.slurm_partition
    if not bc.slurm_local and bc.gpus_per_task:
        params["gpus_per_node"] = int(max(1, round(bc.gpus_per_task)))
    ex.update_parameters(**params)
    running = ex.map_array(_call, jobs)
    job_of = {id(r): (j, time.time()) for r, j in zip(running, jobs, strict=True)}
    while running:
        still = []
        for job in running:
            if job.done():
                j, dispatched = job_of[id(job)]
                try:
                    records = job.result()
                except Exception as exc:  # noqa: BLE001 - the job itself died (killed, out of memory)
                    records = _lost(j, f"slurm job {job.job_id}: {str(exc).splitlines()[0][:200]}")
                yield from _timed(records, dispatched)
            else:
                still.append(job)
        running = still
        if running:
            time.sleep(0.5)


def _append_manifest(path: Path, rec: dict) -> None:
    rec = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **rec}
    with open(path, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _clear_leftovers(out_dir: Path, min_age_s: float = 0.0) -> None:
    """Remove what killed workers or a killed driver left in ``out_dir``: running markers and temporary
    files of unfinished writes, those older than ``min_age_s`` (a batch folder is written by one batch at
    a time; Slurm jobs may outlive their driver, so their files are left until their time limit)."""
    now = time.time()
    for leftover in [*(out_dir / RUNNING_DIR).glob("*.json"), *out_dir.glob(".*.tmp")]:
        with contextlib.suppress(FileNotFoundError):
            if now - leftover.stat().st_mtime >= min_age_s:
                leftover.unlink()


def run_batch(root, out_dir, take_uids: list[str], fit_config: PipelineConfig, bc: BatchConfig,
              on_record: Callable[[dict], None] | None = None) -> dict:  # fmt: skip
    """Fit ``take_uids`` with the chosen executor; returns the summary (done, skipped, failed). Failures
    other than data errors (a killed worker, out of memory, a crash) are retried up to ``bc.retries``
    times, their reasons kept in the manifest; the batch report (``motionkit.batch_report``) is written at
    the end and on interruption (``motionkit status`` shows it while the batch runs)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = out_dir / MANIFEST
    _clear_leftovers(out_dir, bc.slurm_time_min * 60.0 if bc.executor == "slurm" else 0.0)
    write_json_atomic(out_dir / "batch.json", {"root": str(root), "takes": list(take_uids), "executor": bc.executor,
                                               "started": time.strftime("%Y-%m-%dT%H:%M:%S")})  # fmt: skip
    try:
        return _run_batch(root, out_dir, manifest, take_uids, fit_config, bc, on_record)
    finally:  # at the end and on interruption alike
        write_batch_report(out_dir, root, list(take_uids))


def _run_batch(root, out_dir: Path, manifest: Path, take_uids: list[str], fit_config: PipelineConfig, bc: BatchConfig,
               on_record: Callable[[dict], None] | None) -> dict:  # fmt: skip
    summary = {"done": [], "skipped": [], "failed": {}}
    todo = []
    for uid in take_uids:
        prev = None if bc.force else reusable_result(result_path(out_dir, uid), fit_config)
        if prev is not None and prev.stages == list(STAGES):
            summary["skipped"].append(uid)
            rec = {
                "take": uid,
                "status": "skipped",
                "error": "",
                "attempt": 0,
                "duration_s": 0.0,
                "host": socket.gethostname(),
                **_result_facts(prev),
                "final": True,
            }
            _append_manifest(manifest, rec)
            if on_record:
                on_record(rec)
        else:
            todo.append(uid)
    cfg = fit_config.to_dict()
    if bc.cpus_per_task:
        cfg["_threads"] = bc.cpus_per_task
    attempt = 1
    while todo and attempt <= bc.retries + 1:
        K = max(1, bc.takes_per_task)
        if K == 1:
            jobs = [(str(root), uid, str(out_dir), dict(cfg), attempt) for uid in todo]
        else:
            jobs = [(str(root), todo[i : i + K], str(out_dir), dict(cfg), attempt) for i in range(0, len(todo), K)]
        if bc.executor == "local":
            stream = _run_local(jobs, bc)
        elif bc.executor == "ray":
            stream = _run_ray(jobs, bc)
        else:
            stream = _run_slurm(jobs, bc, out_dir)
        failed_now = []
        for rec in stream:
            rec.pop("traceback", None)
            # a data error fails again: only other failures are retried, while attempts are left
            retry = rec["status"] != "done" and not str(rec.get("reason", "")).startswith("DataError")
            rec["final"] = not (retry and attempt <= bc.retries)
            _append_manifest(manifest, rec)
            if on_record:
                on_record(rec)
            if rec["status"] == "done":
                summary["done"].append(rec["take"])
                summary["failed"].pop(rec["take"], None)
            else:
                summary["failed"][rec["take"]] = rec["error"]
                if retry:
                    failed_now.append(rec["take"])
        todo = failed_now
        attempt += 1
    summary["config"] = {"fit": asdict(fit_config), "batch": asdict(bc)}
    return summary
