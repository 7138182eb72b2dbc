import h5py
import numpy as np
import pytest

from motionkit.common.errors import DataError
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.store import TakeResult
from motionkit.eval.synthetic_report import (
    _weight_checks,
    format_difficulty,
    pooled_checks,
    read_gt,
    selection_checks,
    trust_checks,
    truth_at_samples,
    world_offset_mm,
)
from motionkit.synthetic.scene import OBS_CLEAN


def test_pooled_checks_count_every_observation_once():
    a = {"weight_check_counts": {"far_obs_keeping_weight": [1, 10], "swapped_camera_frames_handled": [9, 10]}}
    b = {"weight_check_counts": {"far_obs_keeping_weight": [0, 90], "swapped_camera_frames_handled": [21, 30]}}
    pooled = pooled_checks([a, b, {"take_uid": "no fit"}])
    # per-take shares 10 % and 0 % (median 5 %); pooled 1 of 100
    assert pooled["far_obs_keeping_weight"] == {"share": 0.01, "count": 1, "of": 100}
    assert pooled["swapped_camera_frames_handled"] == {"share": 0.75, "count": 30, "of": 40}
    assert pooled_checks([{"take_uid": "no fit"}]) == {}
    text = format_difficulty({"takes": [], "median": {}, "pooled": pooled})
    assert "swapped_camera_frames_handled 75.0% (30/40)" in text


def test_selection_checks_count_misses_bystanders_and_junk():
    # 3 grid frames x 2 views; observation rows 0-2 are the wearer, 3 a bystander, 4 a junk box
    person_id = np.array([0, 0, 0, 1, -1])
    det_index = np.array([[0, -1], [3, 1], [4, 2]])  # frame 1 view 0: bystander, frame 2 view 0: junk
    visible = np.array([[True, True], [True, True], [False, True]])
    detected = np.array([[True, False], [True, True], [False, True]])  # view 1 frame 0: detector miss
    out = selection_checks({"association/det_index": det_index}, visible, detected, person_id)
    assert out["selection_counts"] == {
        "wearer_selected_where_visible": [3, 5],
        "wearer_selected_where_detected": [3, 4],
        "selections_not_the_wearer": [2, 5],
    }
    pooled = pooled_checks([out, out, {"weight_check_counts": {"far_obs_keeping_weight": [1, 10]}}])
    assert pooled["wearer_selected_where_detected"] == {"share": 0.75, "count": 6, "of": 8}
    assert pooled["far_obs_keeping_weight"]["of"] == 10


def test_weight_checks_count_the_weight_left_to_someone_else():
    """2 grid frames x 2 views, 17 keypoints each: the wearer everywhere but frame 1 view 1 (a bystander),
    every keypoint 5 px from the truth. The bystander's view keeps weight at 3 keypoints, one of them NaN
    (not an observation): 2 of its 16 observations keep a weight."""
    person_id = np.array([0, 0, 0, 1])
    det_index = np.array([[0, 1], [2, 3]])
    true_px = np.zeros((2, 2, 17, 2))
    kp = true_px + [3.0, 4.0]
    kp[1, 1, 0] = np.nan
    w = np.ones((2, 2, 17))
    w[1, 1, 3:] = 0.0
    res = TakeResult(arrays={"association/det_index": det_index, "association/keypoints": kp, "fit/obs_weight": w})
    out = _weight_checks(res, true_px, np.full((2, 2, 17), OBS_CLEAN), person_id)
    assert out["weight_check_counts"]["other_person_obs_keeping_weight"] == [2, 16]
    near = out["weight_check_counts"]["near_obs_keeping_weight"]
    assert near == [53, 67]  # 3 x 17 of the wearer's, 2 of the bystander's


