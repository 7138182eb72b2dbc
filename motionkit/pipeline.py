"""One take, stage by stage: ``run_fit`` is what ``motionkit fit`` (and every batch task) calls.

Stages, in order (``--until`` stops after one):

``load``
    cameras from ``gopro_calibs.csv`` (quality 1 only), the fit time grid. Group ``cameras``:
    ``params (V, 8)``, ``T_world_cam (V, 4, 4)``, ``size (V, 2)``; attrs ``names`` (JSON list) and
    ``status`` (JSON camera -> ``OK`` / reason). Group ``grid``: ``frame_pos (M,)`` (30 fps frame
    position of each fit sample, float), ``frame_index (M,)`` (nearest 30 fps frame), ``time_s (M,)``.
``anchor``
    Aria CPF head anchor at the processed frames. Group ``aria``: ``device_time_ns (M,)``,
    ``position (M, 3)`` world metres, ``rotation (M, 3, 3)``, ``valid (M,)``, ``reason (M,)``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from motionkit.body.model_file import load_model_file
from motionkit.conventions import TAKE_FPS, fit_grid_frames, nearest_take_frames
from motionkit.data.aria import DEFAULT_CPF_SOURCE
from motionkit.data.egoexo4d import EgoExoDataset, Take
from motionkit.data.errors import DataError
from motionkit.data.store import TakeResult, config_hash, provenance, read_result, result_path, write_result


@dataclass
class FitConfig:
    """Options of ``motionkit fit`` that change results (their hash decides cache reuse)."""

    fps: float = 20.0
    timesync_offset: int = 1
    body_model: str | None = None
    device: str = "cpu"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class StageContext:
    take: Take
    config: FitConfig
    result: TakeResult
    info: dict = field(default_factory=dict)


def stage_load(ctx: StageContext) -> None:
    take = ctx.take
    rig = take.rig
    status = take.camera_status
    ctx.result.put(
        "cameras",
        {"params": rig.params, "T_world_cam": np.stack([c.T_world_cam for c in rig]), "size": rig.sizes},
        names=json.dumps(rig.names),
        status=json.dumps(status),
    )
    pos = fit_grid_frames(take.n_frames, ctx.config.fps)
    ctx.result.put(
        "grid",
        {"frame_pos": pos, "frame_index": nearest_take_frames(pos), "time_s": pos / TAKE_FPS},
        fps=ctx.config.fps,
        n_take_frames=take.n_frames,
    )
    ctx.info["load"] = f"{len(rig)} cameras ({', '.join(rig.names)}), {len(pos)} frames at {ctx.config.fps:g} fps"


def stage_anchor(ctx: StageContext) -> None:
    frames = ctx.result["grid/frame_index"]
    ts, reason = ctx.take.frame_device_ns(frames)
    anchor = ctx.take.trajectory.head_anchor_at(ts)
    reason = np.where((reason == "") & ~anchor.valid, "NO_ARIA_POSE", reason)
    ctx.result.put(
        "aria",
        {
            "device_time_ns": ts,
            "position": anchor.position,
            "rotation": anchor.rotation,
            "valid": anchor.valid,
            "reason": reason.astype(str),
        },
        cpf_source=DEFAULT_CPF_SOURCE,
        T_device_cpf="CAD DVT-S",
    )
    ctx.info["anchor"] = f"head anchor valid on {anchor.valid.mean():.1%} of frames"


STAGES: dict[str, tuple[Callable[[StageContext], None], tuple[str, ...]]] = {
    "load": (stage_load, ("cameras", "grid")),
    "anchor": (stage_anchor, ("aria",)),
}


@dataclass
class FitOutcome:
    path: Path
    result: TakeResult
    timings: dict[str, float]
    info: dict
    reused: list[str]

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
            "fps": r.config.get("fps"),
            "body_model": r.body_model,
            "seconds_per_stage": {k: round(v, 3) for k, v in self.timings.items()},
            "info": self.info,
        }


def run_fit(
    root: str | Path,
    take_id: str,
    out_dir: str | Path,
    config: FitConfig | None = None,
    *,
    until: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> FitOutcome:
    """Run the stages for one take and write ``<out_dir>/<take_uid>.h5``.

    Stage outputs of an existing result file made with the same config hash are reused. A
    ``DataError`` inside a stage is recorded in the result file (``status = "failed"``) and
    re-raised; an unknown take or dataset raises before anything is written.
    """
    config = config or FitConfig()
    if until is not None and until not in STAGES:
        raise ValueError(f"unknown stage {until!r}; stages: {', '.join(STAGES)}")
    ds = EgoExoDataset(root)
    take = ds.take(take_id)
    take.timesync_offset = config.timesync_offset
    path = result_path(out_dir, take.uid)
    cfg = config.to_dict()
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
    previous = None
    if path.is_file():
        try:
            prev = read_result(path)
            if prev.attrs.get("config_hash") == config_hash(cfg) and prev.attrs.get("status") == "ok":
                previous = prev
        except DataError:
            previous = None
    names = list(STAGES)
    if until is not None:
        names = names[: names.index(until) + 1]
    ctx = StageContext(take, config, result)
    timings: dict[str, float] = {}
    reused: list[str] = []
    done: list[str] = []
    say = log or (lambda s: None)
    for name in names:
        fn, groups = STAGES[name]
        t0 = time.perf_counter()
        if previous is not None and name in previous.stages:
            for g in groups:
                result.arrays.update({k: v for k, v in previous.arrays.items() if k.startswith(g + "/")})
                if g in previous.group_attrs:
                    result.group_attrs[g] = dict(previous.group_attrs[g])
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
    write_result(path, result)
    return FitOutcome(path, result, timings, ctx.info, reused)
