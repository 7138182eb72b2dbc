"""The stage runner: --until, reuse of earlier stages, what invalidates reuse, failures recorded."""

from __future__ import annotations

import json
import shutil
import warnings

import h5py
import numpy as np
import pytest

import motionkit.pipeline.runner as runner
from motionkit.body.world_anchor import shifted_cameras
from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.store import read_result
from motionkit.geometry.triangulation import TriangulationConfig
from motionkit.pipeline import STAGES, PipelineConfig, build_fit_inputs, is_complete, run_fit
from motionkit.pipeline.config import with_leaf

FAST = PipelineConfig(fit_iters=(5, 10, 5))


@pytest.fixture(scope="module")
def take_uid(synth_root):
    return EgoExoDataset(synth_root).takes()[0].take_uid


def test_until_then_resume_reuses_earlier_stages(synth_root, take_uid, tmp_path):
    first = run_fit(synth_root, take_uid, tmp_path, FAST, until="associate", progress=False, plot=False)
    assert first.result.stages == ["load", "anchor", "detect", "keypoints", "associate"]
    assert not is_complete(tmp_path, take_uid, FAST)
    second = run_fit(synth_root, take_uid, tmp_path, FAST, progress=False, plot=False)
    assert second.reused == ["load", "anchor", "detect", "keypoints", "associate"]
    assert second.result.stages == list(STAGES)
    assert is_complete(tmp_path, take_uid, FAST)
    stored = read_result(second.path)
    assert stored.fps == FAST.fps and stored.stages == list(STAGES)


def test_other_config_or_version_is_not_reused(synth_root, take_uid, tmp_path, monkeypatch):
    run_fit(synth_root, take_uid, tmp_path, FAST, until="anchor", progress=False, plot=False)
    other = run_fit(synth_root, take_uid, tmp_path, PipelineConfig(fit_iters=(5, 10, 6)), until="anchor",
                    progress=False, plot=False)  # fmt: skip
    assert other.reused == []
    monkeypatch.setattr(runner, "__version__", "0.0.0-other")
    assert runner.reusable_result(other.path, PipelineConfig(fit_iters=(5, 10, 6))) is None


