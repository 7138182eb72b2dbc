"""Motion commands: ``codes`` (spatial-code events, HumanMoveVQA tracks) and ``features`` (HumanML3D 263-d)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from motionkit.cli.common import clean_errors, error_in, result_files
from motionkit.common.errors import DataError
from motionkit.common.files import atomic_path, write_json_atomic
from motionkit.data.store import read_result
from motionkit.motion.derive import (
    codes_document,
    derive_motion,
    event_counts,
    features_document,
    fit_arrays,
    longest_run,
)
from motionkit.motion.humanmovevqa import export_results
from motionkit.viz import empty_plot, plot_trajectory_events


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--preset",
    default="default",
    show_default=True,
    type=click.Choice(["default", "motionscript_5cm", "paper_literal"]),
    help="Units of the codes.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the events as JSON (one object per take).",
)
@click.option(
    "--plot/--no-plot",
    default=True,
    show_default=True,
    help="Write <stem>.codes.png beside each file.",
)
@click.option(
    "--format",
    "fmt",
    default="json",
    show_default=True,
    type=click.Choice(["json", "humanmovevqa"]),
    help="json: motionkit's event files beside each result; humanmovevqa: one "
    "<motion_id>_spatial_caption.json per valid run for the HumanMoveVQA question generator.",
)
@click.option(
    "--out",
    "out_dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the humanmovevqa files (default: <results folder>/humanmovevqa).",
)
@click.option(
    "--frame",
    default="person",
    show_default=True,
    type=click.Choice(["person", "camera"]),
    help="humanmovevqa: directions relative to the wearer's first-frame heading, or as seen in --camera.",
)
@click.option(
    "--camera",
    default=None,
    help="humanmovevqa with --frame camera: the exocentric camera (e.g. cam01).",
)
@clean_errors(ValueError)
def codes(path, preset, as_json, plot, fmt, out_dir, frame, camera) -> None:
    """Spatial-code events of fitted takes (a result file or a folder of them).

    Writes <stem>.codes.json (and a PNG: top-down trajectory with event markers, and a timeline of
    events per code) beside each result file; with --format humanmovevqa, HumanMoveVQA motion tracks
    into --out (docs/motion.md, "HumanMoveVQA tracks"). Each event records root_trusted_share: the
    share of its frames whose torso, on which the root's position and heading rest, the fit trusts
    (drop questions from events below 1 to keep only what the cameras supported).
    """
    files = result_files(path)
    if fmt == "humanmovevqa":
        folder = out_dir or (path if path.is_dir() else path.parent) / "humanmovevqa"
        try:
            ex = export_results(files, folder, preset=preset, frame=frame, camera=camera)
        except ValueError as exc:  # option combinations
            raise click.UsageError(str(exc)) from exc
        for text, problem in ex.lines:
            if problem or not as_json:
                click.echo(text, err=problem)
        if as_json:
            click.echo(json.dumps(ex.index))
        if not ex.written:
            raise click.ClickException(f"no track written (see {folder / 'index.json'})")
        return
    out = []
    for f in files:
        try:
            doc, line = _write_codes(f, preset, plot)
        except DataError as exc:  # one damaged or unfitted file of a folder: the others still get theirs
            click.echo(f"no codes: {error_in(f, exc)}", err=True)
            continue
        out.append(doc)
        if not as_json:
            click.echo(line)
    if not out:
        raise click.ClickException(f"no codes written from {path}")
    if as_json:
        click.echo(json.dumps(out if len(out) > 1 else out[0]))


def _write_codes(f: Path, preset: str, plot: bool) -> tuple[dict, str]:
    """The codes document of result file ``f``, written beside it (with its PNG when ``plot``), and a
    summary line."""
    a = fit_arrays(read_result(f))
    d = derive_motion(a["joints_smplx"], a["global_orient"], a["valid"], a["fps"], preset=preset,
                      motion_id=a["take_uid"], joint_trusted=a["joint_trusted"])  # fmt: skip
    doc = codes_document(a, d, preset)
    target = f.with_suffix(".codes.json")
    write_json_atomic(target, doc)
    if plot:
        k = longest_run(d)
        if k is None:
            empty_plot(f.with_suffix(".codes.png"), "no valid run")
        else:
            title = f"{a['take_uid']} run {k} (frames {d.runs[k][0]}-{d.runs[k][1] - 1})"
            plot_trajectory_events(d.trajectories[k], d.events[k], f.with_suffix(".codes.png"), title=title)
    n_ev, n_qa, n_trusted = event_counts(d)
    trusted = "" if n_trusted is None else f" ({n_trusted} on a torso trusted throughout)"
    return doc, f"{a['take_uid']}: {len(d.runs)} run(s), {n_ev} events, {n_qa} QA-eligible{trusted} -> {target}"


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--out",
    "out_path",
    default=None,
    type=click.Path(path_type=Path),
    help="FILE.npy for one input (all runs concatenated), or a folder; default: beside each input.",
)
@click.option(
    "--variant",
    default="reference",
    show_default=True,
    type=click.Choice(["reference", "corrected"]),
    help="'reference' matches the released HumanML3D data and Mean/Std.",
)
@clean_errors(ValueError)
def features(path, out_path, variant) -> None:
    """HumanML3D 263-d features of fitted takes (a result file or a folder of them).

    Each valid run of a take gives (frames - 1) rows; rows of all runs are concatenated, and
    <stem>.hml263.runs.json records each run's frame range and row range. For fits with per-joint
    trust, <stem>.hml263.joint_trusted.npy (rows x 17, bool, COCO-17 order) says which landmarks the
    fit trusts at both samples of each row: mask rows whose legs are hidden before training on them.
    """
    files = result_files(path)
    if out_path is not None and out_path.suffix == ".npy" and len(files) > 1:
        raise click.BadParameter(
            "a .npy output takes one result file; give a folder for several",
            param_hint="--out",
        )
    written = 0
    for f in files:
        if out_path is None:
            target = f.with_suffix(".hml263.npy")
        elif out_path.suffix == ".npy":
            target = out_path
        else:
            target = out_path / f"{f.stem}.hml263.npy"
        try:
            click.echo(_write_features(f, target, variant))
        except DataError as exc:  # one damaged or unfitted file of a folder: the others still get theirs
            click.echo(f"no features: {error_in(f, exc)}", err=True)
            continue
        written += 1
    if not written:
        raise click.ClickException(f"no features written from {path}")


def _write_features(f: Path, target: Path, variant: str) -> str:
    """The HumanML3D features of result file ``f`` written to ``target`` (with the trust mask and the runs'
    record beside it); returns a summary line."""
    a = fit_arrays(read_result(f))
    d = derive_motion(a["joints_smplx"], a["global_orient"], a["valid"], a["fps"], variant=variant,
                      joint_trusted=a["joint_trusted"])  # fmt: skip
    feats = d.all_features()
    with atomic_path(target, suffix=".npy") as tmp, open(tmp, "wb") as fh:
        np.save(fh, feats)
    trusted = d.all_feature_trusted()
    if trusted is not None:
        with atomic_path(target.with_suffix(".joint_trusted.npy"), suffix=".npy") as tmp, open(tmp, "wb") as fh:
            np.save(fh, trusted)
    write_json_atomic(target.with_suffix(".runs.json"), features_document(a, d, variant))
    return f"{a['take_uid']}: {feats.shape[0]} x 263 ({variant}) -> {target}"
