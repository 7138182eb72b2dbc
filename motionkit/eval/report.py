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
