"""``motionkit`` command line. Thin: every command calls one library function."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from motionkit import __version__
from motionkit.common.errors import DataError


def _iters(value: str) -> tuple[int, int, int]:
    try:
        a, b, c = (int(x) for x in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected three comma-separated integers, got {value!r}") from None
    if min(a, b, c) < 0:
        raise click.BadParameter("iterations must be >= 0")
    return (a, b, c)


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
    "--preset",
    default="realistic",
    show_default=True,
    type=click.Choice(["clean", "realistic", "hard"]),
    help="Difficulty: realistic detector noise, landmarks, calibration and Aria errors (docs/synthetic.md); "
    "clean = the fitter's own body and joint centres with 3 px noise; hard = everything turned up.",
)
@click.option(
    "--bystanders", default=None, type=click.IntRange(min=0), help="People besides the wearer [preset: 2, hard 3]."
)
@click.option("--cameras", default=None, type=click.IntRange(min=1), help="Static exo GoPros [preset: 4, hard 3].")
@click.option("--vertical-camera", is_flag=True, help="Mount one camera in portrait (2160x3840).")
@click.option(
    "--nan-timesync/--no-nan-timesync", default=None, help="Blank some Aria timestamps in timesync.csv [preset]."
)
@click.option("--body-model", default=None, help="SMPL-X file or folder for the bodies (default: synthetic).")
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
    type=click.FloatRange(min=0.05, max=1.0),
    help="Size of the full videos relative to the calibration resolution (1.0 = 4K, as the release).",
)
def synth(
    root, takes, seed, duration, preset, bystanders, cameras, vertical_camera, nan_timesync, body_model,
    annotation_offset, videos, video_scale,
) -> None:  # fmt: skip
    """Write synthetic takes in the exact Ego-Exo4D layout, with ground truth in gt/ and simulated
    detector output in observations/ (the observation cache format)."""
    from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

    cfg = SynthConfig(
        takes=takes,
        seed=seed,
        duration=duration,
        preset=preset,
        bystanders=bystanders,
        cameras=cameras,
        vertical_camera=vertical_camera,
        nan_timesync=nan_timesync,
        body_model=body_model,
        annotation_offset=None if annotation_offset is None else json.loads(annotation_offset.read_text()),
        videos=videos,
        video_scale=video_scale,
    )
    try:
        uids = write_synthetic_dataset(root, cfg, progress=True)
    except DataError as exc:
        _fail(exc)
    click.echo(f"wrote {len(uids)} synthetic take(s) to {root} (preset {preset})")
    for u in uids:
        click.echo(f"  {u}")


@main.command()
@click.option(
    "--cuda/--no-cuda",
    "build_cuda",
    default=None,
    help="Also build the CUDA operators (default: where a GPU is visible).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def doctor(build_cuda, as_json) -> None:
    """Where fits run here: torch/CUDA/GPU details, and the fused operators of motionkit/kernels/csrc/ (builds them on
    first use; says why they are unavailable and the torch path is used)."""
    from motionkit.kernels.loader import environment_report

    rep = environment_report(build_cuda)
    if as_json:
        click.echo(json.dumps(rep))
        return
    click.echo(f"torch {rep['torch']} (CUDA build: {rep['torch_cuda'] or 'no'}); {rep['cpu_threads']} CPU threads")
    if rep["gpus"]:
        for g in rep["gpus"]:
            click.echo(f"GPU {g['index']}: {g['name']} (sm {g['capability']}, {g['memory_gib']} GiB)")
    else:
        click.echo("GPU: none visible")
    click.echo(f"nvcc: {rep['nvcc'] or 'not found'}; default fit device (--device auto): {rep['default_device']}")
    k = rep["kernels"]
    click.echo(f"fused operators: cpu {'yes' if k['cpu'] else 'no'}, cuda {'yes' if k['cuda'] else 'no'} "
               f"(cache {rep['kernels_dir']})")  # fmt: skip
    if k["error"]:
        click.echo(f"why not: {k['error']} -> those fits use the torch reference path")


@main.command("synth-report")
@click.argument("root", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--fits",
    default=None,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Result files of these takes: score the wearer's selected keypoints, raw triangulation and the fit.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def synth_report(root, fits, as_json) -> None:
    """The realised difficulty of a synthetic dataset: 2D error of the wearer's keypoints, its
    temporal correlation, swap/outlier/miss rates, landmark offsets, calibration error; with --fits,
    the accuracy of raw triangulation next to the fit's."""
    from motionkit.eval.synthetic_report import dataset_difficulty, format_difficulty

    try:
        rep = dataset_difficulty(root, fits)
    except DataError as exc:
        _fail(exc)
    click.echo(json.dumps(rep, indent=1) if as_json else format_difficulty(rep))


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
    from motionkit.data.egoexo4d import EgoExoDataset
    from motionkit.synthetic.demo import ensure_demo_dataset

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


