"""The config tree: every leaf that can change a result is in the reuse hash, every CLI option sets a
leaf and shows its dataclass default, and the tree survives JSON."""

from __future__ import annotations

import dataclasses
import json

import click
import pytest

from motionkit.body.fitting import BodyFitConfig
from motionkit.cli import main
from motionkit.cli.fit import FIT_OPTIONS
from motionkit.data.store import config_hash
from motionkit.pipeline.config import (
    EXECUTION_OPTIONS,
    MOVED_LEAVES,
    SHORTCUTS,
    PipelineConfig,
    config_leaves,
    with_leaf,
)
from motionkit.pipeline.fit_inputs import ObservationWeighting

# values a leaf can take besides its default, for leaves whose type alone does not say (choices)
CHOICES = {
    "kernels": "torch",
    "detector": "rfdetr",
    "detector_variant": "small",
    "association": "cylinder",
    "triangulation.residual_stat": "max",
    "body_fit.symmetric_limbs_from": "B",
    "body_fit.kernels": "torch",
    "body_fit.device": "cuda",
}


def _others(path: str, value) -> list:
    """Values of the leaf at ``path`` other than ``value`` (some may be refused by the config's checks)."""
    if path in CHOICES:
        return [CHOICES[path]]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1]
    if isinstance(value, float):
        return [value * 1.5 + 0.125, value * 0.5]
    if isinstance(value, tuple):
        return [tuple(x + 1 if isinstance(x, int) else x * 1.5 for x in value)]
    if value is None or isinstance(value, str):
        return ["other"]
    raise AssertionError(f"no other value for {path} = {value!r}")


def _changed(base: PipelineConfig, path: str, value) -> PipelineConfig:
    for other in _others(path, value):
        try:
            return with_leaf(base, path, other)
        except ValueError:
            continue
    raise AssertionError(f"no valid other value for {path}")


def test_every_leaf_changes_the_hash_unless_it_is_an_execution_option():
    base = PipelineConfig()
    leaves = config_leaves(base)
    assert len(leaves) > 80  # the whole tree, sub-configs included
    h0 = config_hash(base.result_dict())
    unchanged = []
    for path, value in leaves.items():
        changed = _changed(base, path, value)
        assert config_leaves(changed)[path] != value
        if config_hash(changed.result_dict()) == h0:
            unchanged.append(path)
    assert sorted(unchanged) == sorted(EXECUTION_OPTIONS)


def test_the_tree_round_trips_through_json():
    cfg = with_leaf(PipelineConfig(fit_iters=(5, 10, 5), conf_power=2.0), "body_fit.camera_refine.iters", 7)
    back = PipelineConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert back == cfg and back.body_fit.camera_refine.iters == 7
    with pytest.raises(ValueError, match="unknown PipelineConfig option"):
        PipelineConfig.from_dict({"no_such_option": 1})


@pytest.mark.parametrize(
    ("path", "value"),
    [("body_fit.w_bones", -1.0), ("trust.max_gap_s", float("nan")), ("body_fit.w_3d", (0.1, -0.01)),
     ("swaps.min_error_px", float("inf")), ("body_fit.second_pass_rounds", -2), ("fps", 0.0)],
)  # fmt: skip
def test_a_negative_or_non_finite_number_is_refused_with_its_leaf(path, value):
    # every rule turns off at 0; below it a weight would reverse its term and fit quietly
    refused = path.replace(".", r"\.") + " must be"
    with pytest.raises(ValueError, match=refused):
        with_leaf(PipelineConfig(), path, value)
    with pytest.raises(ValueError, match=refused):
        PipelineConfig.from_leaves({path: value})
    head, _, leaf = path.rpartition(".")
    nested = {head: {leaf: list(value) if isinstance(value, tuple) else value}} if head else {leaf: value}
    with pytest.raises(ValueError, match=refused):
        PipelineConfig.from_dict(nested)