def test_trust_checks_count_what_they_say():
    rng = np.random.default_rng(0)
    M = 40
    truth = rng.normal(0, 0.3, (M, 17, 3))
    fit = truth + rng.normal(0, 0.002, truth.shape)  # ~3 mm: every frame and joint right ...
    fit[10:14, :, 0] += np.where(np.arange(17) % 2, 0.2, -0.2)  # ... but four frames torn apart (~200 mm PA)
    fit[20, 13:] += [0.08, 0.0, 0.0]  # and one frame's knees and ankles 80 mm off
    valid = np.ones(M, bool)
    valid[12:14] = False  # two of the bad frames marked invalid
    valid[30:] = False  # the last ten frames invalid although fine
    trusted = np.repeat(valid[:, None], 17, 1)
    trusted[20, 15:] = False  # the ankles of frame 20 untrusted, its knees trusted
    fittable = np.full(M, 3)
    fittable[35:] = 1  # the last five frames cannot be fitted
    fittable[10] = 1  # nor frame 10, which is valid and bad
    seen = np.full((M, 17), 3)
    seen[:, 0] = 1  # the nose is never seen by two cameras
    r = TakeResult()
    r.put("grid", {"frame_index": np.arange(M) * 3 // 2}, fps=20.0)
    r.arrays.update({"time_s": np.arange(M) / 20.0, "valid": valid, "fit/coco17_all": fit,
                     "fit/joint_trusted": trusted})  # fmt: skip
    r.put("flags", {"HIGH_REPROJ": np.arange(M) == 10, "STATIC": np.arange(M) == 11})
    out = trust_checks(r, truth, fittable, seen, n_frames=60)
    assert out["false_trust"] == pytest.approx(2 / 28)  # frames 10, 11 valid and bad, of 28 valid
    assert out["missed_failures"] == pytest.approx(1 / 4)  # 11: valid, bad, only STATIC (informational)
    assert out["coverage_fittable"] == pytest.approx(27 / 34)
    t30, t20 = np.arange(60)[:, None] / 30, np.arange(M)[None] / 20  # brute force: a 30 fps frame is covered
    covered = (valid[None] & (t20 - 1 / 40 <= t30) & (t30 < t20 + 1 / 40)).any(1)  # by a valid sample
    assert out["coverage_video_time"] == pytest.approx(covered.mean())
    assert out["valid_unfittable_failures"] == 1
    bad_joints = 2 * 17 + 4 + 2 * 17  # frames 10, 11 (valid), 12, 13 (invalid), knees and ankles of frame 20
    assert out["trust_counts"]["joint_missed_failures"] == [2 * 17 + 2, bad_joints]
    assert out["joint_false_trust"] == pytest.approx((2 * 17 + 2) / (28 * 17 - 2))
    assert out["joint_coverage"] == pytest.approx((28 * 16 - 2) / (40 * 16))
    # per body part: the legs hold frame 20's knees (trusted, bad) and ankles (untrusted, bad), the face
    # the nose that no two cameras see
    c = out["trust_counts"]
    assert c["joint_false_trust:legs"] == [2 * 4 + 2, 28 * 4 - 2]
    assert c["joint_missed_failures:legs"] == [2 * 4 + 2, 4 * 4 + 4]
    assert c["joint_coverage:legs"] == [28 * 4 - 2, 40 * 4]
    assert c["joint_false_trust:face"] == [2 * 5, 28 * 5] and c["joint_coverage:face"] == [28 * 4, 40 * 4]
    text = format_difficulty({"takes": [], "median": {}, "pooled": pooled_checks([out])})
    legs = next(line for line in text.splitlines() if line.startswith("legs "))
    assert "per body part" in text and legs.split() == ["legs", "9.1%", "(10/110)", "50.0%", "(10/20)", "68.8%",
                                                        "(110/160)"]  # fmt: skip
    assert "joint_false_trust:legs" not in text
    assert "joint_coverage_detected" not in out  # without the detections' view of the landmarks
    shown = seen.copy()
    shown[:20, 5:11] = 1  # the arms of the first 20 frames in one detection only (the wearer undetected elsewhere)
    cov = trust_checks(r, truth, fittable, seen, n_frames=60, detected_views=shown)["trust_counts"]
    assert cov["joint_coverage_detected"] == [28 * 16 - 2 - 18 * 6, 40 * 16 - 20 * 6]  # 18 of the 20 frames valid


def test_truth_at_samples_reads_the_truth_at_the_fit_sample_times():
    """At 20 fps every other sample falls half-way between two 30 fps frames: the truth there is the
    mean of the two (a wrist at 3 m/s is 50 mm from either), not the nearest frame's."""
    t30 = np.arange(31) / 30.0
    truth = np.stack([3.0 * t30, np.zeros(31), np.ones(31)], -1)[:, None]  # (31, 1, 3): 3 m/s along x
    pos = np.arange(21) * 1.5  # grid/frame_pos of a 20 fps grid
    got = truth_at_samples(truth, pos)
    np.testing.assert_allclose(got[:, 0, 0], 3.0 * pos / 30.0, atol=1e-12)
    assert got.shape == (21, 1, 3)
    nearest = truth[np.rint(pos).astype(int)]
    assert np.abs(nearest - got).max() == pytest.approx(0.05)  # what the nearest frame got wrong: 50 mm


def test_world_offset_is_what_the_body_shares_and_pa_mpjpe_removes():
    rng = np.random.default_rng(0)
    truth = rng.normal(0, 0.3, (50, 17, 3))
    fit = truth + np.array([0.03, -0.04, 0.0]) + rng.normal(0, 0.01, truth.shape)  # 50 mm off, 10 mm noise
    fit[:, :5] += 0.5  # the face does not count
    fit[10:20] = np.nan  # invalid frames do not count
    assert world_offset_mm(fit, truth) == pytest.approx(50.0, abs=1.0)  # mean of 480 x 12 noisy offsets
    assert np.isnan(world_offset_mm(np.full_like(truth, np.nan), truth))


def test_damaged_ground_truth_is_named_not_a_traceback(synth_root, tmp_path):
    uid = EgoExoDataset(synth_root).takes()[0].take_uid
    (tmp_path / "gt").mkdir()
    copy = tmp_path / "gt" / f"{uid}.h5"
    copy.write_bytes((synth_root / "gt" / f"{uid}.h5").read_bytes())
    assert read_gt(tmp_path, uid)["landmarks"].shape[1:] == (17, 3)
    with h5py.File(copy, "r+") as f:
        del f["wearer/coco17_world"]
    with pytest.raises(DataError, match=r"\.h5: damaged ground truth: no wearer/coco17_world"):
        read_gt(tmp_path, uid)
    copy.write_bytes((synth_root / "gt" / f"{uid}.h5").read_bytes()[:4000])
    with pytest.raises(DataError, match="cannot read HDF5"):
        read_gt(tmp_path, uid)