def _fit_option(path: str, *decls: str, **kw):
    """``(path, parameter name, click option)`` for the config leaf at ``path``: the option's default is
    read from the dataclass (each default is written once); ``_fit_config`` sets the leaf."""
    from motionkit.pipeline.config import PipelineConfig, config_leaves

    default = config_leaves(PipelineConfig())[path]
    if isinstance(default, tuple):
        kw.setdefault("callback", lambda ctx, param, value: _iters(value))
        default = ",".join(map(str, default))
    if decls[0].startswith("--") and "/" not in decls[0] and isinstance(default, bool) and not default:
        kw["is_flag"] = True
    name = decls[0].split("/")[0].lstrip("-").replace("-", "_")  # click's parameter name
    return path, name, click.option(*decls, default=default, show_default=default is not None, **kw)


# every option of ``fit`` and ``batch`` that changes the run, with the config leaf it sets
FIT_OPTIONS = [
    _fit_option("fps", "--fps", type=click.FloatRange(min=1.0, max=30.0),
                help="Output frame rate on the 30 fps take timeline."),
    _fit_option("body_model", "--body-model",
                help="SMPL-X file or folder (default: $MOTIONKIT_BODY_MODEL, else the synthetic demo body)."),
    _fit_option("timesync_offset", "--timesync-offset", type=click.IntRange(0, 1),
                help="Take frame i -> timesync row start + offset + i."),
    _fit_option("device", "--device",
                help="torch device for fitting and detection: auto (CUDA when available, else CPU), cpu, cuda, "
                     "cuda:N."),
    _fit_option("kernels", "--kernels", type=click.Choice(["auto", "torch", "fused"]),
                help="Fit operators: fused C++/CUDA (motionkit/kernels/csrc/, built once on first use), the torch "
                     "reference, or auto (fused when built; `motionkit doctor` says why not)."),
    _fit_option("association", "--association", type=click.Choice(["soma", "cylinder", "soma+cylinder"]),
                help="Wearer rule: nearest head to the projected Aria anchor (SOMA), the official "
                     "cylinder-proposal + IoU rule, or SOMA with the cylinder rule where it finds nobody."),
    _fit_option("detector", "--detector", type=click.Choice(["auto", "observations", "annotation", "rfdetr"]),
                help="Detections from the dataset's observation cache, annotation2D, or RF-DETR on the videos."),
    _fit_option("detector_variant", "--detector-variant", type=click.Choice(["nano", "small", "medium", "large"])),
    _fit_option("detector_weights", "--detector-weights", help="Local RF-DETR checkpoint (never downloaded)."),
    _fit_option("keypoint_weights", "--keypoint-weights", help="Local RFDETRKeypointPreview checkpoint."),
    _fit_option("downscaled_video", "--downscaled-video",
                help="RF-DETR reads frame_aligned_videos/downscaled/448/ (the release's 448p copies; ~20x fewer "
                     "pixels to decode and move than 4K) instead of the full videos."),
    _fit_option("body_fit.iters", "--fit-iters",
                help="Adam iterations of the three fitting stages (A: root, B: + pose, C: + shape)."),
    _fit_option("weighting.conf_power", "--conf-power", type=click.FloatRange(min=0.0),
                help="Fit weight of a keypoint ~ confidence ** this (1: plain confidence weighting)."),
    _fit_option("weighting.size_power", "--size-power", type=click.FloatRange(min=0.0),
                help="Fit weight ~ (take's median box height / this view's box height) ** this, clipped "
                     "to 1/4..4: pixels of a small far person count more (0: off)."),
    _fit_option("body_fit.refine_cameras", "--refine-cameras/--no-refine-cameras",
                help="After the fit, move each camera by a small rotation and translation onto the fitted "
                     "landmarks and fit again, twice (three fits in all; the cameras used: fit/T_cam_world)."),
    _fit_option("cross_view", "--cross-view/--no-cross-view",
                help="Check each view's wearer against the wearer the other views triangulate: select it "
                     "where the SOMA rule found nobody, replace a selection that disagrees (CROSS_VIEW)."),
]  # fmt: skip


