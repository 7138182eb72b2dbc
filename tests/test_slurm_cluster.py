"""motionkit batch on a real Slurm cluster (submitit job arrays). Needs a running cluster, e.g. the one-node
cluster of ``benchmarks/slurm_local.sh start`` (root, Debian's slurm-wlm and munge); skipped elsewhere."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.store import read_result
from motionkit.distributed import BatchConfig, run_batch
from motionkit.pipeline import PipelineConfig
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset


def _cluster_up() -> bool:
    if shutil.which("sinfo") is None:
        return False
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and any(s in out.stdout for s in ("idle", "mix", "alloc"))


pytestmark = pytest.mark.skipif(not _cluster_up(), reason="no Slurm cluster (benchmarks/slurm_local.sh start)")


def test_a_job_array_fits_every_take_on_the_cluster(tmp_path):
    pytest.importorskip("submitit")
    root = tmp_path / "ds"
    write_synthetic_dataset(root, SynthConfig(takes=3, seed=8, duration=1.5, bystanders=1))
    uids = [t.take_uid for t in EgoExoDataset(root).takes()]
    out = tmp_path / "out"
    bc = BatchConfig(executor="slurm", workers=2, slurm_folder=str(tmp_path / "slurm"), slurm_time_min=20)
    summary = run_batch(root, out, uids, PipelineConfig(fit_iters=(10, 20, 10)), bc)
    assert sorted(summary["done"]) == sorted(uids) and not summary["failed"]
    recs = [json.loads(ln) for ln in (out / "manifest.jsonl").read_text().splitlines()]
    assert {r["take"] for r in recs if r["status"] == "done"} == set(uids)
    for u in uids:
        assert read_result(out / f"{u}.h5").attrs["status"] == "ok"
    assert len(list((tmp_path / "slurm").rglob("*_log.out"))) >= 3  # one Slurm array task per take, with its log
