"""eval.json, eval.md and the evaluation plots (docs/eval.md)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from motionkit.common.files import write_json_atomic, write_text_atomic
from motionkit.viz import save_figure


def _fmt(x, nd=1):
    return "n/a" if x is None else f"{x:.{nd}f}"


def _row(label: str, metric: dict, stat: str) -> str:
    return f"| {label} | {_fmt(metric['uncorrected'][stat])} | {_fmt(metric['corrected'][stat])} |"


def markdown(report: dict) -> str:
    pa = report["pa_mpjpe"]
    cov = report["coverage"]
    off = report["offsets"]
    off_txt = f"{off['n_takes']} {off['from_split']} takes" if off["n_takes"] else "no takes (not applied)"
    mw = report["mpjpe_world"]
    lines = [
        f"# Refitting quality: {report['method']}",
        "",
        "PA-MPJPE (mm) against the manual Ego-Exo4D body annotations, take-averaged (mean of per-take means);",
        f"'corrected' adds the per-joint convention offset fitted on {off_txt} in each joint's {off['frame']} frame.",
        "Coverage: share of the 30 fps video timeline with a valid fit.",
        "",
        "| split | takes scored | uncorrected | corrected | coverage (video time) |",
        "|---|---:|---:|---:|---:|",
        f"| {report['split']} | {report['n_takes_scored']} | {_fmt(pa['uncorrected']['take_mean'])} | "
        f"{_fmt(pa['corrected']['take_mean'])} | {_fmt(100 * cov['video_time'])} % |",
        "",
        "| statistic | uncorrected | corrected |",
        "|---|---:|---:|",
        _row("PA-MPJPE median over takes (mm)", pa, "take_median"),
        _row("PA-MPJPE frame-pooled (mm)", pa, "frame_pooled"),
        _row("MPJPE world, take-averaged (mm)", mw, "take_mean"),
        f"| MPJPE centroid, take-averaged (mm) | {_fmt(report['mpjpe_centroid']['uncorrected']['take_mean'])} | |",
        "",
        f"Frames scored: {report['n_frames_scored']}; skipped: {report['n_frames_skipped']}. "
        f"Segment coverage (3.2 s windows at 20 fps): native {_fmt(100 * (cov.get('segment_native') or 0))} %, "
        f"interpolated {_fmt(100 * (cov.get('segment_interp') or 0))} %. "
        f"Jitter {_fmt(report['temporal']['jitter_10m_per_s3'], 2)} (10 m/s^3), foot sliding (GT-free) "
        f"{_fmt(report['temporal']['foot_sliding_gt_free_mm'], 2)} mm.",
        "",
        "Reference (the SOMA paper, val): EE4D-Motion 44.2 / 40.3 mm, SOMA fits 42.6 / 36.7 mm; coverage 96.2 %.",
        "",
        "Body model of the fits: "
        + "; ".join(
            (
                "SYNTHETIC demo body (not SMPL-X)"
                if b.get("synthetic")
                else f"SMPL-X {b.get('file')} {b.get('sha256', '')[:12]}"
            )
            for b in report.get("body_models", [])
        ),
        "",
        "## Per joint (mean world error, mm)",
        "",
        "| joint | uncorrected | corrected |",
        "|---|---:|---:|",
    ]
    pj = report["per_joint"]
    for i, n in enumerate(pj["names"]):
        u = pj["uncorrected"][i] if pj["uncorrected"] else None
        c = pj["corrected"][i] if pj["corrected"] else None
        lines.append(f"| {n} | {_fmt(u)} | {_fmt(c)} |")
    return "\n".join(lines) + "\n"


def plots(report: dict, out_dir: Path) -> list[Path]:
    out = []
    pj = report["per_joint"]
    fig, ax = plt.subplots(figsize=(11, 4))
    x = np.arange(len(pj["names"]))
    if pj["uncorrected"]:
        ax.bar(x - 0.2, pj["uncorrected"], 0.4, label="uncorrected")
    if pj["corrected"]:
        ax.bar(x + 0.2, pj["corrected"], 0.4, label="corrected")
    ax.set_xticks(x, pj["names"], rotation=45, ha="right")
    ax.set_ylabel("mean world error (mm)")
    ax.set_title(f"per-joint error, {report['split']} ({report['n_takes_scored']} takes)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    out.append(save_figure(fig, out_dir / "eval_per_joint.png"))
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, label in (("pa_mpjpe", "uncorrected"), ("pa_mpjpe_corrected", "corrected")):
        vals = np.sort([r[key] for r in report["per_take"] if r[key] is not None])
        if len(vals):
            ax.step(vals, np.arange(1, len(vals) + 1) / len(vals), where="post", label=label)
    ax.set_xlabel("take PA-MPJPE (mm)")
    ax.set_ylabel("share of takes")
    ax.set_title("per-take error CDF")
    ax.grid(alpha=0.3)
    ax.legend()
    out.append(save_figure(fig, out_dir / "eval_take_cdf.png"))
    return out


def write_report(report: dict, out_dir: str | Path) -> dict[str, Path]:
    out_dir = Path(out_dir)
    write_json_atomic(out_dir / "eval.json", report, indent=1)
    write_text_atomic(out_dir / "eval.md", markdown(report))
    pngs = plots(report, out_dir)
    return {"json": out_dir / "eval.json", "md": out_dir / "eval.md", "png": pngs}


def compare_markdown(report: dict) -> str:
    """``eval.md`` of a comparison (``eval.compare``): the intersection, Table 9, Table 10 and the official
    protocol, one table each."""
    t9, t10, off = report["table9"], report["table10"], report["official"]
    names = list(report["methods"])
    lines = ["# Refits side by side", ""]
    for split, c in report["takes"].items():
        if split in ("unmatched", "unreadable"):
            continue
        per = ", ".join(f"{n} {c[n]}" for n in names)
        how = "scored on those" if report["protocol"]["intersect"] else "each scored on its own"
        lines.append(f"- {split}: {c['annotated']} annotated takes; {per}; in common: {c['intersection']} ({how}).")
    for n, files in report["takes"].get("unreadable", {}).items():
        if files:
            lines.append(f"- {n}: {len(files)} damaged file(s) left out: {', '.join(files)}.")
    scored = {s: min(report["methods"][n][s]["n_takes_scored"] for n in names) for s in t9["columns"]}
    lines += ["", "Takes that pass the per-frame filters (every method): "
              + ", ".join(f"{s} {n}" for s, n in scored.items()) + ".", ""]  # fmt: skip
    lines += ["## Table 9: PA-MPJPE (mm), take-averaged", "",
              "| method | " + " | ".join(f"{s} uncorrected | {s} corrected" for s in t9["columns"]) + " |",
              "|---|" + "---:|" * (2 * len(t9["columns"]))]  # fmt: skip
    for n, row in t9["rows"].items():
        lines.append(f"| {n} | " + " | ".join(f"{_fmt(row[s]['uncorrected'])} | {_fmt(row[s]['corrected'])}"
                                              for s in t9["columns"]) + " |")  # fmt: skip
    if "delta" in t9:
        d = t9["delta"]
        lines.append(f"| {d['of']} - {d['minus']} | " + " | ".join(
            f"{_fmt(d[s]['uncorrected'])} | {_fmt(d[s]['corrected'])}" for s in t9["columns"]) + " |")  # fmt: skip
    lines += ["", "Corrected: per-joint offsets estimated on each method's own train fits, in frames built from its "
              "own skeleton (the same rule for every method).", "", "## Table 10: coverage", "",
              "| split | method | native rate | takes | video time |", "|---|---|---:|---:|---:|"]  # fmt: skip
    for s, per in t10.items():
        for n, c in per.items():
            lines.append(f"| {s} | {n} | {_fmt(c['native_fps'], 0)} fps | {_fmt(100 * c['takes'])} % | "
                         f"{_fmt(100 * c['video_time'])} % |")  # fmt: skip
    lines += ["", "## Official Ego-Exo4D body-pose protocol (no alignment, world frame)", "",
              "| split | method | MPJPE (cm) | MPJVE (m/s) | joint observations | not predicted |",
              "|---|---|---:|---:|---:|---:|"]  # fmt: skip
    for n, per in off.items():
        for s, r in per.items():
            lines.append(f"| {s} | {n} | {_fmt(r['mpjpe_cm'], 2)} | {_fmt(r['mpjve'], 2)} | "
                         f"{r['n_joint_observations']} | {r['overall']['n_not_predicted']} |")  # fmt: skip
    lines += ["", f"Mapping to COCO-17: {report['protocol']['mapping']}.", ""]
    return "\n".join(lines)


def figure37(report: dict, path: Path) -> Path:
    """Share of segments with at least x of their 20 fps points covered, native and interpolated."""
    f37 = report["figure37"]
    x = 100 * np.asarray(f37["thresholds"])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, mode in zip(axes, ("native", "interpolated"), strict=True):
        for name in report["methods"]:
            y = f37[name][mode]
            if y and y[0] is not None:
                ax.plot(x, 100 * np.asarray(y, dtype=float), marker=".", label=name)
        ax.set_title(f"{mode} ({f37['segments']}, {f37['segment_fps']:g} fps)")
        ax.set_xlabel("frames covered in the segment (%, at least)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("segments (%)")
    axes[0].legend()
    return save_figure(fig, path)


def write_compare_report(report: dict, out_dir: str | Path) -> dict[str, Path]:
    """``eval.json``, ``eval.md`` and ``eval_figure37.png`` of a comparison, written atomically."""
    out_dir = Path(out_dir)
    write_json_atomic(out_dir / "eval.json", report, indent=1)
    write_text_atomic(out_dir / "eval.md", compare_markdown(report))
    return {
        "json": out_dir / "eval.json",
        "md": out_dir / "eval.md",
        "png": figure37(report, out_dir / "eval_figure37.png"),
    }