def fit_options(f):
    """The options that change a fit (shared by ``fit`` and ``batch``); they become a ``PipelineConfig``."""
    for _, _, opt in reversed(FIT_OPTIONS):
        f = opt(f)
    return f


def _fit_config(kw: dict):
    """The ``PipelineConfig`` of the parsed options (removed from ``kw``)."""
    from motionkit.pipeline.config import PipelineConfig

    return PipelineConfig.from_leaves({path: kw.pop(name) for path, name, _ in FIT_OPTIONS})


@main.command()
@click.option("--take", "take_id", required=True, help="take_uid or take_name; 'demo' = first demo take.")
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
@fit_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the summary.")
def fit(take_id, root, out_dir, until, as_json, **kw) -> None:
    """Fit one take: load -> anchor -> detect -> keypoints -> associate -> triangulate -> fit ->
    motion -> evaluate, and write <out>/<take_uid>.h5 with two PNGs beside it."""
    from motionkit.pipeline import STAGES, run_take
    from motionkit.synthetic.demo import ensure_demo_dataset

    cfg = _fit_config(kw)
    if until is not None and until not in STAGES:
        raise click.BadParameter(f"unknown stage {until!r}; stages: {', '.join(STAGES)}", param_hint="--until")
    try:
        if root is None:
            root = ensure_demo_dataset(progress=not as_json)
            if take_id == "demo":
                from motionkit.data.egoexo4d import EgoExoDataset

                take_id = EgoExoDataset(root).takes()[0].take_uid
        log = None if as_json else click.echo
        outcome = run_take(root, take_id, out_dir, cfg, until=until, log=log, progress=not as_json)
    except DataError as exc:
        _fail(exc)
    s = outcome.summary()
    if as_json:
        click.echo(json.dumps(s))
        return
    bm = s["body_model"]
    click.echo(f"take {s['take_name']} ({s['take_uid']}): {s['frames']} frames at {s['fps']:g} fps")
    reused = f" (reused: {', '.join(s['reused_stages'])})" if s["reused_stages"] else ""
    click.echo(f"stages: {', '.join(s['stages'])}{reused}")
    click.echo("time per stage: " + ", ".join(f"{k} {v:.2f} s" for k, v in s["seconds_per_stage"].items()))
    if s["fit_device"]:
        click.echo(f"fit on {s['fit_device']} with the {s['fit_kernels']} operators")
    if s["coverage"] is not None:
        cov, rep = 100 * s["coverage"], s["reprojection_px"]
        click.echo(f"coverage: {cov:.1f} % of frames fitted; reprojection {rep:.1f} px (median)")
    if s["pa_mpjpe_mm"] is not None:
        click.echo(
            f"vs annotations: PA-MPJPE {s['pa_mpjpe_mm']:.1f} mm, MPJPE {s['mpjpe_world_mm']:.1f} mm (uncorrected)"
        )
    for p in s["plots"]:
        click.echo(f"plot: {p}")
    if bm.get("synthetic"):
        click.echo("body model: SYNTHETIC demo body (not the licensed SMPL-X model)")
    else:
        click.echo(f"body model: {bm.get('file')} sha256 {bm.get('sha256', '')[:12]}")
    click.echo(f"result: {s['result']}")