def test_failure_is_recorded_in_the_result_file(synth_root, take_uid, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(synth_root, root)
    (root / "observations" / f"{take_uid}.h5").unlink()  # no detections, no videos
    with pytest.raises(DataError, match="no detections"):
        run_fit(root, take_uid, tmp_path / "out", FAST, progress=False, plot=False)
    r = read_result(tmp_path / "out" / f"{take_uid}.h5")
    assert r.attrs["status"] == "failed" and r.attrs["message"].startswith("stage detect:")
    assert r.stages == ["load", "anchor"]


def test_unknown_stage_is_refused_before_anything_is_written(synth_root, take_uid, tmp_path):
    with pytest.raises(ValueError, match="unknown stage"):
        run_fit(synth_root, take_uid, tmp_path, FAST, until="nonsense")
    assert not list(tmp_path.iterdir())


def test_real_dataset_fitted_with_the_synthetic_body_is_warned_about(synth_root, take_uid, tmp_path):
    root = tmp_path / "real"
    shutil.copytree(synth_root, root)
    takes = json.loads((root / "takes.json").read_text())
    for t in takes:
        t.pop("motionkit_synthetic")
    (root / "takes.json").write_text(json.dumps(takes))
    lines = []
    with pytest.warns(UserWarning, match="SYNTHETIC demo body"):
        out = run_fit(
            root, take_uid, tmp_path / "out", FAST, until="load", progress=False, plot=False, log=lines.append
        )
    assert "SYNTHETIC" in read_result(out.path).attrs["warning"] and any("WARNING" in s for s in lines)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the synthetic dataset itself: no such warning
        run_fit(synth_root, take_uid, tmp_path / "out2", FAST, until="load", progress=False, plot=False)


def test_view_outliers_get_no_weight_in_the_fit(synth_root, take_uid, tmp_path):
    r = run_fit(synth_root, take_uid, tmp_path, FAST, until="triangulate", progress=False, plot=False).result
    rig = EgoExoDataset(synth_root).take(take_uid).rig
    assert r["triangulation/view_outlier"].shape == r["association/det_index"].shape
    before = build_fit_inputs(r, rig, 20.0).weights
    found = r["triangulation/view_outlier"].astype(bool)
    assert (before[found] == 0).all()
    flagged = found.copy()
    flagged[10:30, 0] = True
    r.put("triangulation", {"view_outlier": flagged})
    after = build_fit_inputs(r, rig, 20.0).weights
    assert (before[10:30, 0] > 0).any() and (after[10:30, 0] == 0).all()
    np.testing.assert_array_equal(np.delete(after, 0, 1), np.delete(before, 0, 1))
    np.testing.assert_array_equal(after[:10], before[:10])


def test_keypoints_below_the_triangulation_confidence_floor_get_no_weight_in_the_fit(synth_root, take_uid, tmp_path):
    """A keypoint triangulation does not use (confidence under its ``conf_min``) gets no fit weight
    either; the floor comes from the triangulation config, and the weights above it do not change.
    Without the floor such keypoints kept weight only at joints triangulation could not triangulate
    (elsewhere they are no inlier): the hidden joints, where a guess is all there is."""
    r = run_fit(synth_root, take_uid, tmp_path, FAST, until="triangulate", progress=False, plot=False).result
    rig = EgoExoDataset(synth_root).take(take_uid).rig
    conf = r["association/confidence"]
    low = (conf > 0) & (conf < 0.3) & (r["association/det_index"] >= 0)[..., None]
    w = build_fit_inputs(r, rig, 20.0).weights
    assert low.sum() > 20 and (w[low] == 0).all()
    w2 = build_fit_inputs(r, rig, 20.0, triangulation=TriangulationConfig(conf_min=0.0)).weights
    untriangulated = np.broadcast_to((r["triangulation/status"] != 0)[:, None, :], low.shape)
    assert (w2[low & untriangulated] > 0).any() and not (w2[low & ~untriangulated] > 0).any()
    np.testing.assert_array_equal(w[~low], w2[~low])


def test_the_cameras_the_fit_used_are_recorded(synth_root, take_uid, tmp_path):
    rig = EgoExoDataset(synth_root).take(take_uid).rig
    fixed = PipelineConfig(fit_iters=(5, 10, 5), refine_cameras=False)
    r = read_result(run_fit(synth_root, take_uid, tmp_path / "plain", fixed, progress=False, plot=False).path)
    assert not r.group_attrs["fit"]["cameras_refined"]
    # the calibration itself, moved with the fitted body onto the Aria trajectory (near cameras: a few mm)
    shift = r["fit/world_shift_m"]
    assert shift.shape == (3,) and 0 < np.linalg.norm(shift) < 0.01
    np.testing.assert_allclose(r["fit/T_cam_world"], shifted_cameras(rig.T_cam_world, shift), atol=1e-12)
    assert "fit/camera_rotation_deg" not in r.arrays
    # --calibration-world: the same fit, left where the calibration put it
    calib = with_leaf(fixed, "world_anchor.use_aria", False)
    c = read_result(run_fit(synth_root, take_uid, tmp_path / "calib", calib, progress=False, plot=False).path)
    assert (c["fit/world_shift_m"] == 0).all()
    np.testing.assert_array_equal(c["fit/T_cam_world"], rig.T_cam_world)
    moved = (r["joints/coco17"] - c["joints/coco17"]).reshape(-1, 3)
    moved = moved[np.isfinite(moved).all(-1)]  # valid frames
    assert len(moved) and np.abs(moved - shift).max() < 1e-9
    refined = read_result(run_fit(synth_root, take_uid, tmp_path / "refined", FAST, progress=False, plot=True).path)
    assert refined.group_attrs["fit"]["cameras_refined"]
    V = len(rig)
    assert refined["fit/T_cam_world"].shape == (V, 4, 4) and refined["fit/camera_residual_px"].shape == (V, 2)
    moved = np.abs(refined["fit/T_cam_world"] - rig.T_cam_world).max()
    assert 0 < moved and (refined["fit/camera_rotation_deg"] < 1.0).all()


def test_the_cross_view_check_is_a_stage_option(default_root, tmp_path):
    """On realistic takes the check selects the wearer in views the SOMA rule left empty; off, it does not."""
    rescued = wearer = 0
    for info in EgoExoDataset(default_root).takes():
        with h5py.File(default_root / "gt" / f"{info.take_uid}.h5") as g:
            pid = g["detections/person_id"][()]
        for on in (True, False):
            r = run_fit(default_root, info.take_uid, tmp_path / str(on), PipelineConfig(cross_view=on),
                        until="associate", progress=False, plot=False).result  # fmt: skip
            mask = r["association/reason"] == "CROSS_VIEW"
            if not on:
                assert not mask.any()
                continue
            assert (r["association/assoc_conf"][mask] > 0).all()
            rescued += mask.sum()
            wearer += (pid[r["association/det_index"][mask]] == 0).sum()
    # measured 41, 40 the wearer: the other picks a bystander that view 0 had selected (tracked) and the
    # wearer's view 3 triangulated into a body that view 2's bystander fits
    assert rescued >= 20 and wearer >= rescued - 2, (rescued, wearer)