def test_zeros_and_the_defaults_pass_the_number_check():
    # zero turns a rule off and is allowed, in a tuple too; the defaults come back through JSON unrefused
    zeroed = with_leaf(with_leaf(PipelineConfig(), "body_fit.w_floor", 0.0), "body_fit.w_3d", (0.1, 0.0))
    assert zeroed.body_fit.w_floor == 0.0 and zeroed.body_fit.w_3d == (0.1, 0.0)
    assert PipelineConfig.from_dict(json.loads(json.dumps(zeroed.to_dict()))) == zeroed


@pytest.mark.parametrize("path", ["body_fit.no_such_leaf", "no_such_option", "body_fit", "fps.x"])
def test_setting_a_path_that_names_no_leaf_is_an_error(path):
    # a mistyped leaf must not become an attribute outside the tree (and outside the reuse hash)
    with pytest.raises(ValueError, match=f"no option '{path}' in PipelineConfig"):
        with_leaf(PipelineConfig(), path, 1)
    with pytest.raises(ValueError, match=f"no option '{path}' in PipelineConfig"):
        PipelineConfig.from_leaves({path: 1})


def test_configs_written_before_a_leaf_moved_read_it_at_its_new_place():
    old = {"body_fit": {"max_gap_s": 0.3, "min_seen_run_s": 0.2, "iters": [5, 10, 5]}}  # as 0.9.x wrote them
    cfg = PipelineConfig.from_dict(old)
    assert (cfg.trust.max_gap_s, cfg.trust.min_seen_run_s, cfg.body_fit.iters) == (0.3, 0.2, (5, 10, 5))
    assert old["body_fit"]["max_gap_s"] == 0.3  # the caller's dict is left as it was
    assert set(MOVED_LEAVES.values()) <= set(config_leaves(PipelineConfig()))


def test_shortcuts_set_and_read_the_leaves_inside_the_tree():
    cfg = PipelineConfig(fit_iters=(5, 10, 5), refine_cameras=False, conf_power=2.0, size_power=0.0)
    assert cfg.body_fit.iters == cfg.fit_iters == (5, 10, 5)
    assert cfg.body_fit.refine_cameras is cfg.refine_cameras is False
    assert (cfg.weighting.conf_power, cfg.weighting.size_power) == (2.0, 0.0)
    assert set(SHORTCUTS) == {"fit_iters", "refine_cameras", "conf_power", "size_power"}
    assert PipelineConfig().body_fit.iters == (100, 200, 150)  # the default is not shared between configs
    with pytest.raises(ValueError, match="conf_power"):
        PipelineConfig(conf_power=-1.0)
    with pytest.raises(ValueError, match="association"):
        PipelineConfig(association="largest")


def test_replacing_a_sub_config_keeps_its_leaves_and_shortcuts_still_replace():
    """``dataclasses.replace`` with a new sub-config keeps that sub-config's values (with the shortcuts
    as init-only fields it read them back from the old tree and set them again)."""
    cfg = PipelineConfig(refine_cameras=False, conf_power=2.0)
    new = dataclasses.replace(cfg, body_fit=BodyFitConfig(iters=(1, 2, 3)), weighting=ObservationWeighting(1.0))
    assert new.body_fit.refine_cameras is new.refine_cameras is True and new.fit_iters == (1, 2, 3)
    assert new.conf_power == 1.0 and cfg.conf_power == 2.0 and cfg.refine_cameras is False
    assert config_hash(new.result_dict()) != config_hash(cfg.result_dict())
    again = dataclasses.replace(new, refine_cameras=False, device="cpu")
    assert again.body_fit.refine_cameras is False and again.body_fit.iters == (1, 2, 3) and again.device == "cpu"


@pytest.mark.parametrize("command", ["fit", "batch"])
def test_cli_options_set_config_leaves_with_the_dataclass_defaults(command):
    leaves = config_leaves(PipelineConfig())
    cmd = main.get_command(click.Context(main), command)
    params = {p.name: p for p in cmd.params if isinstance(p, click.Option)}
    for path, name, _ in FIT_OPTIONS:
        assert path in leaves, path
        default = params[name].default
        expected = leaves[path]
        if isinstance(expected, tuple):
            expected = ",".join(map(str, expected))
        assert default == expected, (name, default, expected)