def _result_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.glob("*.h5") if not p.name.startswith("."))
        if not files:
            raise click.ClickException(f"{path}: no result files (*.h5)")
        return files
    if not path.is_file():
        raise click.ClickException(f"{path}: not found")
    return [path]


def _export_humanmovevqa(path: Path, out_dir: Path | None, preset: str, frame: str, camera: str | None,
                         as_json: bool) -> None:  # fmt: skip
    """``codes --format humanmovevqa``: one file per valid run, an index of what was written and skipped."""
    from motionkit.common.files import write_json_atomic
    from motionkit.data.store import read_result
    from motionkit.motion.humanmovevqa import export_take, sign_word_agreement, write_documents

    if camera is not None and frame != "camera":
        raise click.UsageError("--camera needs --frame camera")
    if frame == "camera" and camera is None:
        raise click.UsageError("--frame camera needs --camera (e.g. --camera cam01)")
    files = _result_files(path)
    out_dir = out_dir or (path if path.is_dir() else path.parent) / "humanmovevqa"
    index = {"frame": frame, "camera": camera, "preset": preset, "takes": []}
    written = 0
    for f in files:
        entry = {"result": f.name}
        try:
            ex = export_take(read_result(f), frame=frame, camera=camera, preset=preset)
        except (DataError, ValueError) as exc:
            entry.update(take_uid=None, files=[], skipped=str(exc))
            click.echo(f"{f.name}: not exported: {exc}", err=True)
            index["takes"].append(entry)
            continue
        for doc in ex.documents:
            bad = sign_word_agreement(doc)
            if bad:  # a bug, never data: refuse to write contradicting tracks
                raise click.ClickException(f"{doc['motion_id']}: sign and word disagree: {'; '.join(bad[:3])}")
        paths = write_documents(ex, out_dir)
        written += len(paths)
        entry.update(take_uid=ex.take_uid, take_name=ex.take_name, files=[p.name for p in paths], skipped=ex.skipped)
        index["takes"].append(entry)
        if ex.skipped:
            click.echo(f"{ex.take_name}: not exported: {ex.skipped}", err=True)
        elif not as_json:
            n_ev = sum(len(v) for d in ex.documents for v in d["quantitative_values"].values())
            click.echo(f"{ex.take_name}: {len(paths)} track(s), {n_ev} events -> {out_dir}")
    write_json_atomic(out_dir / "index.json", index, indent=2)
    if as_json:
        click.echo(json.dumps(index))
    if not written:
        raise click.ClickException(f"no track written (see {out_dir / 'index.json'})")


@main.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--preset",
    default="default",
    show_default=True,
    type=click.Choice(["default", "motionscript_5cm", "paper_literal"]),
    help="Units of the codes.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the events as JSON (one object per take).")
