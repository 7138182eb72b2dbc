"""Dataset commands: ``synth`` (synthetic takes), ``synth-report`` (their realised difficulty), ``takes``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from motionkit.cli.common import clean_errors
from motionkit.common.files import read_json
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.eval.synthetic_report import dataset_difficulty, format_difficulty
from motionkit.synthetic.demo import ensure_demo_dataset
from motionkit.synthetic.scenarios import SCENARIO_NAMES
from motionkit.synthetic.writer import KNOB_RANGES, SynthConfig, write_synthetic_dataset


@click.command()
@click.option(
    "--root",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Output dataset folder.",
)
@click.option(
    "--takes",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Number of takes.",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Random seed (output is deterministic).",
)
@click.option(
    "--duration",
    default=20.0,
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="Seconds per take.",
)
@click.option(
    "--preset",
    default="realistic",
    show_default=True,
    type=click.Choice(["clean", "realistic", "hard"]),
    help="Difficulty: realistic detector noise, landmarks, calibration and Aria errors (docs/synthetic.md); "
    "clean = the fitter's own body and joint centres with 3 px noise; hard = everything turned up.",
)
@click.option(
    "--scenario",
    default="generic",
    show_default=True,
    type=click.Choice(SCENARIO_NAMES),
    help="Scene modelled on an Ego-Exo4D scenario (cameras, furniture that hides the wearer, other people, "
    "activities); combines with --preset (docs/synthetic.md).",
)
@click.option(
    "--bystanders",
    default=None,
    type=click.IntRange(min=KNOB_RANGES["bystanders"][0]),
    help="People besides the wearer [scenario, else preset: 2, hard 3].",
)
@click.option(
    "--cameras",
    default=None,
    type=click.IntRange(min=KNOB_RANGES["cameras"][0]),
    help="Static exo GoPros [scenario, else preset: 4, hard 3].",
)
@click.option("--vertical-camera", is_flag=True, help="Mount one camera in portrait (2160x3840).")
@click.option(
    "--nan-timesync/--no-nan-timesync",
    default=None,
    help="Blank some Aria timestamps in timesync.csv [preset].",
)
@click.option(
    "--body-model",
    default=None,
    help="SMPL-X file or folder for the bodies (default: synthetic).",
)
@click.option(
    "--annotation-offset",
    default=None,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSON (17, 3) per-joint offsets (m, in each joint's parent frame) added to annotation3D.",
)
@click.option(
    "--videos",
    is_flag=True,
    help="Also render frame_aligned_videos/<cam>.mp4 (and the downscaled/448 copies): body-part "
    "silhouettes, every frame stamped with its take frame index (docs/synthetic.md).",
)
@click.option(
    "--video-scale",
    default=0.25,
    show_default=True,
    type=click.FloatRange(*KNOB_RANGES["video_scale"]),
    help="Size of the full videos relative to the calibration resolution (1.0 = 4K, as the release).",
)
@click.option(
    "--releases",
    default="",
    help="Comma-separated other methods' releases to write from the truth, each with a known perturbation, under "
    "<root>/releases/<format>/: ee4d-motion, egoexo4d-hm, coco17-json, smplx-npz (docs/synthetic.md).",
)
@clean_errors(ValueError)
def synth(
    root,
    releases, takes, seed, duration, preset, scenario, bystanders, cameras, vertical_camera, nan_timesync, body_model,
    annotation_offset, videos, video_scale,
) -> None:  # fmt: skip
    """Write synthetic takes in the exact Ego-Exo4D layout, with ground truth in gt/ and simulated
    detector output in observations/ (the observation cache format)."""
    cfg = SynthConfig(
        takes=takes,
        seed=seed,
        duration=duration,
        preset=preset,
        scenario=scenario,
        bystanders=bystanders,
        cameras=cameras,
        vertical_camera=vertical_camera,
        nan_timesync=nan_timesync,
        body_model=body_model,
        annotation_offset=None if annotation_offset is None else read_json(annotation_offset),
        videos=videos,
        video_scale=video_scale,
        releases=tuple(r.strip() for r in releases.split(",") if r.strip()),
    )
    uids = write_synthetic_dataset(root, cfg, progress=True)
    click.echo(f"wrote {len(uids)} synthetic take(s) to {root} (preset {preset}, scenario {scenario})")
    for u in uids:
        click.echo(f"  {u}")


@click.command("synth-report")
@click.argument("root", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--fits",
    default=None,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Result files of these takes: score the wearer's selected keypoints, raw triangulation and the fit.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@clean_errors()
def synth_report(root, fits, as_json) -> None:
    """The realised difficulty of a synthetic dataset: 2D error of the wearer's keypoints, its
    temporal correlation, swap/outlier/miss rates, landmark offsets, calibration error; with --fits,
    the accuracy of raw triangulation next to the fit's."""
    rep = dataset_difficulty(root, fits)
    click.echo(json.dumps(rep, indent=1) if as_json else format_difficulty(rep))


@click.command()
@click.option(
    "--root",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Dataset root (default: the embedded demo dataset).",
)
@click.option("--split", default=None, help="Only this split (train, val, test).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@clean_errors()
def takes(root, split, as_json) -> None:
    """List the takes of a dataset."""
    ds = EgoExoDataset(root if root is not None else ensure_demo_dataset())
    rows = [
        {
            "take_uid": t.take_uid,
            "take_name": t.take_name,
            "split": t.split,
            "frames": t.n_frames,
            "task": t.task_name,
        }
        for t in ds.takes(split)
    ]
    if as_json:
        click.echo(json.dumps(rows))
        return
    if not rows:
        raise click.ClickException(f"{ds.root}: no takes{f' in split {split!r}' if split else ''} "
                                   f"(splits here: {', '.join(ds.split_names()) or 'none'})")  # fmt: skip
    for r in rows:
        click.echo(f"{r['take_uid']}  {r['take_name']:<28} {r['split']!s:<6} {r['frames']:>7} frames  {r['task']}")
