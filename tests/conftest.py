"""Shared fixtures: an isolated $MOTIONKIT_HOME and small synthetic datasets generated once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from motionkit.pipeline import PipelineConfig, run_take
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset


@pytest.fixture(scope="session", autouse=True)
def motionkit_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("motionkit_home")
    old = os.environ.get("MOTIONKIT_HOME")
    # compiled operators are cached by source hash: keep them across test sessions (the user's cache)
    os.environ.setdefault("MOTIONKIT_KERNELS_DIR", str(Path(old or "~/.cache/motionkit").expanduser() / "kernels"))
    os.environ["MOTIONKIT_HOME"] = str(home)
    os.environ.pop("MOTIONKIT_BODY_MODEL", None)
    yield home
    if old is None:
        os.environ.pop("MOTIONKIT_HOME", None)
    else:
        os.environ["MOTIONKIT_HOME"] = old


@pytest.fixture(scope="session")
def synth_root(tmp_path_factory) -> Path:
    """Three short takes: take 0 has no extra camera, take 1 a quality-0 camera, take 2 a camera
    missing from gopro_calibs.csv; one portrait camera; NaN gaps in timesync.csv."""
    root = tmp_path_factory.mktemp("synth")
    write_synthetic_dataset(
        root, SynthConfig(takes=3, seed=11, duration=6.0, vertical_camera=True, nan_timesync=True, preset="clean")
    )
    return root


@pytest.fixture(scope="session")
def default_root(tmp_path_factory) -> Path:
    """Two takes with default generator settings (4 landscape cameras, 2 bystanders), 10 s each."""
    root = tmp_path_factory.mktemp("synth_default")
    write_synthetic_dataset(root, SynthConfig(takes=2, seed=5, duration=10.0))
    return root


@pytest.fixture(scope="session")
def basketball_pair(tmp_path_factory) -> Path:
    """Two 10-s realistic basketball takes (seed 6): players who pass in front of the wearer along a
    camera's rays."""
    root = tmp_path_factory.mktemp("basketball6")
    cfg = SynthConfig(takes=2, seed=6, duration=10.0, scenario="basketball", preset="realistic")
    write_synthetic_dataset(root, cfg)
    return root


@pytest.fixture(scope="session")
def fitted_with_videos(tmp_path_factory) -> tuple[Path, str, Path]:
    """A clean 2-s take with rendered videos, fitted: ``(folder, take_uid, result path)``; the dataset is
    ``folder / "ds"``."""
    root = tmp_path_factory.mktemp("fitted_videos")
    cfg = SynthConfig(takes=1, seed=2, duration=2.0, preset="clean", videos=True)
    (uid,) = write_synthetic_dataset(root / "ds", cfg)
    run = run_take(root / "ds", uid, root / "fits", PipelineConfig(device="cpu"), progress=False, plot=False)
    return root, uid, run.path
