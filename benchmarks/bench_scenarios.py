"""Accuracy and quality control per scenario (``motionkit synth --scenario``), on held-out seeds.

For each scenario: ``--takes`` takes of ``--duration`` s (splits val, train, train, ...) with the
``--preset`` errors, fitted on the CPU; then, as the users' commands would give them:

* PA-MPJPE against ``annotation3D`` on the val takes, uncorrected / corrected with offsets from the
  train takes (``motionkit eval``), on the frames the fit calls valid;
* the fit against the true landmarks (PA-MPJPE, all takes), coverage of the 30 fps video time, and the
  quality-control shares of ``motionkit synth-report`` pooled over the takes: false trust, missed
  failures, coverage of the fittable frames, joint false trust, joint missed failures, joint coverage;
* valid frames with fewer than two fittable views more than 100 mm off (a count over the takes), and
  how far the fitted body sits from the truth as a whole (world offset, mean over the takes);
* the realised difficulty: joints seen by fewer than two cameras, frames with fewer than two fittable
  views;
* seconds of the whole run (load .. evaluate) per minute of take;
* per body part (torso, arms, legs, face), joint false trust and joint coverage.

Prints two Markdown tables. ``DIR/<scenario>/`` keeps each dataset and its fits; a scenario whose fits are
there already is only scored again (``--refit`` fits again).

Usage: ``python benchmarks/bench_scenarios.py DIR [--seed 31] [--takes 3] [--duration 20] [--scenarios a,b]
[--set LEAF=VALUE ...] [--world KNOB=VALUE ...]``; ``--set body_fit.w_bones=1`` measures an opt-in, and
``--world kp_noise_frac=0.005`` a world that differs from the preset (a ``SynthConfig`` knob: here a detector
twice as precise). A DIR of its own keeps the default's fits: a scenario fitted with another config or
written with other knobs is written and fitted again.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import time
from dataclasses import fields
from pathlib import Path

import numpy as np


def fit_synthetic(folder: Path, cfg, refit: bool = False, pipeline=None, world: dict | None = None) -> dict:
    """Write the synthetic dataset of ``cfg`` (a ``SynthConfig``) to ``folder`` and fit every take on the
    CPU into ``folder/fits`` with ``pipeline`` (a ``PipelineConfig``; default: the defaults on the CPU);
    returns (and keeps in ``folder/timing.json``, reused unless ``refit``, another config or other
    ``world`` knobs, the ones ``cfg`` sets beyond its preset) the fit's wall time, the minutes of take and
    the number of takes. ``bench_presets.py`` fits with it too."""
    from motionkit import kernels
    from motionkit.data.egoexo4d import EgoExoDataset
    from motionkit.pipeline import PipelineConfig, run_take
    from motionkit.synthetic.writer import write_synthetic_dataset

    pipeline = pipeline or PipelineConfig(device="cpu")
    config = json.loads(json.dumps(pipeline.result_dict()))  # what the fits' reuse hash covers
    world = world or {}
    timing = folder / "timing.json"
    if timing.is_file() and not refit:
        rec = json.loads(timing.read_text())
        # records without a config are of the defaults, and those without world knobs of the preset's world
        if rec.get("config", config) == config and rec.get("world", {}) == world:
            return rec
    uids = write_synthetic_dataset(folder, cfg)
    shutil.rmtree(folder / "fits", ignore_errors=True)  # results of the same config would be reused, not timed
    kernels.ensure_loaded(cuda=False)  # a fresh MOTIONKIT_HOME builds the CPU operators once: not the fit's time
    t0 = time.perf_counter()
    for uid in uids:
        run_take(folder, uid, folder / "fits", pipeline, progress=False, plot=False)
    minutes = sum(t.duration_s for t in EgoExoDataset(folder).takes()) / 60.0
    rec = {"fit_wall_s": time.perf_counter() - t0, "take_minutes": minutes, "takes": len(uids), "config": config,
           "world": world}  # fmt: skip
    timing.write_text(json.dumps(rec))
    return rec


def fit_scenario(folder: Path, name: str, args) -> dict:
    from motionkit.synthetic.writer import SynthConfig

    world = world_knobs(args.world)
    try:
        cfg = SynthConfig(takes=args.takes, seed=args.seed, duration=args.duration, preset=args.preset,
                          scenario=name, **world)  # fmt: skip
    except ValueError as exc:
        raise SystemExit(f"--world: {exc}") from None
    return fit_synthetic(folder, cfg, args.refit, pipeline_config(args.set), world)


def name_value(item: str, option: str, example: str) -> tuple[str, object]:
    """``(name, value)`` of an ``option`` item ``NAME=VALUE``, the value read as JSON where it parses, else
    as text (``motions=basic``); a ``SystemExit`` for an item without ``=``, showing ``example``."""
    name, sep, text = item.partition("=")
    if not sep:
        raise SystemExit(f"{option} {item!r}: expected {example}")
    try:
        return name, json.loads(text)
    except json.JSONDecodeError:
        return name, text


def world_knobs(settings: list[str]) -> dict:
    """``{knob: value}`` from ``KNOB=VALUE`` items (``name_value``): the ``SynthConfig`` knobs that the
    world of the scenarios takes beyond its preset, ``["kp_noise_frac=0.005"]``. A ``SystemExit`` names an
    item that is not of that form or a knob that is not one of the world's."""
    from motionkit.synthetic.writer import SynthConfig

    fixed = {"takes", "seed", "duration", "preset", "scenario"}  # the script's own options
    knobs = {f.name for f in fields(SynthConfig)} - fixed
    out = {}
    for item in settings:
        name, value = name_value(item, "--world", "KNOB=VALUE, e.g. kp_noise_frac=0.005")
        if name not in knobs:
            raise SystemExit(f"--world {item!r}: {name!r} is not a knob of the synthetic world "
                             "(motionkit.synthetic.writer.SynthConfig)")  # fmt: skip
        out[name] = value
    return out


