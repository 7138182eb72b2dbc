"""Options of one take's run (``motionkit fit``): one tree of dataclasses that owns every setting that
can change a result, each default written once (in the dataclass of the step that uses it). The hash
of the whole tree, less the execution options, decides whether earlier outputs are reused."""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from motionkit.body.fitting import KERNEL_CHOICES, BodyFitConfig
from motionkit.body.quality import TrustConfig
from motionkit.body.world_anchor import WorldAnchorConfig
from motionkit.conventions import DEFAULT_FIT_FPS
from motionkit.detect.association import AssociationConfig
from motionkit.detect.crossview import CrossViewConfig
from motionkit.detect.wearer import ASSOCIATION_MODES
from motionkit.geometry.swaps import SwapConfig
from motionkit.geometry.triangulation import TriangulationConfig
from motionkit.pipeline.fit_inputs import ObservationWeighting

KERNEL_MODES = KERNEL_CHOICES
# leaves (dotted paths) that decide where and how the run computes, not what: left out of the config
# hash, so that a result fitted on a GPU is reused on a CPU and the other way round. The fit's own
# device and kernels come from the top-level ones (``prepare_fit``).
EXECUTION_OPTIONS = (
    "device",
    "kernels",
    "allow_download",
    "body_fit.device",
    "body_fit.kernels",
    "body_fit.cuda_graphs",
    "body_fit.max_batch_frames",
)
# leaves that moved (old dotted path -> new): ``from_dict`` still reads configs written before (0.10.0)
MOVED_LEAVES = {"body_fit.max_gap_s": "trust.max_gap_s", "body_fit.min_seen_run_s": "trust.min_seen_run_s"}
# keyword shortcuts of the constructor (and of the CLI's options) for leaves inside the sub-configs
SHORTCUTS = {
    "fit_iters": "body_fit.iters",
    "refine_cameras": "body_fit.refine_cameras",
    "conf_power": "weighting.conf_power",
    "size_power": "weighting.size_power",
}


@dataclass
class PipelineConfig:
    """Options of ``motionkit fit`` and ``motionkit batch``.

    Run-level: ``fps`` fit grid rate; ``timesync_offset``: take frame ``i`` -> timesync row ``start +
    offset + i``; ``body_model``: SMPL-X file or folder (None: the synthetic model); ``device``: torch
    device of detection and fit (``auto``: CUDA when available); ``kernels``: ``auto`` | ``torch`` |
    ``fused`` operators of the fit (docs/kernels.md); ``detector``: ``auto`` | ``observations`` |
    ``annotation`` | ``rfdetr`` and the RF-DETR options; ``association``: the wearer rule (docs/pipeline.md,
    "associate"); ``cross_view``: check each view's wearer against the one the other views triangulate.

    Sub-configs, one per step (their fields are documented where they are used): ``selection`` (the
    SOMA rule, ``detect.association``), ``cross_view_rule`` (``detect.crossview``), ``swaps``
    (``geometry.swaps``), ``triangulation`` (``geometry.triangulation``), ``weighting`` (observation
    weights, ``pipeline.fit_inputs``), ``body_fit`` (``body.fitting``), ``trust`` (support, validity and
    per-joint trust, ``body.quality``).

    The constructor also takes ``fit_iters``, ``refine_cameras``, ``conf_power`` and ``size_power``
    (``SHORTCUTS``), which set those leaves of the sub-configs; they read back as properties. They are
    not fields, so ``dataclasses.replace(cfg, body_fit=...)`` keeps the sub-config it is given.
    """

    fps: float = DEFAULT_FIT_FPS
    timesync_offset: int = 1
    body_model: str | None = None
    device: str = "auto"
    kernels: str = BodyFitConfig.kernels
    detector: str = "auto"  # auto | observations | annotation | rfdetr
    detector_variant: str = "nano"
    detector_weights: str | None = None
    keypoint_weights: str | None = None
    allow_download: bool = False  # let rfdetr fetch its published checkpoints (an execution option)
    detector_threshold: float = 0.5
    downscaled_video: bool = False
    association: str = "soma"  # soma | cylinder | soma+cylinder (the cylinder rule where SOMA finds nobody)
    cross_view: bool = True
    selection: AssociationConfig = field(default_factory=AssociationConfig)
    cross_view_rule: CrossViewConfig = field(default_factory=CrossViewConfig)
    swaps: SwapConfig = field(default_factory=SwapConfig)
    triangulation: TriangulationConfig = field(default_factory=TriangulationConfig)
    weighting: ObservationWeighting = field(default_factory=ObservationWeighting)
    body_fit: BodyFitConfig = field(default_factory=BodyFitConfig)
    trust: TrustConfig = field(default_factory=TrustConfig)
    world_anchor: WorldAnchorConfig = field(default_factory=WorldAnchorConfig)

    def __post_init__(self) -> None:
        if self.association not in ASSOCIATION_MODES:
            raise ValueError(f"association must be one of {', '.join(ASSOCIATION_MODES)}; got {self.association!r}")
        if self.kernels not in KERNEL_MODES:
            raise ValueError(f"kernels must be one of {', '.join(KERNEL_MODES)}; got {self.kernels!r}")
        _check_numbers(self)

    def to_dict(self) -> dict:
        """Every leaf, nested as the tree is (JSON-ready but for tuples)."""
        return asdict(self)

    def result_dict(self) -> dict:
        """``to_dict`` without the ``EXECUTION_OPTIONS``: what the config hash covers."""
        d = asdict(self)
        for path in EXECUTION_OPTIONS:
            *parents, leaf = path.split(".")
            node = d
            for p in parents:
                node = node[p]
            node.pop(leaf)
        return d

    @classmethod
    def from_leaves(cls, leaves: dict[str, Any]) -> PipelineConfig:
        """A config with the leaves at the given dotted paths set and every other leaf at its default."""
        cfg = cls()
        for path, value in leaves.items():
            _set_leaf(cfg, path, value)
        _check(cfg)  # once all are set: a sub-config's rule may tie two of its leaves
        return cfg

    @classmethod
    def from_dict(cls, d: dict) -> PipelineConfig:
        """Inverse of ``to_dict`` (JSON turns tuples into lists; sub-configs may be partial; leaves of
        earlier versions that moved, ``MOVED_LEAVES``, are read at their new place)."""
        d = {k: dict(v) if isinstance(v, dict) else v for k, v in d.items()}
        for old, new in MOVED_LEAVES.items():
            (old_parent, old_leaf), (new_parent, new_leaf) = old.split("."), new.split(".")
            if old_leaf in d.get(old_parent, {}):
                d.setdefault(new_parent, {}).setdefault(new_leaf, d[old_parent].pop(old_leaf))
        return _from_dict(cls, d)


