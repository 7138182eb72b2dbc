"""The fit stage: what the Aria head anchor adds to the views' validity rule, and the ankles' floor."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from motionkit.body.fitting import FitOutput, fit_take
from motionkit.body.objective import head_turn_residual
from motionkit.body.quality import neck_twist_deg, neck_twisted
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.eval.metrics import pa_mpjpe
from motionkit.eval.synthetic_report import read_gt, truth_at_samples
from motionkit.geometry.interpolation import valid_runs
from motionkit.pipeline import PipelineConfig, run_fit
from motionkit.pipeline.config import with_leaf
from motionkit.pipeline.stages import StageContext, prepare_fit
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

NO_GAPS = with_leaf(
    PipelineConfig(fit_iters=(5, 10, 5)), "trust.max_aria_gap_s", 0.0
)  # no gaps bridged by the Aria (tested on their own)


def _fit(root, uid: str, out, config: PipelineConfig) -> FitOutput:
    """The take's fit under ``config``, before the fit stage judges it (``prepare_fit`` and ``fit_take``, as
    a batched run computes it)."""
    before = run_fit(root, uid, out, config, until="triangulate", progress=False, plot=False)
    job = prepare_fit(StageContext(EgoExoDataset(root).take(uid), config, before.result))
    return fit_take(job.body, job.inputs, job.config)


def _judged(root, uid: str, out, config: PipelineConfig, fitted: FitOutput, fitted_with: PipelineConfig):
    """The result of the take's run under ``config`` with the fit stage handed ``fitted`` (made with
    ``fitted_with``) instead of fitting again: the trust rules do not feed back into the fit, so only
    configs that differ in ``trust`` may share it."""
    differ = {k for k, v in config.result_dict().items() if fitted_with.result_dict()[k] != v}
    assert differ <= {"trust"}, differ
    return run_fit(root, uid, out, config, progress=False, plot=False, prefit=fitted).result


def _limit_between(values: np.ndarray) -> float:
    """A limit halfway across the widest gap among the middle half of the finite ``values``: half of them
    or so on each side, and none near it (the pipeline judges them in float64, the result stores float32)."""
    known = np.sort(values[np.isfinite(values)])
    k = np.argmax(np.diff(known[len(known) // 4 : 3 * len(known) // 4])) + len(known) // 4
    return float(0.5 * (known[k] + known[k + 1]))


@pytest.fixture(scope="module")
def fast_fit(synth_root, tmp_path_factory) -> tuple[str, FitOutput]:
    """The first take of ``synth_root`` fitted once under ``NO_GAPS``; the tests judge it under their rules."""
    uid = EgoExoDataset(synth_root).takes()[0].take_uid
    return uid, _fit(synth_root, uid, tmp_path_factory.mktemp("fast_fit"), NO_GAPS)


def test_frames_whose_fitted_eyes_are_far_from_the_aria_anchor_are_not_valid(synth_root, fast_fit, tmp_path):
    """One fit of the take judged twice, the second time with ``trust.max_eye_anchor_m`` between the fitted
    eyes' distances from the anchor (validity does not feed back into the fit):
    the frames farther than that lose their validity and carry ``EYE_ARIA_FAR``, the others keep theirs;
    with ``trust.max_face_anchor_m`` at half of it, the valid frames farther than that keep their body's
    trust but not their face's. The gaps the Aria holds are off in both fits: whether the Aria holds
    the head in a gap depends on ``trust.max_face_anchor_m`` too."""
    uid, fitted = fast_fit
    base = _judged(synth_root, uid, tmp_path / "a", NO_GAPS, fitted, NO_GAPS)
    eyes = base["fit/coco17_all"][:, [1, 2]].mean(1)  # the fitted eye midpoint, every frame (world metres)
    dist = np.linalg.norm(eyes - base["aria/position_at_sample"], axis=-1)  # NaN where the anchor is unknown
    assert not base["flags/EYE_ARIA_FAR"].any() and (np.nan_to_num(dist) < 0.30).all()  # the default: none here
    valid = base["valid"].astype(bool)
    limit = _limit_between(np.where(valid, dist, np.nan))  # between the valid frames' distances
    far = np.nan_to_num(dist) > limit  # unknown anchor: not far
    cfg = with_leaf(with_leaf(NO_GAPS, "trust.max_eye_anchor_m", limit), "trust.max_face_anchor_m", limit / 2)
    strict = _judged(synth_root, uid, tmp_path / "b", cfg, fitted, NO_GAPS)
    strict_valid = strict["valid"].astype(bool)
    assert (valid & far).sum() > 10 and (valid & ~far).sum() > 10  # both sides of the limit are exercised
    # the default limits: the face at the Aria (eyes within 0.10 m of its anchor, turned within 0.05 m as
    # it is) is trusted in every valid frame, also where fewer than two views support a face landmark
    turn = head_turn_residual(base["fit/coco17_all"], np.arange(17), base["aria/rotation_at_sample"])
    at_aria = valid & (np.nan_to_num(dist, nan=np.inf) <= 0.10) & (np.nan_to_num(turn, nan=np.inf) <= 0.05)
    weak = at_aria[:, None] & (base["fit/joint_support"][:, :5] < 2)
    assert weak.sum() > 80 and base["fit/joint_trusted"][at_aria, :5].all()  # measured: 109 of them
    np.testing.assert_array_equal(strict_valid, valid & ~far)
    np.testing.assert_array_equal(strict["flags/EYE_ARIA_FAR"].astype(bool), far)
    assert np.isnan(strict["joints/coco17"][far]).all()  # what is not valid is not stored
    # nearer than the limit but farther than half of it: valid, the face not trusted, the body as before
    turned = strict_valid & (np.nan_to_num(dist) > limit / 2)
    trusted, base_trusted = strict["fit/joint_trusted"].astype(bool), base["fit/joint_trusted"].astype(bool)
    assert turned.sum() > 5 and not trusted[turned, :5].any() and base_trusted[turned, :5].any()
    np.testing.assert_array_equal(trusted[strict_valid, 5:], base_trusted[strict_valid, 5:])


def test_gaps_the_aria_holds_are_valid_where_the_body_stays_in_place(tmp_path):
    """A mechanic kneeling behind a bike (10-s take), one fit judged with and without
    ``trust.max_aria_gap_s``: the frames the rule adds lie in gaps of at most 1.5 s between the other
    rules' valid frames, where the fitted head sits and turns as the Aria does in every frame, they
    carry ``FEW_CAMS``, and against the truth they are right although most have fewer than two
    fittable views; judged a third time, with the neck's limit under the largest twist in those gaps, drops the
    gap that holds it. Measured: 19 frames added, all with fewer than two fittable views, at most 25 mm off
    (PA-MPJPE against the true landmarks)."""
    root = tmp_path / "ds"
    write_synthetic_dataset(root, SynthConfig(takes=1, seed=8, duration=10.0, scenario="bike_repair"))
    uid = EgoExoDataset(root).takes()[0].take_uid
    fitted = _fit(root, uid, tmp_path / "on", PipelineConfig())
    on = _judged(root, uid, tmp_path / "on", PipelineConfig(), fitted, PipelineConfig())
    off_cfg = with_leaf(PipelineConfig(), "trust.max_aria_gap_s", 0.0)
    off = _judged(root, uid, tmp_path / "off", off_cfg, fitted, PipelineConfig())
    v_on, v_off = on["valid"].astype(bool), off["valid"].astype(bool)
    added = v_on & ~v_off
    assert not (v_off & ~v_on).any() and added.sum() >= 12
    fit = on["fit/coco17_all"]
    eyes = np.linalg.norm(fit[:, [1, 2]].mean(1) - on["aria/position_at_sample"], axis=-1)
    turn = head_turn_residual(fit, np.arange(17), on["aria/rotation_at_sample"])
    for start, stop in valid_runs(~v_off):
        if added[start:stop].any():
            assert added[start:stop].all() and (stop - start) / on.fps <= PipelineConfig().trust.max_aria_gap_s
            assert 0 < start and stop < len(v_off)
            assert (eyes[start:stop] <= 0.10).all() and (turn[start:stop] <= 0.05).all()
    assert on["flags/FEW_CAMS"][added].all()
    gt = read_gt(root, uid)
    err = pa_mpjpe(fit, truth_at_samples(gt["landmarks"], on["grid/frame_pos"]))
    assert np.nanmax(err[added]) < 40.0
    assert (gt["fittable_views"][on["grid/frame_index"]][added] < 2).mean() >= 0.9
    # a gap that holds a head turned past the neck limit is not bridged (``trust.max_neck_twist_deg``, here set
    # between the largest twist in the added frames and the next smaller one of the take): the whole gap goes,
    # and only that gap
    twist = neck_twist_deg(fit)
    top = np.nanmax(twist[added])
    limit = float(0.5 * (top + np.nanmax(np.where(twist < top, twist, np.nan))))
    turned = neck_twisted(fit, limit)
    twist_cfg = with_leaf(PipelineConfig(), "trust.max_neck_twist_deg", limit)
    strict = _judged(root, uid, tmp_path / "twist", twist_cfg, fitted, PipelineConfig())
    held_turned = np.zeros_like(added)
    for start, stop in valid_runs(~v_off):
        held_turned[start:stop] = added[start:stop].any() and turned[start:stop].any()
    assert held_turned.sum() > turned[added].sum()  # the gap holds frames that are not turned themselves
    np.testing.assert_array_equal(strict["valid"].astype(bool), v_on & ~turned & ~held_turned)


def test_the_floor_keeps_a_hidden_leg_from_sinking_down_a_camera_ray(tmp_path):
    """A mechanic kneeling beside a bike (10-s take, seed 4), fitted with and without the ankles' floor
    (``body_fit.w_floor``). Without the floor the fit pushes his right ankle, which one camera supports
    there, down that camera's ray until it lies near the ground, 12 cm lower than the true ankles ever go.
    With the floor the leg stays up: the lowest fitted ankle is within a few cm of the lowest true one,
    and the frames with fewer than two fittable views that are valid are right. Measured: without, the
    lowest ankle 11 mm above the floor; with, 93 mm (the truth's lowest 134 mm), and the worst such frame
    35 mm off (37 mm without)."""
    root = tmp_path / "ds"
    write_synthetic_dataset(root, SynthConfig(takes=1, seed=4, duration=10.0, scenario="bike_repair"))
    uid = EgoExoDataset(root).takes()[0].take_uid
    gt = read_gt(root, uid)
    with h5py.File(root / "gt" / f"{uid}.h5") as f:
        floor = float(f.attrs["floor_z"])
    results = {}
    for name, cfg in (("on", PipelineConfig()), ("off", with_leaf(PipelineConfig(), "body_fit.w_floor", 0.0))):
        results[name] = run_fit(root, uid, tmp_path / name, cfg, progress=False, plot=False).result
    lowest, worst = {}, {}
    for name, r in results.items():
        fit = r["fit/coco17_all"]
        truth = truth_at_samples(gt["landmarks"], r["grid/frame_pos"])
        lowest[name] = fit[:, 15:17, 2].min() - floor
        unfittable = r["valid"].astype(bool) & (gt["fittable_views"][r["grid/frame_index"]] < 2)
        worst[name] = pa_mpjpe(fit, truth)[unfittable].max(initial=0.0)
    true_lowest = truth_at_samples(gt["landmarks"], results["on"]["grid/frame_pos"])[:, 15:17, 2].min() - floor
    assert lowest["off"] < 0.03 and lowest["off"] < true_lowest - 0.1  # the sinking is there without the floor
    assert true_lowest - 0.06 < lowest["on"] < true_lowest + 0.01
    assert worst["on"] < 45.0


def test_frames_whose_fitted_head_is_turned_past_the_neck_limit_are_not_valid(synth_root, fast_fit, tmp_path):
    """One fit of the take judged with ``trust.max_neck_twist_deg`` at the default and amid the fit's own
    neck twists (validity does not feed back into the fit; no Aria-held gaps, which
    ``test_gaps_the_aria_holds_are_valid_where_the_body_stays_in_place`` covers): the frames turned past the
    limit lose their validity, their joints and their trust, the others keep theirs, and ``NECK_TWIST`` marks
    the turned frames, valid or not."""
    uid, fitted = fast_fit
    base = _judged(synth_root, uid, tmp_path / "a", NO_GAPS, fitted, NO_GAPS)
    twist = neck_twist_deg(base["fit/coco17_all"])
    assert not base["flags/NECK_TWIST"].any() and np.nanmax(twist) < 90.0  # the default: none here
    limit = _limit_between(twist)
    turned = neck_twisted(base["fit/coco17_all"], limit)
    cfg = with_leaf(NO_GAPS, "trust.max_neck_twist_deg", limit)
    strict = _judged(synth_root, uid, tmp_path / "b", cfg, fitted, NO_GAPS)
    np.testing.assert_array_equal(strict["flags/NECK_TWIST"].astype(bool), turned)
    valid = base["valid"].astype(bool)
    assert (valid & turned).sum() > 10 and (valid & ~turned).sum() > 10  # both sides of the limit exercised
    np.testing.assert_array_equal(strict["valid"].astype(bool), valid & ~turned)
    assert np.isnan(strict["joints/coco17"][turned]).all() and not strict["fit/joint_trusted"][turned].any()
    np.testing.assert_array_equal(strict["fit/joint_trusted"][~turned], base["fit/joint_trusted"][~turned])