def pipeline_config(settings: list[str]):
    """The CPU fit's ``PipelineConfig`` with each ``LEAF=VALUE`` of ``settings`` set (``name_value``):
    ``["body_fit.w_bones=1", "trust.limb_trust_views=3"]``."""
    from motionkit.pipeline.config import PipelineConfig, config_leaves, with_leaf

    cfg = PipelineConfig(device="cpu")
    for item in settings:
        path, value = name_value(item, "--set", "LEAF=VALUE, e.g. body_fit.w_bones=1")
        default = config_leaves(cfg).get(path)
        if isinstance(default, float) and type(value) is int:
            value = float(value)  # as the CLI's option gives it: the same config hash
        try:
            cfg = with_leaf(cfg, path, tuple(value) if isinstance(value, list) else value)
        except ValueError as exc:  # no such leaf, or a value its config refuses
            raise SystemExit(f"--set {item!r}: {exc}") from None
    return cfg


def score_scenario(folder: Path) -> dict:
    from motionkit.eval.run import evaluate
    from motionkit.eval.synthetic_report import dataset_difficulty

    rep = dataset_difficulty(folder, folder / "fits")
    ev, _ = evaluate(folder, folder / "fits", split="val", offsets_from="train")
    pa = ev["pa_mpjpe"]
    pooled = {k: v["share"] for k, v in rep["pooled"].items()}
    return {
        "pa_uncorrected": pa["uncorrected"]["take_mean"],
        "pa_corrected": (pa.get("corrected") or {}).get("take_mean"),
        "fit_vs_truth": float(np.mean([t["fit_pa_mpjpe_mm"] for t in rep["takes"]])),
        "valid_unfittable_failures": sum(t.get("valid_unfittable_failures", 0) for t in rep["takes"]),
        "world_offset_mm": float(np.mean([t["fit_world_offset_mm"] for t in rep["takes"]])),
        **pooled,
    }


def main() -> None:
    from motionkit.conventions import COCO17_PARTS
    from motionkit.synthetic.scenarios import SCENARIO_NAMES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--takes", type=int, default=3)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--preset", default="realistic")
    ap.add_argument("--scenarios", default=",".join(SCENARIO_NAMES))
    ap.add_argument("--refit", action="store_true")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="LEAF=VALUE",
        help="Fit with this config leaf set (repeatable), e.g. body_fit.w_bones=1.",
    )
    ap.add_argument(
        "--world",
        action="append",
        default=[],
        metavar="KNOB=VALUE",
        help="Write the scenarios with this synthetic-world knob set (repeatable), e.g. kp_noise_frac=0.005.",
    )
    args = ap.parse_args()
    os.environ.setdefault("MOTIONKIT_HOME", str(args.dir / "home"))
    rows = []
    for name in args.scenarios.split(","):
        folder = args.dir / name
        t = fit_scenario(folder, name, args)
        s = score_scenario(folder)
        rows.append((name, t, s))
    changed = "".join(f"; {item}" for item in [*args.set, *args.world])  # the opt-ins and world knobs measured
    print(f"# scenarios ({args.preset}, seed {args.seed}, {args.takes} x {args.duration:g} s{changed}; "
          f"{platform.machine()}, {os.cpu_count()} cores, CPU)")  # fmt: skip
    print("| scenario | PA-MPJPE unc / cor | fit vs truth | coverage (video) | false trust | missed failures | "
          "coverage fittable | valid < 2 fittable, > 100 mm | joint false trust | joint missed | "
          "joint coverage (of detected) | "
          "world offset | joints < 2 views | frames < 2 fittable | s / min of take |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    for name, t, s in rows:
        cor = "n/a" if s["pa_corrected"] is None else f"{s['pa_corrected']:.1f}"
        minutes = t.get("take_minutes") or t["takes"] * args.duration / 60.0
        print(f"| {name} | {s['pa_uncorrected']:.1f} / {cor} mm | {s['fit_vs_truth']:.1f} mm | "
              f"{pct(s.get('coverage_video_time'))} | {pct(s.get('false_trust'))} | {pct(s.get('missed_failures'))} | "
              f"{pct(s.get('coverage_fittable'))} | {s['valid_unfittable_failures']} | "
              f"{pct(s.get('joint_false_trust'))} | {pct(s.get('joint_missed_failures'))} | "
              f"{pct(s.get('joint_coverage'))} ({pct(s.get('joint_coverage_detected'))}) | "
              f"{s['world_offset_mm']:.0f} mm | {pct(s.get('occluded_share'))} | "
              f"{pct(s.get('unfittable_share'))} | {t['fit_wall_s'] / minutes:.0f} |")  # fmt: skip

    parts = tuple(COCO17_PARTS)  # synth-report's body parts
    print("\n# per body part: joint false trust / joint coverage (%)")
    print("| scenario | " + " | ".join(parts) + " |")
    print("|---|" + "---|" * len(parts))
    for name, _, s in rows:
        cells = [f"{pct(s.get(f'joint_false_trust:{p}'), 1, '')} / {pct(s.get(f'joint_coverage:{p}'), 0, '')}"
                 for p in parts]  # fmt: skip
        print(f"| {name} | " + " | ".join(cells) + " |")


def pct(x: float | None, digits: int = 1, sign: str = " %") -> str:
    """A share as a percentage (``digits`` decimals, then ``sign``), ``n/a`` for None."""
    return "n/a" if x is None else f"{100 * x:.{digits}f}{sign}"


if __name__ == "__main__":
    main()
