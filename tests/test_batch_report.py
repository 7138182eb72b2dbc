"""The batch report from a hand-written manifest and running markers (no fitting)."""

import json

import pytest

from motionkit.batch_report import RUNNING_DIR, batch_report, report_markdown


def _write(out, records, running=()):
    (out / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + '{"take": "half-writ')
    (out / RUNNING_DIR).mkdir()
    for uid in running:
        (out / RUNNING_DIR / f"{uid}.json").write_text(json.dumps({"take": uid, "host": "n1", "pid": 7, "attempt": 1,
                                                                    "since": "2026-12-02T10:00:00"}))  # fmt: skip


def test_report_counts_outcomes_stages_overhead_running_and_pending(tmp_path):
    done = {"status": "done", "host": "n1", "pid": 1, "device": "cpu"}
    _write(tmp_path, [
        {"take": "a", "status": "failed", "reason": "WorkerLost", "error": "WorkerLost: killed", "attempt": 1},
        {"take": "a", **done, "attempt": 2, "stage_seconds": {"fit": 2.0, "write": 0.5}, "wall_s": 2.75,
         "duration_s": 2.6, "peak_memory_mb": 900.0},
        {"take": "b", **done, "attempt": 1, "stage_seconds": {"fit": 4.0, "write": 0.5}, "wall_s": 4.75,
         "duration_s": 4.6, "peak_memory_mb": 1000.0, "pid": 2},
        {"take": "c", "status": "failed", "reason": "DataError: x.csv", "error": "x.csv: truncated", "attempt": 1,
         "peak_memory_mb": 950.0, "host": "n1", "pid": 1},
    ], running=["d"])  # fmt: skip
    rep = batch_report(tmp_path, expected=["a", "b", "c", "d", "e"])
    assert rep["outcomes"] == {"done": {"done": 2}, "failed": {"DataError: x.csv": 1}, "running": {"running": 1},
                               "pending": {"not started or running": 1}}  # fmt: skip
    assert rep["attempts"] == 4 and rep["takes"] == 5
    assert rep["stage_seconds"]["fit"] == {"median": 3.0, "p95": pytest.approx(3.9), "n": 2}
    assert rep["overhead_seconds"]["median"] == pytest.approx(0.25)  # wall time minus the stages, per take
    assert rep["peak_memory_mb"] == {"per_worker": {"n1:1": 950.0, "n1:2": 1000.0}, "max": 1000.0}
    assert list(rep["running"]) == ["d"] and rep["devices"] == {"cpu": 2}
    md = report_markdown(rep)
    assert "| overhead (wall time minus stages) | 0.25 |" in md and "## Running now" in md and "| d | n1 | 7 |" in md


def test_trust_is_pooled_over_takes_by_their_valid_samples(tmp_path):
    """Two takes with 100 and 300 valid samples trusting 90 % and 50 % of their legs: 60 % pooled; a take
    without per-joint trust (an older fit) and a failed take do not count; the Markdown table shows it.
    Their fits dropped 10 of 400 and 5 of 1,100 weighted views whole: 1 % pooled (1.5 % averaged by take)."""
    done = {"status": "done", "host": "n1", "pid": 1, "stage_seconds": {"fit": 1.0}, "duration_s": 1.0}
    _write(tmp_path, [
        {"take": "a", **done, "valid_samples": 100, "trusted_share": {"torso": 1.0, "legs": 0.9},
         "flag_share": {"OCCLUDED": 0.2, "any": 0.4}, "views_weighted": 400, "views_dropped": 10},
        {"take": "b", **done, "valid_samples": 300, "trusted_share": {"torso": 1.0, "legs": 0.5},
         "flag_share": {"OCCLUDED": 0.0, "any": 0.0}, "views_selected": 1100, "views_dropped": 5},  # a 0.12.0 record
        {"take": "c", **done, "valid_samples": 50, "trusted_share": None, "flag_share": None},
        {"take": "d", "status": "failed", "reason": "DataError: x", "error": "x", "valid_samples": 10,
         "trusted_share": {"legs": 0.0}},
    ])  # fmt: skip
    t = batch_report(tmp_path)["trust"]
    assert list(t) == ["all"] and t["all"]["n_takes"] == 2 and t["all"]["valid_samples"] == 400
    assert t["all"]["trusted_share"] == {"legs": pytest.approx(0.6), "torso": pytest.approx(1.0)}
    assert t["all"]["flag_share"] == {"OCCLUDED": pytest.approx(0.05), "any": pytest.approx(0.1)}
    assert t["all"]["views_dropped_share"] == pytest.approx(15 / 1500)  # pooled over camera-frames, not takes
    md = report_markdown(batch_report(tmp_path))
    assert "| all | 100.0 % | n/a | 60.0 % | n/a | 10.0 % | 5.0 % | 1.0 % | 400 | 2 |" in md
