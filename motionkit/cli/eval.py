"""Evaluation commands: ``eval`` (against the manual annotations) and ``plot-association``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from motionkit.cli.common import clean_errors
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.observations import read_observations
from motionkit.data.store import read_result
from motionkit.eval.compare import Method, compare, read_segments
from motionkit.eval.protocol import EvalConfig, load_offsets, save_offsets
from motionkit.eval.report import compare_markdown, write_compare_report, write_report
from motionkit.eval.run import evaluate
from motionkit.viz import plot_association


@click.command("eval")
@click.option(
    "--root",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Dataset root.",
)
@click.option(
    "--fits",
    "fits_dir",
    default=None,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder of motionkit's <take_uid>.h5 result files (reported as 'motionkit').",
)
@click.option(
    "--compare",
    "compares",
    multiple=True,
    metavar="NAME=FORMAT:PATH",
    help="Another refit to score side by side (repeatable); FORMAT: motionkit, ee4d-motion, egoexo4d-hm, "
    "coco17-json (PATH: the file), smplx-npz. Writes the SOMA tables 9 and 10, figure 37 and the official "
    "Ego-Exo4D body-pose protocol (docs/eval.md).",
)
@click.option(
    "--segments",
    "segments_file",
    default=None,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="With --compare: segments (CSV or JSON of take_uid, start_s, end_s) for figure 37 (default: 3.2-s windows).",
)
@click.option(
    "--no-intersect",
    is_flag=True,
    help="With --compare: score each method on all of its own takes instead of the takes all methods share.",
)
@click.option(
    "--body-model",
    default=None,
    help="With --compare: the SMPL-X file for SMPL-X sources (default: $MOTIONKIT_BODY_MODEL, else the synthetic "
    "body).",
)
@click.option("--split", default="val", show_default=True, help="Split to score.")
@click.option(
    "--offsets-from",
    default="train",
    show_default=True,
    help="Split whose fits estimate the per-joint offsets ('none' to skip).",
)
@click.option(
    "--offsets",
    "offsets_file",
    default=None,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Use saved offsets (JSON) instead of estimating them.",
)
@click.option(
    "--min-views-gt",
    default=0,
    show_default=True,
    type=int,
    help="Keep GT joints seen in >= N views (0 = all).",
)
@click.option(
    "--offset-frame",
    default="parent",
    show_default=True,
    type=click.Choice(["parent", "root", "world"]),
)
@click.option(
    "--out",
    "out_dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where eval.json, eval.md and the plots go (default: the fits folder).",
)
@click.option(
    "--allow-circular",
    is_flag=True,
    help="Also score takes fitted to annotation2D (their figures then measure agreement with the "
    "annotations the fit was made from, not accuracy).",
)
@click.option("--json", "as_json", is_flag=True, help="Print eval.json to stdout.")
@clean_errors(ValueError)
def eval_cmd(
    root,
    fits_dir,
    compares,
    segments_file,
    no_intersect,
    body_model,
    split,
    offsets_from,
    offsets_file,
    min_views_gt,
    offset_frame,
    out_dir,
    allow_circular,
    as_json,
) -> None:
    """Score fits against the manual 3D body annotations (PA-MPJPE, take-averaged, uncorrected and with
    the per-joint convention offsets fitted on another split) and report coverage."""
    cfg = EvalConfig(min_views_gt=min_views_gt, offset_frame=offset_frame)
    if compares:
        methods = ([Method("motionkit", "motionkit", fits_dir)] if fits_dir else []) + [
            Method.parse(c) for c in compares
        ]
        segments = read_segments(segments_file) if segments_file else None
        report = compare(root, methods, split=split, offsets_from=None if offsets_from == "none" else offsets_from,
                         cfg=cfg, body_model=body_model, intersect=not no_intersect, segments=segments)  # fmt: skip
        paths = write_compare_report(report, out_dir or fits_dir or Path(compares[0].partition(":")[2]).parent)
        click.echo(json.dumps(report) if as_json else compare_markdown(report))
        if not as_json:
            click.echo(f"wrote {paths['json']}, {paths['md']}, {paths['png']}")
        return
    if fits_dir is None:
        raise click.UsageError("give --fits (motionkit's result files) and/or --compare NAME=FORMAT:PATH")
    offsets = None
    if offsets_file is not None:
        offsets, frame = load_offsets(offsets_file)
        cfg = EvalConfig(min_views_gt=min_views_gt, offset_frame=frame)
    report, offsets = evaluate(
        root,
        fits_dir,
        split=split,
        offsets_from=None if offsets_from == "none" else offsets_from,
        offsets=offsets,
        cfg=cfg,
        allow_circular=allow_circular,
    )
    out_dir = out_dir or fits_dir
    if report["n_takes"] == 0:
        circ = report["circular_takes"]
        if circ:
            raise click.ClickException(
                f"the {len(circ)} fitted {split} take(s) in {fits_dir} were fitted to annotation2D: scoring them "
                "against the same annotations is circular. Fit from an observation cache or the videos "
                "(RF-DETR), or pass --allow-circular to score them anyway."
            )
        splits = EgoExoDataset(root).split_names()
        raise click.ClickException(f"no fitted {split} takes with manual annotations in {fits_dir} "
                                   f"(splits of {root}: {', '.join(splits) or 'none'})")  # fmt: skip
    if report["circular_takes"] and not allow_circular:
        click.echo(
            f"left out {len(report['circular_takes'])} take(s) fitted to annotation2D (circular); "
            "--allow-circular includes them",
            err=True,
        )
    paths = write_report(report, out_dir)
    if offsets is not None and offsets_file is None:
        save_offsets(
            out_dir / "offsets.json",
            offsets,
            cfg.offset_frame,
            {"split": offsets_from, "fits": str(fits_dir)},
        )
    if as_json:
        click.echo(json.dumps(report))
        return
    pa = report["pa_mpjpe"]
    u, c = pa["uncorrected"]["take_mean"], pa["corrected"]["take_mean"]
    click.echo(f"{split}: {report['n_takes_scored']} takes, {report['n_frames_scored']} frames scored")
    click.echo(
        f"PA-MPJPE (take-averaged): {u:.1f} mm uncorrected" + (f", {c:.1f} mm corrected" if c is not None else "")
    )
    click.echo(f"coverage of the video timeline: {100 * report['coverage']['video_time']:.1f} %")
    click.echo(f"wrote {paths['json']}, {paths['md']}, " + ", ".join(str(p) for p in paths["png"]))


@click.command("plot-association")
@click.argument("result_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--frame",
    "m",
    default=None,
    type=int,
    help="Processed frame number (default: the middle one).",
)
@click.option(
    "--out",
    "out_path",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="PNG path (default: <result>.association.png).",
)
@clean_errors()
def plot_association_cmd(result_file, m, out_path) -> None:
    """Draw, for one frame, each view's detections, the projected Aria anchor and the selected wearer."""
    res = read_result(result_file)
    if "associate" not in res.stages:
        raise click.ClickException(f"{result_file}: no association stage (stages: {res.stages})")
    obs = read_observations(res.group_attrs["detections"]["path"])
    n = len(res["association/frame_index"])
    m = n // 2 if m is None else m
    if not 0 <= m < n:
        raise click.BadParameter(f"frame must be in [0, {n})", param_hint="--frame")
    path = plot_association(res, obs, m, out_path or result_file.with_suffix(".association.png"))
    click.echo(f"wrote {path}")