def _set_leaf(cfg: Any, path: str, value: Any) -> None:
    """Set the leaf at dotted ``path`` of the top config ``cfg`` (frozen sub-configs are replaced, not
    mutated); a path that names no leaf is a ``ValueError``."""
    if path not in config_leaves(cfg):
        raise ValueError(f"no option {path!r} in {type(cfg).__name__}")
    _replace_leaf(cfg, path, value)


def _replace_leaf(cfg: Any, path: str, value: Any) -> None:
    head, _, rest = path.partition(".")
    if not rest:
        object.__setattr__(cfg, head, value)
        return
    child = getattr(cfg, head)
    child = copy.copy(child)  # a copy: sub-configs may be shared defaults (checked later, ``_check``)
    _replace_leaf(child, rest, value)
    object.__setattr__(cfg, head, child)


def _check(cfg: Any) -> None:
    """Run the ``__post_init__`` checks of ``cfg`` and of every sub-config below it, innermost first."""
    for f in dataclasses.fields(cfg):
        child = getattr(cfg, f.name)
        if dataclasses.is_dataclass(child):
            _check(child)
    if hasattr(cfg, "__post_init__"):
        cfg.__post_init__()


def _from_dict(cls: type, d: dict) -> Any:
    defaults = cls()
    kw = {}
    for f in dataclasses.fields(cls):
        if f.name not in d:
            continue
        value, default = d[f.name], getattr(defaults, f.name)
        if dataclasses.is_dataclass(default) and isinstance(value, dict):
            value = _from_dict(type(default), value)
        elif isinstance(default, tuple) and isinstance(value, list):
            value = tuple(value)
        kw[f.name] = value
    unknown = set(d) - {f.name for f in dataclasses.fields(cls)} - (set(SHORTCUTS) if cls is PipelineConfig else set())
    if unknown:
        raise ValueError(f"unknown {cls.__name__} option(s): {', '.join(sorted(unknown))}")
    kw.update({k: v for k, v in d.items() if cls is PipelineConfig and k in SHORTCUTS})
    return cls(**kw)


def _check_numbers(cfg: PipelineConfig) -> None:
    """Every number of the tree (weights, thresholds, sigmas, counts, durations; in tuples too) is finite
    and not negative, and ``fps`` is positive: a ``ValueError`` naming the leaf. No leaf means anything
    below zero (each turns its rule off at 0), and a sign typo would otherwise fit quietly with the
    term reversed."""
    for path, value in config_leaves(cfg).items():
        for x in value if isinstance(value, tuple) else (value,):
            if isinstance(x, bool) or not isinstance(x, int | float):
                continue
            if not (math.isfinite(x) and x >= 0):
                raise ValueError(f"{path} must be a finite number >= 0; got {value!r}")
    if not cfg.fps > 0:
        raise ValueError(f"fps must be > 0; got {cfg.fps!r}")


def config_leaves(cfg: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf of a config tree by dotted path: ``{"body_fit.iters": (100, 200, 150), ...}``."""
    out = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            out.update(config_leaves(value, f"{prefix}{f.name}."))
        else:
            out[prefix + f.name] = value
    return out


def with_leaf(cfg: PipelineConfig, path: str, value: Any) -> PipelineConfig:
    """A copy of ``cfg`` with the leaf at ``path`` set (validated as the constructor validates)."""
    new = dataclasses.replace(cfg)
    _set_leaf(new, path, value)
    _check(new)
    return new


def _shortcut(path: str) -> property:
    def get(self):
        value = self
        for p in path.split("."):
            value = getattr(value, p)
        return value

    return property(get, doc=f"``{path}``")


def _with_shortcuts(fields_init):
    """The dataclass ``__init__`` plus the ``SHORTCUTS`` keywords. They are no fields (an ``InitVar``
    would be: ``dataclasses.replace`` reads each one back through its property and passes it on, so
    ``replace(cfg, body_fit=...)`` would undo the given sub-config's leaf with the old value)."""

    @functools.wraps(fields_init)
    def __init__(self, *args, **kwargs) -> None:
        given = {name: kwargs.pop(name) for name in SHORTCUTS if name in kwargs}
        fields_init(self, *args, **kwargs)
        for name, value in given.items():
            if value is not None:
                _set_leaf(self, SHORTCUTS[name], tuple(value) if name == "fit_iters" else value)
        if given:
            _check(self)

    return __init__


PipelineConfig.__init__ = _with_shortcuts(PipelineConfig.__init__)
for _name, _path in SHORTCUTS.items():  # the shortcuts read back as properties
    setattr(PipelineConfig, _name, _shortcut(_path))
