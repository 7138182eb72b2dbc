"""Fitting commands: ``fit`` (one take), ``batch`` (many takes on a pool, Ray or Slurm), ``doctor``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from tqdm import tqdm

from motionkit.batch_report import RUNNING_DIR, batch_report, report_markdown
from motionkit.cli.common import clean_errors, iters_option, writable_folder
from motionkit.common.device import resolve_device
from motionkit.common.files import read_json
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.detect.rfdetr_backend import checkpoints_report
from motionkit.distributed import BatchConfig, run_batch
from motionkit.kernels.loader import environment_report
from motionkit.pipeline import STAGES, run_take
from motionkit.pipeline.config import PipelineConfig, config_leaves
from motionkit.synthetic.demo import ensure_demo_dataset


def _fit_option(path: str, *decls: str, **kw):
    """``(path, parameter name, click option)`` for the config leaf at ``path``: the option's default is
    read from the dataclass (each default is written once); ``_fit_config`` sets the leaf."""
    default = config_leaves(PipelineConfig())[path]
    if isinstance(default, tuple):
        kw.setdefault("callback", lambda ctx, param, value: iters_option(value))
        default = ",".join(map(str, default))
    if decls[0].startswith("--") and "/" not in decls[0] and isinstance(default, bool) and not default:
        kw["is_flag"] = True
    name = decls[0].split("/")[0].lstrip("-").replace("-", "_")  # click's parameter name
    return (
        path,
        name,
        click.option(*decls, default=default, show_default=default is not None, **kw),
    )


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
    _fit_option("detector_weights", "--detector-weights",
                help="Local RF-DETR checkpoint (default: rfdetr's published one for the variant, in its cache)."),
    _fit_option("keypoint_weights", "--keypoint-weights",
                help="Local RFDETRKeypointPreview checkpoint (default: rfdetr's published one in its cache)."),
    _fit_option("allow_download", "--allow-download",
                help="Let rfdetr download its published checkpoints into its cache ($RF_HOME) when missing (needs "
                     "internet: a login node; compute nodes often have none)."),
    _fit_option("downscaled_video", "--downscaled-video",
                help="RF-DETR reads frame_aligned_videos/downscaled/448/ (the release's 448p copies; ~20x fewer "
                     "pixels to decode and move than 4K) instead of the full videos."),
    _fit_option("body_fit.iters", "--fit-iters",
                help="Adam iterations of the three fitting stages (A: root, B: + pose, C: + shape)."),
    _fit_option("body_fit.w_bones", "--bone-ranges-weight", type=click.FloatRange(min=0.0),
                help="Weight of the bound on knees and elbows bending sideways (more than 0.25 rad out of their "
                     "hinge's plane) and thighs reaching behind the hip (more than 0.6 rad). 1 turns it on: on "
                     "the scenario benchmarks the fit's landmarks 0.1-0.5 mm closer to the truth in most, 0.3-8.2 "
                     "mm for kneeling wearers (measured with v0.24.0; 0: off, the default; docs/pipeline.md, "
                     "'Knees and elbows bend one way')."),
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
                     "where the SOMA rule found nobody, replace a selection that disagrees (CROSS_VIEW), drop one "
                     "whose tracklet is someone else's (CROSS_VIEW_OTHER)."),
    _fit_option("cross_view_rule.tracklet_error", "--cross-view-tracklet-error", type=click.FloatRange(min=0.0),
                help="A camera's tracklet that lies farther than this (median keypoint distance, in the projected "
                     "body's heights) from the wearer the other views triangulate, in most of its frames, is someone "
                     "else and is neither kept nor selected by the cross-view check (0: off; docs/pipeline.md, "
                     "'Cross-view check')."),
    _fit_option("cross_view_rule.tracklet_two_view_error", "--cross-view-two-view-error",
                type=click.FloatRange(min=0.0),
                help="The tracklet error that takes the place of --cross-view-tracklet-error, for a tracklet's "
                     "selections that cannot be compared in their own frame, in the frames where the other views' "
                     "wearer rests on two views only (at least --cross-view-tracklet-error; docs/pipeline.md, "
                     "'Cross-view check')."),
    _fit_option("selection.other_tracklet_ratio", "--other-tracklet-ratio", type=click.FloatRange(min=0.0),
                help="A camera's tracklet (its detections linked frame to frame by their keypoints) whose head lies "
                     "farther than this x the camera's threshold tau from the Aria anchor in most of its frames is "
                     "someone else, also where it passes in front of the wearer (0: off; docs/pipeline.md, "
                     "'Other people's tracklets')."),
    _fit_option("trust.limb_trust_views", "--limb-trust-views", type=click.IntRange(2, 6),
                help="Supporting views an elbow, wrist, knee or ankle needs to be trusted (fit/joint_trusted). 3, a "
                     "precision mode, trusts 5-76 % fewer limb landmarks and 45-100 % fewer of those more than "
                     "50 mm off (scenario benchmarks; docs/result_file.md, 'Stricter trust')."),
    _fit_option("trust.min_view_angle_deg", "--min-view-angle", type=click.FloatRange(0.0, 90.0),
                help="Degrees two supporting views' rays to a shoulder, hip or limb landmark must lie apart (and "
                     "away from opposite) for it to be trusted: rays that nearly coincide leave it loose along "
                     "them (0: off; docs/result_file.md, 'Two views from nearly one direction')."),
    _fit_option("world_anchor.use_aria", "--aria-world/--calibration-world",
                help="Move the fitted body (with the cameras it was fitted in) by one shift per take toward where "
                     "the Aria trajectory puts the head, as far as the cameras' distance makes their world "
                     "doubtful (court cameras: most of the way; near ones: little; fit/world_shift_m). "
                     "--calibration-world keeps the calibration's world, e.g. to score world MPJPE against "
                     "annotations triangulated with that calibration."),
]  # fmt: skip


def fit_options(f):
    """The options that change a fit (shared by ``fit`` and ``batch``); they become a ``PipelineConfig``."""
    for _, _, opt in reversed(FIT_OPTIONS):
        f = opt(f)
    return f


def _fit_config(kw: dict):
    """The ``PipelineConfig`` of the parsed options (removed from ``kw``); a combination the config rejects
    is a usage error."""
    try:
        return PipelineConfig.from_leaves({path: kw.pop(name) for path, name, _ in FIT_OPTIONS})
    except ValueError as e:
        raise click.UsageError(str(e)) from None


@click.command()
@click.option(
    "--take",
    "take_id",
    required=True,
    help="take_uid or take_name; 'demo' = first demo take.",
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
@fit_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object instead of the summary.",
)
@clean_errors()
def fit(take_id, root, out_dir, until, as_json, **kw) -> None:
    """Fit one take: load -> anchor -> detect -> keypoints -> associate -> triangulate -> fit ->
    motion -> evaluate, and write <out>/<take_uid>.h5 with two PNGs beside it."""
    cfg = _fit_config(kw)
    if until is not None and until not in STAGES:
        raise click.BadParameter(
            f"unknown stage {until!r}; stages: {', '.join(STAGES)}",
            param_hint="--until",
        )
    if root is None:
        root = ensure_demo_dataset(progress=not as_json)
        if take_id == "demo":
            take_id = EgoExoDataset(root).takes()[0].take_uid
    log = None if as_json else click.echo
    outcome = run_take(root, take_id, writable_folder(out_dir), cfg, until=until, log=log, progress=not as_json)
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
    if s.get("trusted_share") and s["trusted_share"].get("torso") is not None:
        parts = ", ".join(f"{k} {100 * v:.1f} %" for k, v in s["trusted_share"].items())
        click.echo(f"landmarks trusted in the valid frames: {parts} (fit/joint_trusted)")
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


@click.command()
@click.option(
    "--root",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Dataset root.",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Results folder.",
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
@click.option(
    "--executor",
    default="local",
    show_default=True,
    type=click.Choice(["local", "ray", "slurm"]),
)
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
@click.option(
    "--retries",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Retry failed takes N times.",
)
@click.option("--force", is_flag=True, help="Recompute takes whose results are complete.")
@click.option(
    "--ray-address",
    default=None,
    help="Connect to an existing Ray cluster (default: start a local one).",
)
@click.option("--slurm-partition", default=None)
@click.option(
    "--slurm-time",
    "slurm_time_min",
    default=60,
    show_default=True,
    type=int,
    help="Minutes per take.",
)
@click.option(
    "--slurm-local",
    is_flag=True,
    help="Run the Slurm path with submitit's local executor (no cluster).",
)
@fit_options
@clean_errors()
def batch(root, out_dir, takes_file, split, all_takes, executor, workers, cpus_per_task, gpus_per_task, takes_per_task,
          retries, force,
          ray_address, slurm_partition, slurm_time_min, slurm_local, **kw) -> None:  # fmt: skip
    """Fit many takes, one task per take, on a local process pool, Ray or Slurm (submitit).

    Idempotent: complete results made with the same configuration and motionkit version are skipped
    (--force recomputes). Every attempt is recorded in <out>/manifest.jsonl; a failing take never
    stops the others.
    """
    if sum([takes_file is not None, split is not None, all_takes]) != 1:
        raise click.UsageError("choose exactly one of --takes FILE, --split NAME, --all")
    ds = EgoExoDataset(root)
    if takes_file is not None:
        ids = [ln.strip() for ln in takes_file.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
        uids = [ds.take(i).uid for i in ids]
    else:
        infos = ds.takes(split)
        excluded = [t.take_name for t in infos if t.excluded_scenario]
        if excluded:  # the same rule as eval: the benchmark leaves these scenarios out
            click.echo(
                f"skipping {len(excluded)} take(s) of excluded scenarios: {', '.join(excluded)}",
                err=True,
            )
        uids = [t.take_uid for t in infos if not t.excluded_scenario]
    if not uids:
        raise click.ClickException("no takes selected")
    fc = _fit_config(kw)
    if gpus_per_task is None:
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
    bar = tqdm(total=len(uids), desc=f"batch ({executor})", unit="take")  # its ETA counts finished takes
    finished, failed = set(), set()

    def on_record(rec):
        failed.discard(rec["take"])
        if rec["status"] == "failed":
            failed.add(rec["take"])
        if rec["final"] and rec["take"] not in finished:
            finished.add(rec["take"])
            bar.update(1)
        running = sum(1 for _ in (Path(out_dir) / RUNNING_DIR).glob("*.json"))  # the workers' markers
        retrying = f", to retry {len(failed - finished)}" if failed - finished else ""
        bar.set_postfix_str(f"done {len(finished - failed)}, failed {len(finished & failed)}{retrying}, "
                            f"running {running}")  # fmt: skip

    try:
        summary = run_batch(root, writable_folder(out_dir), uids, fc, bc, on_record=on_record)
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


@click.command()
@click.option(
    "--cuda/--no-cuda",
    "build_cuda",
    default=None,
    help="Also build the CUDA operators (default: where a GPU is visible).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def doctor(build_cuda, as_json) -> None:
    """Where fits run here: torch/CUDA/GPU details, the fused operators of motionkit/kernels/csrc/ (builds them on
    first use; says why they are unavailable and the torch path is used), and the RF-DETR checkpoints found
    in rfdetr's cache."""
    rep = {**environment_report(build_cuda), "detector_checkpoints": checkpoints_report()}
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
    ck = rep["detector_checkpoints"]
    if ck["rfdetr"] is None:
        click.echo("RF-DETR: rfdetr not installed (pip install 'motionkit[detect]')")
    else:
        click.echo(f"RF-DETR {ck['rfdetr']} checkpoints, looked in {ck['cache']} ($RF_HOME):")
        for kind, c in ck["checkpoints"].items():
            state = "found" if c["found"] else "missing (--allow-download fetches it)"
            click.echo(f"  {kind:<9} {c['file']}: {state}")


@click.command("status")
@click.argument("out_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print batch_report.json's content instead of the tables.")
@clean_errors()
def status(out_dir, as_json) -> None:
    """What a batch writing into OUT_DIR has done so far (or did): outcomes by reason, seconds per stage,
    peak memory per worker, devices, coverage per split and scenario; read from its manifest, no lock."""
    info_path = out_dir / "batch.json"
    info = read_json(info_path) if info_path.is_file() else {}
    if not (out_dir / "manifest.jsonl").is_file():
        raise click.ClickException(f"{out_dir}: no manifest.jsonl (not a motionkit batch folder)")
    rep = batch_report(out_dir, info.get("root"), info.get("takes"))
    click.echo(json.dumps(rep) if as_json else report_markdown(rep))
