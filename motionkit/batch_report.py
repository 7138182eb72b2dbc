"""What a batch did, from its manifest alone: the batch report that ``motionkit batch`` writes into its
output folder (``REPORT_JSON`` and the Markdown ``REPORT_MD``) and ``motionkit status OUT`` prints.

The driver appends one JSON line per attempt to ``<out>/manifest.jsonl``; this module reads it without a
lock (a line being written is skipped) and reports, for the latest attempt of every take: outcomes by
status and reason, seconds per take per stage (median and 95th percentile) and the scheduling overhead
(a take's wall time from dispatch to answer minus its stage times), the takes running now (the workers'
markers in ``<out>/.running/``), peak memory per worker, the
devices used, the coverage of takes and of video time per split and scenario (the SOMA paper's
Table 10 layout), and what the fits trust there: per body part the share of the valid frames'
landmarks that are trusted, and the share of valid frames each quality flag marks (docs/result_file.md,
"Which frames and joints to trust").
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from motionkit.common.files import write_json_atomic, write_text_atomic
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.eval.compare import scenario_of

REPORT_STEM, MANIFEST = "batch_report", "manifest.jsonl"
RUNNING_DIR = ".running"  # <out>/.running/<take>.json while a worker runs the take
REPORT_JSON, REPORT_MD = f"{REPORT_STEM}.json", f"{REPORT_STEM}.md"  # written into the batch's output folder


def read_manifest(out_dir: str | Path) -> list[dict]:
    """Every complete line of ``<out_dir>/manifest.jsonl`` (a line still being written is skipped)."""
    path = Path(out_dir) / MANIFEST
    if not path.is_file():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def read_running(out_dir: str | Path) -> dict[str, dict]:
    """The takes a worker runs now: ``<out_dir>/.running/<take>.json`` (host, pid, attempt, since)."""
    running = {}
    for mark in sorted((Path(out_dir) / RUNNING_DIR).glob("*.json")):
        try:
            info = json.loads(mark.read_text())
        except (OSError, json.JSONDecodeError):  # removed or being written just now
            continue
        running[info.get("take", mark.stem)] = info
    return running


def _reason(rec: dict) -> str:
    if rec.get("status") != "failed":
        return rec.get("status", "unknown")
    return rec.get("reason") or (rec.get("error") or "unknown").split(":")[0][:60]


def batch_report(out_dir: str | Path, root: str | Path | None = None, expected: list[str] | None = None) -> dict:
    """The report of the batch writing into ``out_dir`` (see the module docstring). ``root``: the dataset,
    for splits and scenarios; ``expected``: the takes the batch was given (the others are ``pending``)."""
    records = read_manifest(out_dir)
    latest: dict[str, dict] = {}
    for rec in records:
        latest[rec["take"]] = rec
    outcomes: dict[str, dict[str, int]] = {}
    for rec in latest.values():
        by = outcomes.setdefault(rec.get("status", "unknown"), {})
        by[_reason(rec)] = by.get(_reason(rec), 0) + 1
    running = read_running(out_dir)
    if running:
        outcomes["running"] = {"running": len(running)}
    pending = [u for u in (expected or []) if u not in latest and u not in running]
    if pending:
        outcomes["pending"] = {"not started or running": len(pending)}
    done = [r for r in latest.values() if r.get("status") == "done"]
    stages: dict[str, list[float]] = {}
    for r in done:
        for name, sec in (r.get("stage_seconds") or {}).items():
            stages.setdefault(name, []).append(float(sec))
    stage_seconds = {name: {"median": float(np.median(v)), "p95": float(np.percentile(v, 95)), "n": len(v)}
                     for name, v in stages.items()}  # fmt: skip
    workers: dict[str, float] = {}
    for r in records:
        if r.get("peak_memory_mb") is not None:
            key = f"{r.get('host', '?')}:{r.get('pid', '?')}"
            workers[key] = max(workers.get(key, 0.0), float(r["peak_memory_mb"]))
    devices: dict[str, int] = {}
    for r in done:
        devices[str(r.get("device") or "unknown")] = devices.get(str(r.get("device") or "unknown"), 0) + 1
    coverage = _coverage(latest, root) if root is not None else {}
    trust = _trust(latest, root)
    return {
        "takes": len(set(latest) | set(expected or [])),
        "outcomes": outcomes,
        "stage_seconds": stage_seconds,
        "seconds_per_take": _quantiles([float(r.get("duration_s", 0.0)) for r in done]),
        "overhead_seconds": _quantiles(
            [
                float(r["wall_s"]) - sum((r.get("stage_seconds") or {}).values())
                for r in done
                if r.get("wall_s") is not None
            ]
        ),  # fmt: skip
        "running": running,
        "peak_memory_mb": {"per_worker": workers, "max": max(workers.values()) if workers else None},
        "devices": devices,
        "coverage": coverage,
        "trust": trust,
        "attempts": len(records),
    }


def _quantiles(v: list[float]) -> dict:
    return {"median": float(np.median(v)) if v else None, "p95": float(np.percentile(v, 95)) if v else None,
            "n": len(v)}  # fmt: skip


def _groups(latest: dict[str, dict], root: str | Path | None, keep) -> dict[str, list[tuple[dict, object]]]:
    """The latest records that ``keep(rec)`` accepts, with their take's ``TakeInfo`` (None without
    ``root`` or for a take the dataset lacks), grouped under ``all`` and, for takes of the dataset
    ``root``, under their split and ``split / scenario``; ``all`` first, then by name."""
    infos = {i.take_uid: i for i in EgoExoDataset(root).takes()} if root is not None else {}
    groups: dict[str, list[tuple[dict, object]]] = {}
    for uid, rec in latest.items():
        info = infos.get(uid)
        if not keep(rec):
            continue
        keys = ["all"] + ([info.split, f"{info.split} / {scenario_of(info.take_name)}"] if info else [])
        for key in keys:
            groups.setdefault(key, []).append((rec, info))
    return dict(sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0])))


def _coverage(latest: dict[str, dict], root: str | Path) -> dict:
    """Per split and scenario: the share of takes with any coverage and of the 30 fps video time, over the
    takes of the batch (a failed take covers nothing)."""
    out = {}
    for key, members in _groups(latest, root, _counts_for_coverage).items():
        if key == "all":  # the coverage table is per split and scenario
            continue
        c = np.array([float(r.get("coverage_video_time") or 0.0) if r.get("status") in ("done", "skipped") else 0.0
                      for r, _ in members])  # fmt: skip
        f = np.array([info.n_frames for _, info in members], dtype=float)
        out[key] = {"takes": float((c > 0).mean()), "video_time": float((c * f).sum() / f.sum()), "n_takes": len(c)}
    return out


def _counts_for_coverage(rec: dict) -> bool:
    """Whether a record counts in the coverage: all but a take skipped with no coverage on record."""
    return not (rec.get("status") == "skipped" and rec.get("coverage_video_time") is None)


def _trust(latest: dict[str, dict], root: str | Path | None) -> dict:
    """For all takes and, given the dataset ``root``, per split and scenario: the share of the valid
    frames' landmarks of each body part that the fits trust and the share of valid frames each flag
    marks, pooled over the takes that report them (each weighted by its valid samples), and the share
    of the camera-frames the fits were given a weighted observation in that they dropped whole (another
    person selected there, mostly: docs/pipeline.md, "Second pass"), pooled over the camera-frames."""

    def reports_trust(rec: dict) -> bool:
        return (
            rec.get("status") in ("done", "skipped")
            and bool(rec.get("valid_samples"))
            and bool(rec.get("trusted_share"))
        )

    out = {}
    for key, members in _groups(latest, root, reports_trust).items():
        recs = [r for r, _ in members]
        w = np.array([float(r["valid_samples"]) for r in recs])

        def pooled(values: list, w=w) -> float | None:
            ok = np.array([v is not None for v in values])
            return float(np.average(np.array(values)[ok].astype(float), weights=w[ok])) if ok.any() else None

        parts = sorted({p for r in recs for p in r["trusted_share"]})
        flags = sorted({f for r in recs for f in (r.get("flag_share") or {})})
        out[key] = {
            "n_takes": len(recs),
            "valid_samples": int(w.sum()),
            "trusted_share": {p: pooled([r["trusted_share"].get(p) for r in recs]) for p in parts},
            "flag_share": {f: pooled([(r.get("flag_share") or {}).get(f) for r in recs]) for f in flags},
            "views_dropped_share": _views_dropped_share(recs),
        }
    return out


def _views_dropped_share(recs: list[dict]) -> float | None:
    """Camera-frames dropped whole over those given a weighted observation (``views_weighted``; 0.12.0's
    manifests have ``views_selected``, every camera-frame with a selection), summed over the records
    that give both."""
    pairs = [(r["views_dropped"], r.get("views_weighted") or r.get("views_selected")) for r in recs]
    pairs = [(d, n) for d, n in pairs if d is not None and n]
    return sum(d for d, _ in pairs) / sum(n for _, n in pairs) if pairs else None


def report_markdown(rep: dict) -> str:
    """The Markdown report (``REPORT_MD``): one table per topic."""
    lines = ["# Batch report", "", f"{rep['takes']} takes, {rep['attempts']} attempts.", "", "## Outcomes", "",
             "| status | reason | takes |", "|---|---|---:|"]  # fmt: skip
    for status, by in rep["outcomes"].items():
        for reason, n in sorted(by.items(), key=lambda x: -x[1]):
            lines.append(f"| {status} | {reason} | {n} |")
    lines += ["", "## Seconds per take, per stage", "", "| stage | median | p95 | takes |", "|---|---:|---:|---:|"]
    for name, q in rep["stage_seconds"].items():
        lines.append(f"| {name} | {q['median']:.2f} | {q['p95']:.2f} | {q['n']} |")
    q = rep["seconds_per_take"]
    if q["n"]:
        lines.append(f"| whole take | {q['median']:.2f} | {q['p95']:.2f} | {q['n']} |")
    q = rep.get("overhead_seconds") or {}
    if q.get("n"):
        lines.append(f"| overhead (wall time minus stages) | {q['median']:.2f} | {q['p95']:.2f} | {q['n']} |")
    if rep.get("running"):
        lines += ["", "## Running now", "", "| take | host | pid | attempt | since |", "|---|---|---:|---:|---|"]
        lines += [f"| {uid} | {r.get('host')} | {r.get('pid')} | {r.get('attempt')} | {r.get('since')} |"
                  for uid, r in rep["running"].items()]  # fmt: skip
    lines += ["", "## Peak memory per worker", "", "| worker | MB |", "|---|---:|"]
    for w, mb in rep["peak_memory_mb"]["per_worker"].items():
        lines.append(f"| {w} | {mb:.0f} |")
    lines += ["", "## Devices", "", "| device | takes |", "|---|---:|"]
    lines += [f"| {d} | {n} |" for d, n in rep["devices"].items()]
    if rep["coverage"]:
        lines += ["", "## Coverage (the SOMA paper's Table 10 layout)", "",
                  "| split / scenario | takes | video time | takes in the batch |", "|---|---:|---:|---:|"]  # fmt: skip
        for key, c in rep["coverage"].items():
            lines.append(f"| {key} | {100 * c['takes']:.1f} % | {100 * c['video_time']:.1f} % | {c['n_takes']} |")
    if rep.get("trust"):
        parts = ("torso", "arms", "legs", "face")
        lines += ["", "## What the fits trust (valid frames)", "",
                  "Landmarks trusted per body part; frames marked by any quality flag (but STATIC) and by "
                  "OCCLUDED (docs/result_file.md, \"Which frames and joints to trust\"); views given weight that "
                  "the fits dropped whole (mostly another person selected: docs/pipeline.md, \"Second pass\").", "",
                  "| split / scenario | " + " | ".join(parts)
                  + " | flagged | OCCLUDED | views dropped | valid samples | takes |",
                  "|---|" + "---:|" * (len(parts) + 5)]  # fmt: skip

        def pct(x) -> str:
            return "n/a" if x is None else f"{100 * x:.1f} %"

        for key, t in rep["trust"].items():
            cells = [pct(t["trusted_share"].get(p)) for p in parts]
            cells += [pct(t["flag_share"].get("any")), pct(t["flag_share"].get("OCCLUDED"))]
            cells += [pct(t.get("views_dropped_share"))]
            lines.append(f"| {key} | " + " | ".join(cells) + f" | {t['valid_samples']} | {t['n_takes']} |")
    return "\n".join(lines) + "\n"


def write_batch_report(out_dir: str | Path, root: str | Path | None = None,
                       expected: list[str] | None = None) -> dict:  # fmt: skip
    """Write ``REPORT_JSON`` and ``REPORT_MD`` into ``out_dir`` (atomically); returns the report."""
    rep = batch_report(out_dir, root, expected)
    write_json_atomic(Path(out_dir) / REPORT_JSON, rep, indent=1)
    write_text_atomic(Path(out_dir) / REPORT_MD, report_markdown(rep))
    return rep
