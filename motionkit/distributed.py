"""Many takes at once on an existing engine: a local process pool, Ray, or Slurm through submitit.

One task per take calls ``pipeline.run_take`` (exactly what ``motionkit fit`` runs); with
``takes_per_task = K > 1`` one task fits K takes in one batched fit on its device
(``pipeline.run_fits``), which is what keeps a GPU busy. Results are
written atomically by the task; the driver alone appends to ``<out>/manifest.jsonl`` (one JSON line
per attempt: take, status, error, attempt, duration, host). A take whose result file is complete,
``ok`` and made with the same config hash and motionkit version is skipped, so an interrupted run
is resumed by running it again.
"""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import resource
import socket
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from motionkit.batch_report import write_batch_report
from motionkit.common.errors import DataError
from motionkit.common.files import write_json_atomic
from motionkit.data.store import result_path
from motionkit.pipeline import STAGES, PipelineConfig, TakeRun, reusable_result, run_take, run_takes

EXECUTORS = ("local", "ray", "slurm")


@dataclass
class BatchConfig:
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


def _task_config(fit_config: dict) -> PipelineConfig:
    """The task's ``PipelineConfig``, after setting torch's threads to the task's ``_threads`` (if any)."""
    fit_config = dict(fit_config)
    threads = int(fit_config.pop("_threads", 0) or 0)
    if threads:
        torch.set_num_threads(threads)
    return PipelineConfig.from_dict(fit_config)


def _peak_memory_mb() -> float:
    """This process's peak resident memory so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kilobytes on Linux


def _run_facts(run: TakeRun) -> dict:
    """What the batch report reads from a take's run: seconds per stage, the fit's device, its coverage."""
    r = run.result
    cov = r["eval/coverage_video_time"] if "eval/coverage_video_time" in r.arrays else None
    return {"stage_seconds": {k: round(v, 3) for k, v in run.timings.items()}, "device": r.attrs.get("fit_device"),
            "coverage_video_time": None if cov is None else float(cov)}  # fmt: skip


def _record(take_uid: str, base: dict, t0: float, error: BaseException | None = None, **extra) -> dict:
    """A manifest record: ``done``, or ``failed`` with the error (a ``DataError`` as its message, anything
    else with its type and a short traceback) and a short ``reason``; the worker's peak memory."""
    rec = {"take": take_uid, **base, **extra}
    if error is None:
        rec.update(status="done", error="")
    elif isinstance(error, DataError):
        rec.update(status="failed", error=str(error), reason=f"DataError: {error.message.split(':')[0][:60]}")
    else:
        rec.update(status="failed", error=f"{type(error).__name__}: {error}", reason=type(error).__name__)
        if error.__traceback__ is not None:
            rec["traceback"] = "".join(traceback.format_exception(error, limit=5))
    rec["duration_s"] = round(time.time() - t0, 3)
    rec["peak_memory_mb"] = round(_peak_memory_mb(), 1)
    return rec


def _base(attempt: int) -> dict:
    return {"attempt": attempt, "host": socket.gethostname(), "pid": os.getpid()}


def fit_task(root: str, take_uid: str, out_dir: str, fit_config: dict, attempt: int = 1) -> dict:
    """Run one take; never raises: returns the manifest record (status ``done`` or ``failed``)."""
    t0 = time.time()
    try:
        run = run_take(root, take_uid, out_dir, _task_config(fit_config), progress=False)
    except Exception as exc:  # noqa: BLE001 - a crashing take must not stop the others
        return _record(take_uid, _base(attempt), t0, exc)
    return _record(take_uid, _base(attempt), t0, **_run_facts(run))


def fit_group_task(root: str, take_uids: list[str], out_dir: str, fit_config: dict, attempt: int = 1) -> list[dict]:
    """Run several takes with one batched fit; never raises: one manifest record per take."""
    t0 = time.time()
    try:
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


def _need(module: str):
    try:
        return __import__(module)
    except ImportError as exc:
        raise RuntimeError(
            f"the {module} executor needs the optional dependencies: pip install 'motionkit[dist]'"
        ) from exc


def _run_local(jobs: list[tuple], bc: BatchConfig) -> Iterator[dict]:

    with ProcessPoolExecutor(max_workers=bc.workers, mp_context=mp.get_context("spawn")) as ex:
        futs = [ex.submit(_call, j) for j in jobs]
        for f in as_completed(futs):
            yield from f.result()


def _run_ray(jobs: list[tuple], bc: BatchConfig) -> Iterator[dict]:
    ray = _need("ray")
    if not ray.is_initialized():
        if bc.ray_address:
            ray.init(address=bc.ray_address, log_to_driver=False)
        else:
            ray.init(num_cpus=max(bc.workers * bc.cpus_per_task, 1), include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=bc.cpus_per_task, num_gpus=bc.gpus_per_task, max_retries=0)(_call)
    pending = [remote.remote(j) for j in jobs]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for d in done:
            yield from ray.get(d)


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
    takes_of = {id(job): j[1] if isinstance(j[1], list) else [j[1]] for job, j in zip(running, jobs, strict=True)}
    while running:
        still = []
        for job in running:
            if job.done():
                try:
                    yield from job.result()
                except Exception as exc:  # noqa: BLE001 - the job itself died (killed, out of memory)
                    for uid in takes_of[id(job)]:
                        yield {"take": uid, "status": "failed", "error": f"slurm job {job.job_id}: {exc}",
                               "attempt": 0}  # fmt: skip
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


def run_batch(root, out_dir, take_uids: list[str], fit_config: PipelineConfig, bc: BatchConfig,
              on_record: Callable[[dict], None] | None = None) -> dict:  # fmt: skip
    """Fit ``take_uids`` with the chosen executor; returns the summary (done, skipped, failed). Failures
    other than data errors (a killed worker, out of memory, a crash) are retried up to ``bc.retries``
    times, their reasons kept in the manifest; the batch report (``motionkit.batch_report``) is written at
    the end and on interruption (``motionkit status`` shows it while the batch runs)."""
    if bc.executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = out_dir / "manifest.jsonl"
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
            cov = prev["eval/coverage_video_time"] if "eval/coverage_video_time" in prev.arrays else None
            rec = {
                "take": uid,
                "status": "skipped",
                "error": "",
                "attempt": 0,
                "duration_s": 0.0,
                "host": socket.gethostname(),
                "coverage_video_time": None if cov is None else float(cov),
                "device": prev.attrs.get("fit_device"),
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
            _append_manifest(manifest, rec)
            if on_record:
                on_record(rec)
            if rec["status"] == "done":
                summary["done"].append(rec["take"])
                summary["failed"].pop(rec["take"], None)
            else:
                summary["failed"][rec["take"]] = rec["error"]
                if not str(rec.get("reason", "")).startswith("DataError"):  # a data error fails again
                    failed_now.append(rec["take"])
        todo = failed_now
        attempt += 1
    summary["config"] = {"fit": asdict(fit_config), "batch": asdict(bc)}
    return summary