@click.option("--plot/--no-plot", default=True, show_default=True, help="Write <stem>.codes.png beside each file.")
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
@click.option("--camera", default=None, help="humanmovevqa with --frame camera: the exocentric camera (e.g. cam01).")
def codes(path, preset, as_json, plot, fmt, out_dir, frame, camera) -> None:
    """Spatial-code events of fitted takes (a result file or a folder of them).

    Writes <stem>.codes.json (and a PNG: top-down trajectory with event markers, and a timeline of
    events per code) beside each result file; with --format humanmovevqa, HumanMoveVQA motion tracks
    into --out (docs/motion.md, "HumanMoveVQA tracks").
    """
    if fmt == "humanmovevqa":
        _export_humanmovevqa(path, out_dir, preset, frame, camera, as_json)
        return
    from motionkit.common.files import write_json_atomic
    from motionkit.data.store import read_result
    from motionkit.motion.derive import derive_motion, fit_arrays
    from motionkit.viz import empty_plot, plot_trajectory_events

    out = []
    for f in _result_files(path):
        try:
            a = fit_arrays(read_result(f))
        except (DataError, ValueError) as exc:
            _fail(exc)
        d = derive_motion(
            a["joints_smplx"], a["global_orient"], a["valid"], a["fps"], preset=preset, motion_id=a["take_uid"]
        )
        doc = {
            "take_uid": a["take_uid"],
            "body_model": a["body_model"],
            "preset": preset,
            "runs": [list(r) for r in d.runs],
            "event_sets": [es.to_dict() for es in d.events],
        }
        write_json_atomic(f.with_suffix(".codes.json"), doc)
        if plot:
            if d.runs:
                k = max(range(len(d.runs)), key=lambda i: d.runs[i][1] - d.runs[i][0])
                plot_trajectory_events(
                    d.trajectories[k],
                    d.events[k],
                    f.with_suffix(".codes.png"),
                    title=f"{a['take_uid']} run {k} (frames {d.runs[k][0]}-{d.runs[k][1] - 1})",
                )
            else:
                empty_plot(f.with_suffix(".codes.png"), "no valid run")
        n_ev = sum(1 for es in d.events for e in es.events if e.spatial_category != "no_action")
        n_qa = sum(1 for es in d.events for e in es.events if e.qa_eligible)
        out.append(doc)
        if not as_json:
            target = f.with_suffix(".codes.json")
            click.echo(f"{a['take_uid']}: {len(d.runs)} run(s), {n_ev} events, {n_qa} QA-eligible -> {target}")
    if as_json:
        click.echo(json.dumps(out if len(out) > 1 else out[0]))


@main.command()
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
def features(path, out_path, variant) -> None:
    """HumanML3D 263-d features of fitted takes (a result file or a folder of them).

    Each valid run of a take gives (frames - 1) rows; rows of all runs are concatenated, and
    <stem>.hml263.runs.json records each run's frame range and row range.
    """
    import numpy as np

    from motionkit.common.files import atomic_path, write_json_atomic
    from motionkit.data.store import read_result
    from motionkit.motion.derive import derive_motion, fit_arrays

    files = _result_files(path)
    if out_path is not None and out_path.suffix == ".npy" and len(files) > 1:
        raise click.BadParameter("a .npy output takes one result file; give a folder for several", param_hint="--out")
    for f in files:
        try:
            a = fit_arrays(read_result(f))
        except (DataError, ValueError) as exc:
            _fail(exc)
        d = derive_motion(a["joints_smplx"], a["global_orient"], a["valid"], a["fps"], variant=variant)
        feats = np.concatenate(d.features) if d.features else np.zeros((0, 263), np.float32)
        if out_path is None:
            target = f.with_suffix(".hml263.npy")
        elif out_path.suffix == ".npy":
            target = out_path
        else:
            target = out_path / f"{f.stem}.hml263.npy"
        with atomic_path(target, suffix=".npy") as tmp, open(tmp, "wb") as fh:
            np.save(fh, feats)
        rows, r0 = [], 0
        for (s, e), x, t in zip(d.runs, d.features, d.feature_time_s, strict=True):
            rows.append(
                {"frames": [s, e], "rows": [r0, r0 + len(x)], "time_s": [float(t[0]), float(t[-1])] if len(t) else []}
            )
            r0 += len(x)
        write_json_atomic(
            target.with_suffix(".runs.json"),
            {
                "take_uid": a["take_uid"],
                "fps": 20.0,
                "fit_fps": a["fps"],
                "variant": variant,
                "body_model": a["body_model"],
                "runs": rows,
            },
        )
        click.echo(f"{a['take_uid']}: {feats.shape[0]} x 263 ({variant}) -> {target}")


