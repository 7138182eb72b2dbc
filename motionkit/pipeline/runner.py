"""Run the stages of one take (``run_take``), or of several with one batched fit (``run_takes``), reusing
what an earlier run of the same configuration left."""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from motionkit import __version__
from motionkit.body.fitting import FitOutput, fit_takes
from motionkit.body.model_file import load_model_file
from motionkit.body.quality import trust_by_part
from motionkit.common.errors import DataError
from motionkit.data.aria import DEFAULT_CPF_SOURCE
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.store import TakeResult, config_hash, provenance, read_result, result_path, write_result
from motionkit.pipeline.config import PipelineConfig
from motionkit.pipeline.stages import STAGES, StageContext, fit_progress_total, prepare_fit
from motionkit.viz import plot_fit_views, plot_topdown

SYNTHETIC_BODY_ON_REAL_DATA = (
    "this dataset is not synthetic, but it is being fitted with motionkit's SYNTHETIC demo body, not "
    "SMPL-X: the shapes and poses mean nothing for real people. Pass --body-model (or set "
    "$MOTIONKIT_BODY_MODEL) to your SMPL-X model file."
)


def reusable_result(path: Path, config: PipelineConfig) -> TakeResult | None:
    """The result at ``path`` if its stage outputs may be reused for ``config``: it reads, finished
    without failure, and was made with the same configuration hash and motionkit version. ``fit``
    reuses its stages; ``batch`` skips a take whose reusable result holds every stage (``is_complete``).
    """
    if not path.is_file():
        return None
    try:
        prev = read_result(path)
    except DataError:
        return None
    same = (
        prev.attrs.get("status") == "ok"
        and prev.attrs.get("config_hash") == config_hash(config.result_dict())
        and prev.attrs.get("motionkit_version") == __version__
    )
    return prev if same else None


def is_complete(out_dir: str | Path, take_uid: str, config: PipelineConfig) -> bool:
    """A reusable result of this take holding every stage: nothing left to compute."""
    prev = reusable_result(result_path(out_dir, take_uid), config)
    return prev is not None and prev.stages == list(STAGES)


@dataclass
class TakeRun:
    """One take's run: the result file and its contents, seconds per stage (and for ``write`` and ``plot``:
    writing the result file and the previews), the stages' information
    lines, the stages reused from an earlier run, and the plots written."""

    path: Path
    result: TakeResult
    timings: dict[str, float]
    info: dict
    reused: list[str]
    plots: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        r = self.result
        return {
            "take_uid": r.attrs["take_uid"],
            "take_name": r.attrs["take_name"],
            "result": str(self.path),
            "status": r.attrs["status"],
            "message": r.attrs.get("message", ""),
            "stages": r.stages,
            "reused_stages": self.reused,
            "frames": int(len(r["grid/time_s"])) if "grid/time_s" in r.arrays else 0,
            "fps": r.fps if "grid" in r.group_attrs else None,
            "body_model": r.body_model,
            "fit_device": r.attrs.get("fit_device"),
            "fit_kernels": r.attrs.get("fit_kernels"),
            "seconds_per_stage": {k: round(v, 3) for k, v in self.timings.items()},
            "coverage": float(np.mean(r["valid"])) if "valid" in r.arrays else None,
            "trusted_share": trusted_share(r),
            "reprojection_px": float(np.nanmedian(r["reprojection/px"])) if "reprojection/px" in r.arrays else None,
            "pa_mpjpe_mm": float(r["eval/pa_mpjpe_mm"]) if "eval/pa_mpjpe_mm" in r.arrays else None,
            "mpjpe_world_mm": float(r["eval/mpjpe_world_mm"]) if "eval/mpjpe_world_mm" in r.arrays else None,
            "plots": self.plots,
            "info": {k: v for k, v in self.info.items() if k not in ("out_dir", "progress")},
        }


def trusted_share(r: TakeResult) -> dict[str, float | None] | None:
    """Per body part, the share of the valid frames' landmarks a result's fit trusts
    (``body.quality.trust_by_part`` of ``fit/joint_trusted``); None for a result without per-joint trust."""
    return trust_by_part(r["fit/joint_trusted"], r["valid"]) if "fit/joint_trusted" in r.arrays else None


