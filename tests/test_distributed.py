"""motionkit batch on the local pool, Ray (local cluster) and Slurm (submitit's local executor)."""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from click.testing import CliRunner

from motionkit.batch_report import REPORT_MD
from motionkit.cli import main
from motionkit.common import faults
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.store import read_result
from motionkit.distributed import BatchConfig, SacctNoticeOnce, _exit_reason, run_batch
from motionkit.pipeline import PipelineConfig, run_fit
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

# a short fit without the camera refinement's two refits: these tests are about the executors, not the fit
FAST = PipelineConfig(fit_iters=(10, 20, 10), refine_cameras=False)


@pytest.fixture(scope="module")
def six_takes(tmp_path_factory):
    root = tmp_path_factory.mktemp("batch") / "ds"
    write_synthetic_dataset(root, SynthConfig(takes=6, seed=8, duration=1.5, bystanders=1))
    uids = [t.take_uid for t in EgoExoDataset(root).takes()]
    bad = EgoExoDataset(root).take(uids[2])
    (bad.take_dir / "trajectory" / "closed_loop_trajectory.csv").write_text("graph_uid,tracking\n1,2\n")
    return root, uids


def _manifest(out):
    return [json.loads(ln) for ln in (out / "manifest.jsonl").read_text().splitlines()]


def _check_summary(summary, takes, bad):
    assert sorted(summary["done"]) == sorted(u for u in takes if u != bad)
    assert list(summary["failed"]) == [bad]
    assert "closed_loop_trajectory.csv" in summary["failed"][bad]


@pytest.mark.parametrize("executor", ["local", "ray", "slurm"])
def test_executors_finish_good_takes_and_record_the_bad_one(six_takes, tmp_path, executor):
    if executor == "ray":
        pytest.importorskip("ray")
    if executor == "slurm":
        pytest.importorskip("submitit")
    root, uids = six_takes
    # Ray and Slurm: the executor's plumbing on one good take and the bad one (a Ray worker's start is slow)
    takes = uids if executor == "local" else [uids[0], uids[2]]
    out = tmp_path / "out"
    bc = BatchConfig(executor=executor, workers=2, slurm_local=True, slurm_folder=str(tmp_path / "slurm"))
    try:
        summary = run_batch(root, out, takes, FAST, bc)
    finally:
        if executor == "ray":
            import ray

            ray.shutdown()
    _check_summary(summary, takes, uids[2])
    recs = _manifest(out)
    assert {r["take"] for r in recs if r["status"] == "done"} == set(summary["done"])
    bad = [r for r in recs if r["take"] == uids[2]]
    assert bad[0]["status"] == "failed" and bad[0]["host"] and bad[0]["attempt"] == 1
    # a failed take leaves a result that records why, never a partial file; the others are complete
    assert read_result(out / f"{uids[2]}.h5").attrs["status"] == "failed"
    assert not list(out.glob(".*.tmp"))
    # a rerun skips the finished takes
    again = run_batch(root, out, takes, FAST, BatchConfig(executor="local", workers=2))
    assert sorted(again["skipped"]) == sorted(summary["done"]) and again["done"] == []
    # done and skipped records alike say what each fit trusts, as its result file does
    for rec in (r for r in _manifest(out) if r["status"] in ("done", "skipped")):
        res = read_result(out / f"{rec['take']}.h5")
        valid, trusted = res["valid"].astype(bool), res["fit/joint_trusted"].astype(bool)
        assert rec["valid_samples"] == valid.sum()
        assert rec["trusted_share"]["legs"] == pytest.approx(trusted[valid][:, 13:].mean())
        assert rec["flag_share"]["OCCLUDED"] == pytest.approx(res["flags/OCCLUDED"][valid].mean())
        # the views given weight are those that keep some and those dropped whole
        assert rec["views_weighted"] == (res["fit/obs_weight"] > 0).any(-1).sum() + rec["views_dropped"]
        assert rec["views_dropped"] == res.group_attrs["fit"]["second_pass_views_dropped"]


def test_batch_result_equals_single_take_fit(six_takes, tmp_path):
    root, uids = six_takes
    out = tmp_path / "batch"
    run_batch(root, out, [uids[0]], FAST, BatchConfig(executor="local", workers=1))
    single = run_fit(root, uids[0], tmp_path / "single", FAST, progress=False, plot=False).result
    batch = read_result(out / f"{uids[0]}.h5")
    for key in ("smplx/global_orient", "smplx/body_pose", "smplx/betas", "smplx/transl", "joints/coco17", "valid"):
        np.testing.assert_allclose(batch[key], single[key], rtol=0, atol=1e-6, equal_nan=True)


