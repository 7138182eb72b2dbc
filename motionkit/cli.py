"""``motionkit`` command line. Thin: every command calls one library function."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from motionkit import __version__
from motionkit.data.errors import DataError


def _fail(exc: Exception) -> None:
    raise click.ClickException(str(exc)) from exc


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="motionkit")
def main() -> None:
    """motionkit: multi-view SMPL-X motion refitting for Ego-Exo4D-style takes, and motion features.

    \b
    Quick start:
      motionkit fit --take demo --fps 20     # run on the embedded synthetic demo take
      motionkit synth --root data/synth       # write synthetic takes in the Ego-Exo4D layout
      motionkit takes --root /data/egoexo4d   # list the takes of a dataset

    Data lives under $MOTIONKIT_HOME (default ~/.cache/motionkit). The body model is the
    SMPL-X file given by --body-model or $MOTIONKIT_BODY_MODEL; without one, a procedurally
    generated synthetic body is used and every output says so.
    """


@main.command()
@click.option("--root", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output dataset folder.")
@click.option("--takes", default=1, show_default=True, type=click.IntRange(min=1), help="Number of takes.")
@click.option("--seed", default=0, show_default=True, type=int, help="Random seed (output is deterministic).")
@click.option("--duration", default=20.0, show_default=True, type=click.FloatRange(min=0.1), help="Seconds per take.")
@click.option(
    "--bystanders", default=2, show_default=True, type=click.IntRange(min=0), help="People besides the wearer."
)
@click.option("--cameras", default=4, show_default=True, type=click.IntRange(min=1), help="Static exo GoPros.")
@click.option("--vertical-camera", is_flag=True, help="Mount one camera in portrait (2160x3840).")
@click.option("--nan-timesync", is_flag=True, help="Blank some Aria timestamps in timesync.csv.")
@click.option("--body-model", default=None, help="SMPL-X file or folder for the bodies (default: synthetic).")
def synth(root, takes, seed, duration, bystanders, cameras, vertical_camera, nan_timesync, body_model) -> None:
    """Write synthetic takes in the exact Ego-Exo4D layout, with ground truth in gt/ and simulated
    detector output in observations/ (the observation cache format)."""
    from motionkit.data.synthetic.writer import SynthConfig, write_synthetic_dataset

    cfg = SynthConfig(
        takes=takes,
        seed=seed,
        duration=duration,
        bystanders=bystanders,
        cameras=cameras,
        vertical_camera=vertical_camera,
        nan_timesync=nan_timesync,
        body_model=body_model,
    )
    try:
        uids = write_synthetic_dataset(root, cfg, progress=True)
    except DataError as exc:
        _fail(exc)
    click.echo(f"wrote {len(uids)} synthetic take(s) to {root}")
    for u in uids:
        click.echo(f"  {u}")


@main.command()
@click.option(
    "--root",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Dataset root (default: the embedded demo dataset).",
)
@click.option("--split", default=None, help="Only this split (train, val, test).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def takes(root, split, as_json) -> None:
    """List the takes of a dataset."""
    from motionkit.data.demo import ensure_demo_dataset
    from motionkit.data.egoexo4d import EgoExoDataset

    try:
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
    except DataError as exc:
        _fail(exc)
    if as_json:
        click.echo(json.dumps(rows))
        return
    for r in rows:
        click.echo(f"{r['take_uid']}  {r['take_name']:<28} {str(r['split']):<6} {r['frames']:>7} frames  {r['task']}")


@main.command()
@click.option("--take", "take_id", required=True, help="take_uid or take_name; 'demo' = first demo take.")
@click.option(
    "--fps",
    default=20.0,
    show_default=True,
    type=click.FloatRange(min=1.0, max=30.0),
    help="Output frame rate on the 30 fps take timeline.",
)
@click.option(
    "--root",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Ego-Exo4D dataset root (default: the embedded synthetic demo dataset).",
)
@click.option(
    "--out",
    "out_dir",
    default="out",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for <take_uid>.h5 and plots.",
)
@click.option("--until", default=None, help="Stop after this stage.")
@click.option("--body-model", default=None, help="SMPL-X file or folder (default: $MOTIONKIT_BODY_MODEL or synthetic).")
@click.option(
    "--timesync-offset",
    default=1,
    show_default=True,
    type=click.IntRange(0, 1),
    help="Take frame i -> timesync row start + offset + i.",
)
@click.option("--device", default="cpu", show_default=True, help="torch device for fitting (cpu, cuda).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the summary.")
def fit(take_id, fps, root, out_dir, until, body_model, timesync_offset, device, as_json) -> None:
    """Fit one take: load -> anchor -> ... and write <out>/<take_uid>.h5."""
    from motionkit.data.demo import ensure_demo_dataset
    from motionkit.pipeline import STAGES, FitConfig, run_fit

    if until is not None and until not in STAGES:
        raise click.BadParameter(f"unknown stage {until!r}; stages: {', '.join(STAGES)}", param_hint="--until")
    try:
        if root is None:
            root = ensure_demo_dataset(progress=not as_json)
            if take_id == "demo":
                from motionkit.data.egoexo4d import EgoExoDataset

                take_id = EgoExoDataset(root).takes()[0].take_uid
        cfg = FitConfig(fps=fps, timesync_offset=timesync_offset, body_model=body_model, device=device)
        log = None if as_json else (lambda s: click.echo(s, err=False))
        outcome = run_fit(root, take_id, out_dir, cfg, until=until, log=log)
    except DataError as exc:
        _fail(exc)
    s = outcome.summary()
    if as_json:
        click.echo(json.dumps(s))
        return
    bm = s["body_model"]
    click.echo(f"take {s['take_name']} ({s['take_uid']}): {s['frames']} frames at {s['fps']:g} fps")
    click.echo(
        f"stages: {', '.join(s['stages'])}"
        + (f" (reused: {', '.join(s['reused_stages'])})" if s["reused_stages"] else "")
    )
    click.echo("time per stage: " + ", ".join(f"{k} {v:.2f} s" for k, v in s["seconds_per_stage"].items()))
    if bm.get("synthetic"):
        click.echo("body model: SYNTHETIC demo body (not the licensed SMPL-X model)")
    else:
        click.echo(f"body model: {bm.get('file')} sha256 {bm.get('sha256', '')[:12]}")
    click.echo(f"result: {s['result']}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