def run_take(
    root: str | Path,
    take_id: str,
    out_dir: str | Path,
    config: PipelineConfig | None = None,
    *,
    until: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    plot: bool = True,
    prefit: FitOutput | None = None,
    video_models: tuple | None = None,
) -> TakeRun:
    """Run the stages for one take and write ``<out_dir>/<take_uid>.h5``.

    ``video_models``: ``(person detector, crop keypoint model)`` objects for ``detector="rfdetr"``
    (``motionkit.detect.topdown`` interfaces; default: RF-DETR from local checkpoints).

    Stage outputs of an existing result file are reused under the rule of ``reusable_result``. A
    ``DataError`` inside a stage is recorded in the result file (``status = "failed"``) and
    re-raised; an unknown take or dataset raises before anything is written.
    """
    config = config or PipelineConfig()
    if until is not None and until not in STAGES:
        raise ValueError(f"unknown stage {until!r}; stages: {', '.join(STAGES)}")
    ds = EgoExoDataset(root)
    take = ds.take(take_id)
    take.timesync_offset = config.timesync_offset
    path = result_path(out_dir, take.uid)
    cfg = config.result_dict()
    body = load_model_file(config.body_model)
    result = TakeResult(
        provenance(
            take_uid=take.uid,
            take_name=take.name,
            dataset_root=str(ds.root),
            body_model=body.identity,
            config=cfg,
            timesync_offset=config.timesync_offset,
            cpf_source=DEFAULT_CPF_SOURCE,
        )
    )
    if body.synthetic and not take.info.raw.get("motionkit_synthetic", False):
        result.attrs["warning"] = SYNTHETIC_BODY_ON_REAL_DATA
        warnings.warn(f"{take.name}: {SYNTHETIC_BODY_ON_REAL_DATA}", stacklevel=2)
        (log or (lambda s: None))(f"WARNING: {SYNTHETIC_BODY_ON_REAL_DATA}")
    previous = reusable_result(path, config)
    names = list(STAGES)
    if until is not None:
        names = names[: names.index(until) + 1]
    ctx = StageContext(take, config, result, info={"out_dir": str(out_dir), "progress": progress})
    if prefit is not None:  # the fit stage stores this output (of a batched fit) instead of fitting
        ctx.info["prefit"] = prefit
    if video_models is not None:
        ctx.info["video_models"] = video_models
    timings: dict[str, float] = {}
    reused: list[str] = []
    done: list[str] = []
    say = log or (lambda s: None)
    for name in names:
        fn, groups = STAGES[name]
        t0 = time.perf_counter()
        if previous is not None and name in previous.stages:
            for g in groups:
                result.arrays.update({k: v for k, v in previous.arrays.items() if k == g or k.startswith(g + "/")})
                if g in previous.group_attrs:
                    result.group_attrs[g] = dict(previous.group_attrs[g])
            if name == "fit":
                for k in ("fit_device", "fit_kernels"):
                    if k in previous.attrs:
                        result.attrs[k] = previous.attrs[k]
            reused.append(name)
            say(f"[{name}] reused from {path.name}")
        else:
            try:
                fn(ctx)
            except DataError as exc:
                result.attrs["status"] = "failed"
                result.attrs["message"] = f"stage {name}: {exc}"
                result.attrs["stages"] = json.dumps(done)
                write_result(path, result)
                raise
            say(f"[{name}] {ctx.info.get(name, 'done')} ({time.perf_counter() - t0:.2f} s)")
        done.append(name)
        timings[name] = time.perf_counter() - t0
    result.attrs["stages"] = json.dumps(done)
    t0 = time.perf_counter()
    write_result(path, result)
    timings["write"] = time.perf_counter() - t0  # the result file and the previews are timed as well
    plots = []
    if "fit" in done and plot:
        t0 = time.perf_counter()
        plots = [
            str(plot_fit_views(result, path.with_suffix(".views.png"))),
            str(plot_topdown(result, path.with_suffix(".topdown.png"))),
        ]
        timings["plot"] = time.perf_counter() - t0
    return TakeRun(path, result, timings, ctx.info, reused, plots)


def run_takes(
    root: str | Path,
    take_ids: list[str],
    out_dir: str | Path,
    config: PipelineConfig | None = None,
    *,
    progress: bool = False,
    plot: bool = True,
) -> list[TakeRun | Exception]:
    """Several takes with one batched fit on one device (``motionkit batch --takes-per-task``): the
    stages before ``fit`` of all takes in parallel threads, one ``fit_takes`` for every take that can
    be fitted, then the remaining stages per take. Each take's result equals ``run_take`` of that take
    alone (independent problems); one entry per take, in order: its ``TakeRun``, or the exception
    that stopped it (recorded in its result file as ``run_take`` does).
    """
    config = config or PipelineConfig()
    ds = EgoExoDataset(root)

    def before_fit(take_id: str):
        try:
            oc = run_take(root, take_id, out_dir, config, until="triangulate", progress=False, plot=False)
            return prepare_fit(StageContext(ds.take(take_id), config, oc.result, info={}))
        except DataError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, min(len(take_ids), os.cpu_count() or 1))) as pool:
        jobs = list(pool.map(before_fit, take_ids))
    ready = [k for k, j in enumerate(jobs) if not isinstance(j, Exception)]
    fitted: dict[int, FitOutput] = {}
    if ready:
        group = [jobs[k] for k in ready]
        bar = tqdm(total=fit_progress_total(group), desc=f"fit x{len(group)}", unit="it", disable=not progress)
        outs = fit_takes(group[0].body, [j.inputs for j in group], group[0].config, progress=bar.update)
        bar.close()
        fitted = dict(zip(ready, outs, strict=True))

    def after_fit(k: int):
        try:  # stages up to triangulate are reused from the file; the fit stage stores the batched output
            return run_take(root, take_ids[k], out_dir, config, progress=False, plot=plot, prefit=fitted.get(k))
        except DataError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, min(len(take_ids), os.cpu_count() or 1))) as pool:
        return list(pool.map(after_fit, range(len(take_ids))))


# the names of motionkit <= 0.5 (``run_fit`` is what the video path and the examples call): kept working
run_fit = run_take
run_fits = run_takes