def test_retries_and_force(six_takes, tmp_path, monkeypatch):
    """A data error fails again, so it is not retried; a transient failure (out of memory, a killed
    worker) is, with its reason kept; --force recomputes a complete take."""
    root, uids = six_takes
    out = tmp_path / "out"
    s = run_batch(root, out, [uids[2], uids[3]], FAST, BatchConfig(executor="local", workers=1, retries=1))
    recs = [r for r in _manifest(out) if r["take"] == uids[2]]
    assert [r["attempt"] for r in recs] == [1] and recs[0]["reason"].startswith("DataError") and recs[0]["final"]
    assert s["done"] == [uids[3]]
    s2 = run_batch(root, out, [uids[3]], FAST, BatchConfig(executor="local", workers=1, force=True))
    assert s2["done"] == [uids[3]] and s2["skipped"] == []
    plan = tmp_path / "plan.json"  # the first attempt of the take dies of MemoryError
    plan.write_text(json.dumps({uids[4]: {"fault": "memory", "attempts": [1]}}))
    monkeypatch.setenv(faults.PLAN_ENV, str(plan))
    s3 = run_batch(root, tmp_path / "oom", [uids[4]], FAST, BatchConfig(executor="local", workers=1, retries=1))
    recs = _manifest(tmp_path / "oom")
    assert [(r["attempt"], r["status"], r.get("reason")) for r in recs] == [
        (1, "failed", "MemoryError"),
        (2, "done", None),
    ]
    assert s3["done"] == [uids[4]]
    rep = json.loads((tmp_path / "oom" / "batch_report.json").read_text())
    assert rep["outcomes"] == {"done": {"done": 1}} and rep["attempts"] == 2
    assert set(rep["stage_seconds"]) >= {"load", "fit", "evaluate"} and rep["peak_memory_mb"]["max"] > 50
    assert "## Outcomes" in (tmp_path / "oom" / REPORT_MD).read_text()
    shown = CliRunner().invoke(main, ["status", str(tmp_path / "oom"), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["outcomes"] == rep["outcomes"]


def _kill_when_running(out, take, killed):
    """Kill (SIGKILL) the worker that runs ``take`` as soon as its running marker appears, once."""
    mark = out / ".running" / f"{take}.json"
    deadline = time.time() + 600
    while time.time() < deadline:
        try:
            pid = json.loads(mark.read_text())["pid"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.02)
            continue
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
        return


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_killed_worker_and_full_disk_are_recorded_and_retried(six_takes, tmp_path, monkeypatch, executor):
    """A worker killed mid-take (SIGKILL) and a result write that finds the disk full: both recorded with
    their reason, retried, and done; the other takes are not disturbed; nothing half-written is left."""
    if executor == "ray":
        pytest.importorskip("ray")
    root, uids = six_takes
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({uids[1]: {"fault": "disk_full", "attempts": [1]}}))
    monkeypatch.setenv(faults.PLAN_ENV, str(plan))
    out, killed = tmp_path / "out", []
    killer = threading.Thread(target=_kill_when_running, args=(out, uids[3], killed), daemon=True)
    killer.start()
    # Ray: the two faulty takes alone (a Ray worker's start is slow); local: with two takes beside them
    takes = [uids[0], uids[1], uids[3], uids[4]] if executor == "local" else [uids[1], uids[3]]
    try:
        s = run_batch(root, out, takes, FAST, BatchConfig(executor=executor, workers=2, retries=1))
    finally:
        if executor == "ray":
            import ray

            ray.shutdown()
    killer.join(timeout=1)
    assert killed and sorted(s["done"]) == sorted(takes) and not s["failed"]
    recs = _manifest(out)
    lost = [r for r in recs if r["take"] == uids[3]]
    assert [(r["attempt"], r["status"], r.get("reason")) for r in lost] == [
        (1, "failed", "WorkerLost"),
        (2, "done", None),
    ]
    assert [r["final"] for r in lost] == [False, True]  # the driver marks which failures it retries
    if executor == "local":
        assert "SIGKILL" in lost[0]["error"] and lost[0]["pid"] == killed[0]
    full = [r for r in recs if r["take"] == uids[1]]
    assert [(r["attempt"], r.get("reason")) for r in full] == [(1, "OSError"), (2, None)]
    assert "No space left on device" in full[0]["error"]
    assert [r["attempt"] for r in recs if r["take"] in (uids[0], uids[4])] == ([1, 1] if executor == "local" else [])
    assert not list(out.glob(".*.tmp")) and not list((out / ".running").glob("*"))
    for uid in takes:
        assert read_result(out / f"{uid}.h5").attrs["status"] == "ok"
    rep = json.loads((out / "batch_report.json").read_text())
    # overhead = wall time minus the stages' seconds: recorded for every done take and a part of its wall time
    # (its size is a machine's, not a rule's: a respawned worker pays its imports here)
    walls = [r["wall_s"] for r in recs if r["status"] == "done"]
    assert rep["overhead_seconds"]["n"] == len(takes) and 0 < rep["overhead_seconds"]["median"] < max(walls)


@pytest.mark.parametrize(
    ("kw", "refused"),
    [({"executor": "slurmm"}, "executor must be one of local, ray, slurm; got 'slurmm'"),
     ({"workers": 0}, r"BatchConfig\.workers must be >= 1; got 0"),
     ({"takes_per_task": 0}, r"BatchConfig\.takes_per_task must be >= 1; got 0"),
     ({"retries": -1}, r"BatchConfig\.retries must be >= 0; got -1"),
     ({"gpus_per_task": -0.5}, r"BatchConfig\.gpus_per_task must be >= 0; got -0\.5")],
)  # fmt: skip
def test_a_batch_config_that_cannot_run_is_refused_when_made(kw, refused):
    # before, only the executor was checked, and only once run_batch started
    with pytest.raises(ValueError, match=refused):
        BatchConfig(**kw)


def test_the_signal_is_named_when_the_pool_thread_reaped_the_worker_first():
    """The pool's own thread and the driver both wait for a broken worker; the one that loses sees no
    status for a moment (ECHILD) and must wait for it rather than report an unknown end."""

    class ReapedElsewhere:
        pid = 4242

        def __init__(self):
            self.reads = 0

        def join(self, timeout=None):
            pass

        @property
        def exitcode(self):
            self.reads += 1
            return None if self.reads < 5 else -signal.SIGKILL

    assert _exit_reason([ReapedElsewhere()]) == "worker process 4242 was killed by SIGKILL"


def test_killed_run_resumes_without_recomputing(six_takes, tmp_path):
    root, uids = six_takes
    out = tmp_path / "out"
    takes = uids[:4]  # three good takes and the bad one, from a --takes file
    (tmp_path / "takes.txt").write_text("\n".join(takes) + "\n")
    cmd = [sys.executable, "-m", "motionkit.cli", "batch", "--root", str(root), "--out", str(out), "--takes",
           str(tmp_path / "takes.txt"), "--executor", "local", "--workers", "1", "--fit-iters", "10,20,10",
           "--no-refine-cameras"]  # fmt: skip
    env = dict(os.environ)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline:
        if (out / "manifest.jsonl").is_file() and any(r["status"] == "done" for r in _manifest(out)):
            break
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = {r["take"] for r in _manifest(out) if r["status"] == "done"}
    assert first
    mtimes = {u: (out / f"{u}.h5").stat().st_mtime_ns for u in first}
    for p in out.glob("*.h5"):
        read_result(p)  # every result file that exists is complete
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 1 and "failed 1" in r.stdout
    recs = _manifest(out)
    assert {x["take"] for x in recs if x["status"] == "skipped"} >= first
    assert {u: (out / f"{u}.h5").stat().st_mtime_ns for u in first} == mtimes
    assert {x["take"] for x in recs if x["status"] in ("done", "skipped")} == set(takes) - {uids[2]}


def test_missing_dependency_message(monkeypatch, six_takes, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails as if it were not installed
    root, uids = six_takes
    with pytest.raises(RuntimeError, match=r"pip install 'motionkit\[dist\]'"):
        run_batch(root, tmp_path, [uids[0]], FAST, BatchConfig(executor="ray"))


def test_takes_per_task_fits_several_takes_in_one_batch(six_takes, tmp_path):
    """--takes-per-task 2: two tasks of two takes, each fitted in one batch; the bad take is recorded
    as failed in its group and the others match a one-take-per-task run."""
    root, uids = six_takes
    takes = uids[:4]
    single = run_batch(root, tmp_path / "single", takes, FAST, BatchConfig(executor="local", workers=2))
    grouped = run_batch(root, tmp_path / "grouped", takes, FAST,
                        BatchConfig(executor="local", workers=2, takes_per_task=2))  # fmt: skip
    _check_summary(grouped, takes, uids[2])
    recs = [r for r in _manifest(tmp_path / "grouped") if r["status"] in ("done", "failed")]
    assert sorted(len(r["group"]) for r in recs) == [2] * 4
    assert sorted(single["done"]) == sorted(grouped["done"])
    for uid in grouped["done"]:
        a = read_result(tmp_path / "grouped" / f"{uid}.h5")
        b = read_result(tmp_path / "single" / f"{uid}.h5")
        assert a.attrs["fit_device"] == "cpu" and a.attrs["fit_kernels"] == "fused"
        assert a.stages == b.stages
        np.testing.assert_array_equal(a["joints/coco17"], b["joints/coco17"])  # the same fit, bit for bit


def test_repeated_sacct_warnings_become_one_notice(caplog):
    log = logging.getLogger("submitit")
    quiet = SacctNoticeOnce()
    log.addFilter(quiet)
    try:
        with caplog.at_level(logging.WARNING, logger="submitit"):
            for call in range(1, 6):  # what submitit logs on every poll when sacct is unavailable
                log.warning(
                    f"Call #{call} - Bypassing sacct error Command 'sacct' returned 1, status may be inaccurate."
                )
            log.warning("Bypassing state error:\nsomething else")
    finally:
        log.removeFilter(quiet)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["sacct failed (no Slurm accounting?); job states come from submitit's files",
                        "Bypassing state error:\nsomething else"]  # fmt: skip
