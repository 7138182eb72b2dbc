"""Accuracy on the synthetic presets: the README's headline table (``motionkit synth`` + ``fit`` per take
+ ``synth-report`` + ``eval``), on the demo dataset and held-out seeds.

For each dataset: raw triangulation and the fit against the true landmarks (PA-MPJPE, mean over the
takes), PA-MPJPE against ``annotation3D`` on the val takes, uncorrected / corrected with offsets from the
train takes, MPJPE (world, uncorrected), coverage of the val takes' video time, and the share of the
camera-frames where the detector found the wearer whose selection is the wearer (pooled).

``DIR/<dataset>/`` keeps each dataset and its fits; a dataset whose fits are there already is only
scored again (``--refit`` fits again).

Usage: ``python benchmarks/bench_presets.py DIR [--datasets demo,seed55,seed31,hard77] [--refit]``.
"""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path

import numpy as np
from bench_scenarios import fit_synthetic  # this folder is on the path when a script here runs

DATASETS = {  # name: (seed, takes, preset)
    "demo": (2026, 3, "realistic"),
    "seed55": (55, 6, "realistic"),
    "seed31": (31, 3, "realistic"),
    "hard77": (77, 4, "hard"),
}


def fit_dataset(folder: Path, name: str, refit: bool) -> dict:
    from motionkit.synthetic.writer import SynthConfig

    seed, takes, preset = DATASETS[name]
    return fit_synthetic(folder, SynthConfig(takes=takes, seed=seed, duration=20.0, preset=preset), refit)


def score_dataset(folder: Path) -> dict:
    from motionkit.eval.run import evaluate
    from motionkit.eval.synthetic_report import dataset_difficulty

    rep = dataset_difficulty(folder, folder / "fits")
    ev, _ = evaluate(folder, folder / "fits", split="val", offsets_from="train")

    def mean_over_takes(key):
        return float(np.mean([t[key] for t in rep["takes"] if t.get(key) is not None]))

    return {
        "takes": len(rep["takes"]),
        "val_takes": ev["n_takes"],
        "triangulation": mean_over_takes("triangulation_pa_mpjpe_mm"),
        "fit": mean_over_takes("fit_pa_mpjpe_mm"),
        "unc": ev["pa_mpjpe"]["uncorrected"]["take_mean"],
        "cor": (ev["pa_mpjpe"].get("corrected") or {}).get("take_mean"),
        "mpjpe": ev["mpjpe_world"]["uncorrected"]["take_mean"],
        "coverage": ev["coverage"]["video_time"],
        "selected": rep["pooled"]["wearer_selected_where_detected"]["share"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--refit", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("MOTIONKIT_HOME", str(args.dir / "home"))
    print(f"# synthetic presets, 20-s takes ({platform.machine()}, {os.cpu_count()} cores, CPU)")
    print("| dataset | takes (val) | raw triangulation / fit vs true landmarks (PA) | PA-MPJPE unc / cor | MPJPE | "
          "coverage (val) | wearer selected where detected |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name in args.datasets.split(","):
        if name not in DATASETS:
            raise SystemExit(f"unknown dataset {name!r}; datasets: {', '.join(DATASETS)}")
        folder = args.dir / name
        fit_dataset(folder, name, args.refit)
        s = score_dataset(folder)
        seed, _, preset = DATASETS[name]
        cor = "n/a" if s["cor"] is None else f"{s['cor']:.1f}"
        print(f"| {name} ({preset}, seed {seed}) | {s['takes']} ({s['val_takes']}) | {s['triangulation']:.1f} / "
              f"{s['fit']:.1f} mm | {s['unc']:.1f} / {cor} mm | {s['mpjpe']:.1f} mm | {100 * s['coverage']:.0f} % | "
              f"{100 * s['selected']:.1f} % |")  # fmt: skip


if __name__ == "__main__":
    main()