@main.command()
@click.option(
    "--root", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path), help="Dataset root."
)
@click.option(
    "--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Results folder."
)
@click.option(
    "--takes",
    "takes_file",
    default=None,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="File with one take uid or name per line.",
)
@click.option("--split", default=None, help="All takes of this split (train, val, test).")
@click.option("--all", "all_takes", is_flag=True, help="All takes in takes.json.")
@click.option("--executor", default="local", show_default=True, type=click.Choice(["local", "ray", "slurm"]))
@click.option(
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(min=1),
    help="local: processes; ray: local cluster size (in tasks); slurm: array parallelism.",
)
@click.option("--cpus-per-task", default=1, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--gpus-per-task",
    default=None,
    type=click.FloatRange(min=0),
    help="GPUs Ray/Slurm reserve per task (Ray accepts fractions). Default: 1 when the fit device is "
    "CUDA (--device cuda, or auto with a GPU visible here), else 0.",
)
@click.option(
    "--takes-per-task",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Takes fitted together in one batched fit on one device (use 8-32 on a GPU); each take's "
    "result equals fitting it alone.",
)
@click.option("--retries", default=0, show_default=True, type=click.IntRange(min=0), help="Retry failed takes N times.")
@click.option("--force", is_flag=True, help="Recompute takes whose results are complete.")
@click.option("--ray-address", default=None, help="Connect to an existing Ray cluster (default: start a local one).")
@click.option("--slurm-partition", default=None)
@click.option("--slurm-time", "slurm_time_min", default=60, show_default=True, type=int, help="Minutes per take.")
@click.option("--slurm-local", is_flag=True, help="Run the Slurm path with submitit's local executor (no cluster).")
@fit_options
def batch(root, out_dir, takes_file, split, all_takes, executor, workers, cpus_per_task, gpus_per_task, takes_per_task,
          retries, force,
          ray_address, slurm_partition, slurm_time_min, slurm_local, **kw) -> None:  # fmt: skip
    """Fit many takes, one task per take, on a local process pool, Ray or Slurm (submitit).

    Idempotent: complete results made with the same configuration and motionkit version are skipped
    (--force recomputes). Every attempt is recorded in <out>/manifest.jsonl; a failing take never
    stops the others.
    """
    from tqdm import tqdm

    from motionkit.data.egoexo4d import EgoExoDataset
    from motionkit.distributed import BatchConfig, run_batch

    if sum([takes_file is not None, split is not None, all_takes]) != 1:
        raise click.UsageError("choose exactly one of --takes FILE, --split NAME, --all")
    try:
        ds = EgoExoDataset(root)
        if takes_file is not None:
            ids = [ln.strip() for ln in takes_file.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
            uids = [ds.take(i).uid for i in ids]
        else:
            infos = ds.takes(split)
            excluded = [t.take_name for t in infos if t.excluded_scenario]
            if excluded:  # the same rule as eval: the benchmark leaves these scenarios out
                click.echo(f"skipping {len(excluded)} take(s) of excluded scenarios: {', '.join(excluded)}", err=True)
            uids = [t.take_uid for t in infos if not t.excluded_scenario]
    except DataError as exc:
        _fail(exc)
    if not uids:
        raise click.ClickException("no takes selected")
    fc = _fit_config(kw)
    if gpus_per_task is None:
        from motionkit.common.device import resolve_device

        gpus_per_task = 1 if resolve_device(fc.device).type == "cuda" else 0
    bc = BatchConfig(
        executor=executor,
        workers=workers,
        cpus_per_task=cpus_per_task,
        gpus_per_task=gpus_per_task,
        takes_per_task=takes_per_task,
        retries=retries,
        force=force,
        ray_address=ray_address,
        slurm_partition=slurm_partition,
        slurm_time_min=slurm_time_min,
        slurm_local=slurm_local,
    )
    bar = tqdm(total=len(uids), desc=f"batch ({executor})", unit="take")
    seen = set()

    def on_record(rec):
        if rec["take"] not in seen and rec["status"] in ("done", "skipped"):
            seen.add(rec["take"])
            bar.update(1)
        bar.set_postfix_str(f"{rec['take'][:8]} {rec['status']}")

    try:
        summary = run_batch(root, out_dir, uids, fc, bc, on_record=on_record)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        bar.close()
    click.echo(
        f"done {len(summary['done'])}, skipped {len(summary['skipped'])}, failed {len(summary['failed'])} "
        f"(manifest: {Path(out_dir) / 'manifest.jsonl'})"
    )
    for uid, err in summary["failed"].items():
        click.echo(f"  FAILED {uid}: {err}")
    if summary["failed"]:
        sys.exit(1)


@main.command("plot-association")
@click.argument("result_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--frame", "m", default=None, type=int, help="Processed frame number (default: the middle one).")
@click.option(
    "--out",
    "out_path",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="PNG path (default: <result>.association.png).",
)
def plot_association_cmd(result_file, m, out_path) -> None:
    """Draw, for one frame, each view's detections, the projected Aria anchor and the selected wearer."""
    from motionkit.data.observations import read_observations
    from motionkit.data.store import read_result
    from motionkit.viz import plot_association

    try:
        res = read_result(result_file)
        if "associate" not in res.stages:
            raise click.ClickException(f"{result_file}: no association stage (stages: {res.stages})")
        obs = read_observations(res.group_attrs["detections"]["path"])
    except DataError as exc:
        _fail(exc)
    n = len(res["association/frame_index"])
    m = n // 2 if m is None else m
    if not 0 <= m < n:
        raise click.BadParameter(f"frame must be in [0, {n})", param_hint="--frame")
    path = plot_association(res, obs, m, out_path or result_file.with_suffix(".association.png"))
    click.echo(f"wrote {path}")


@main.command("eval")
@click.option("--root", required=True, type=click.Path(file_okay=False, path_type=Path), help="Dataset root.")
@click.option(
    "--fits",
    "fits_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder of <take_uid>.h5 result files.",
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
    "--min-views-gt", default=0, show_default=True, type=int, help="Keep GT joints seen in >= N views (0 = all)."
)
@click.option("--offset-frame", default="parent", show_default=True, type=click.Choice(["parent", "root", "world"]))
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
def eval_cmd(
    root, fits_dir, split, offsets_from, offsets_file, min_views_gt, offset_frame, out_dir, allow_circular, as_json
) -> None:
    """Score fits against the manual 3D body annotations (PA-MPJPE, take-averaged, uncorrected and with
    the per-joint convention offsets fitted on another split) and report coverage."""
    from motionkit.eval.protocol import EvalConfig, load_offsets, save_offsets
    from motionkit.eval.report import write_report
    from motionkit.eval.run import evaluate

    cfg = EvalConfig(min_views_gt=min_views_gt, offset_frame=offset_frame)
    offsets = None
    try:
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
    except (DataError, ValueError) as exc:
        _fail(exc)
    out_dir = out_dir or fits_dir
    if report["n_takes"] == 0:
        circ = report["circular_takes"]
        if circ:
            raise click.ClickException(
                f"the {len(circ)} fitted {split} take(s) in {fits_dir} were fitted to annotation2D: scoring them "
                "against the same annotations is circular. Fit from an observation cache or the videos "
                "(RF-DETR), or pass --allow-circular to score them anyway."
            )
        raise click.ClickException(f"no fitted {split} takes with manual annotations in {fits_dir}")
    if report["circular_takes"] and not allow_circular:
        click.echo(
            f"left out {len(report['circular_takes'])} take(s) fitted to annotation2D (circular); "
            "--allow-circular includes them",
            err=True,
        )
    paths = write_report(report, out_dir)
    if offsets is not None and offsets_file is None:
        save_offsets(
            out_dir / "offsets.json", offsets, cfg.offset_frame, {"split": offsets_from, "fits": str(fits_dir)}
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
