import numpy as np
import pytest

from motionkit.body.world_anchor import WorldAnchorConfig, aria_world_shift, camera_distance_m, shifted_cameras
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.eval.synthetic_report import read_gt, true_rig
from motionkit.geometry.camera import Camera
from motionkit.geometry.rotations import rotvec_to_matrix
from motionkit.geometry.triangulation import triangulate_naive
from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

CFG = WorldAnchorConfig()


def _head_track(rng, M=400):
    """Eye midpoints of a walk (M, 3) and an Aria CPF track 1 cm off them, with 3 cm of slow drift and jitter."""
    t = np.arange(M) / 20.0
    eyes = np.c_[np.cumsum(rng.normal(0, 0.02, M)), np.cumsum(rng.normal(0, 0.02, M)), 1.6 + 0.02 * np.sin(t)]
    drift = 0.03 / np.sqrt(3) * np.sin(2 * np.pi * t[:, None] / 25.0 + rng.uniform(0, 6, 3))
    cpf = eyes + np.array([0.006, -0.008, 0.0]) + drift + rng.normal(0, 0.002, (M, 3))
    return eyes, cpf


def test_far_cameras_hand_the_world_to_aria_and_near_ones_keep_theirs():
    rng = np.random.default_rng(0)
    eyes, cpf = _head_track(rng)
    usable = np.ones(len(eyes), bool)
    offset = np.array([0.035, -0.02, 0.025])  # where 15-m cameras put the body (calibration error)
    fitted = eyes + offset + rng.normal(0, 0.01, eyes.shape)
    after = np.linalg.norm(offset + aria_world_shift(fitted, cpf, usable, 15.0, CFG))
    assert after < 0.35 * np.linalg.norm(offset)  # measured 0.011 of 0.047 m
    small = np.array([0.003, -0.002, 0.002])  # 2-m cameras: millimetres off; the Aria estimate is worse
    fitted = eyes + small + rng.normal(0, 0.01, eyes.shape)
    shift = aria_world_shift(fitted, cpf, usable, 2.0, CFG)
    assert np.linalg.norm(shift) < 0.002  # measured 1.0 mm: the cpf's 1-cm offset is not taken for the world's


def test_the_shift_ignores_a_minority_of_bad_aria_poses_and_needs_enough_frames():
    rng = np.random.default_rng(1)
    eyes, cpf = _head_track(rng)
    fitted = eyes + np.array([0.04, 0.0, 0.0])
    usable = np.ones(len(eyes), bool)
    clean = aria_world_shift(fitted, cpf, usable, 15.0, CFG)
    bad = cpf.copy()
    bad[rng.random(len(bad)) < 0.3] += 0.5  # a relocalised stretch: 0.5 m off
    assert np.linalg.norm(aria_world_shift(fitted, bad, usable, 15.0, CFG) - clean) < 0.01
    nan_cpf = cpf.copy()
    nan_cpf[::2] = np.nan  # no pose: not used
    assert np.linalg.norm(aria_world_shift(fitted, nan_cpf, usable, 15.0, CFG) - clean) < 0.005
    split = cpf.copy()
    split[::2] += 0.6  # two tracks 0.6 m apart: no offset is consistent with both
    assert (aria_world_shift(fitted, split, usable, 15.0, CFG) == 0).all()
    few = np.zeros(len(eyes), bool)
    few[: CFG.min_frames - 1] = True
    assert (aria_world_shift(fitted, cpf, few, 15.0, CFG) == 0).all()
    assert (aria_world_shift(fitted, cpf, usable, float("nan"), CFG) == 0).all()
    assert (aria_world_shift(fitted, cpf, usable, 15.0, WorldAnchorConfig(use_aria=False)) == 0).all()
    with pytest.raises(ValueError, match="aria_error_m"):
        WorldAnchorConfig(aria_error_m=0.0)


def test_cameras_moved_with_the_world_see_what_they_saw():
    rng = np.random.default_rng(2)
    R = rotvec_to_matrix(rng.normal(0, 1, (3, 3)))
    T_world_cam = np.tile(np.eye(4), (3, 1, 1))
    T_world_cam[:, :3, :3] = R
    T_world_cam[:, :3, 3] = rng.normal(0, 5, (3, 3))
    T_cam_world = np.linalg.inv(T_world_cam)
    shift = np.array([0.03, -0.05, 0.02])
    moved = shifted_cameras(T_cam_world, shift)
    X = rng.normal(0, 1, (50, 3))
    params = np.array([800.0, 800.0, 960.0, 540.0, 0.01, 0.0, 0.0, 0.0])
    for old, new in zip(T_cam_world, moved, strict=True):
        before = Camera("c", 1920, 1080, params, np.linalg.inv(old)).world_to_cam(X)
        after = Camera("c", 1920, 1080, params, np.linalg.inv(new)).world_to_cam(X + shift)
        np.testing.assert_allclose(after, before, atol=1e-12)
    np.testing.assert_array_equal(shifted_cameras(T_cam_world, np.zeros(3)), T_cam_world)


def test_camera_distance_counts_the_supporting_cameras_only():
    centers = np.array([[3.0, 0, 0], [0, 4.0, 0], [0, 0, 20.0]])
    body = np.zeros((4, 3))
    supporting = np.array([[1, 1, 0]] * 4, bool)
    assert camera_distance_m(centers, body, supporting) == pytest.approx(3.5)
    assert np.isnan(camera_distance_m(centers, body, np.zeros((4, 3), bool)))


@pytest.mark.parametrize(("scenario", "seed", "far"), [("soccer", 7, True), ("basketball", 8, True),
                                                        ("generic", 7, False)])  # fmt: skip
def test_the_aria_anchor_brings_the_calibrations_world_toward_the_true_one(tmp_path, scenario, seed, far):
    """Realistic takes: the true landmarks' projections triangulated through the dataset's (imperfect)
    calibration sit 2-4 cm from the truth on courts; moved by the shift from the take's own Aria trajectory
    (drift and jitter included) they sit much nearer, and near cameras' world is not made worse."""
    uids = write_synthetic_dataset(tmp_path, SynthConfig(takes=2, seed=seed, duration=3.0, scenario=scenario))
    for uid in uids:
        take = EgoExoDataset(tmp_path).take(uid)
        truth = read_gt(tmp_path, uid)["landmarks"]
        px = true_rig(read_gt(tmp_path, uid), take.rig).project(truth)
        X = triangulate_naive(px, np.ones(px.shape[:-1]), take.rig)  # the calibration's world
        ts, _ = take.frame_device_ns(np.arange(len(truth)))
        cpf = take.trajectory.head_anchor_at(ts)
        distance = camera_distance_m(take.rig.centers, X[:, 11:13].mean(1), np.ones((len(X), len(take.rig)), bool))
        shift = aria_world_shift(X[:, 1:3].mean(1), cpf.position, cpf.valid, distance, CFG)
        offset = np.nanmean((X - truth)[:, 5:].mean(1), 0)
        before, after = np.linalg.norm(offset) * 1000, np.linalg.norm(offset + shift) * 1000
        # measured (mm): soccer 38 -> 17, 32 -> 9; basketball 27 -> 15, 20 -> 7; generic 10.5 -> 9.3, 8.6 -> 4.3
        if far:
            assert distance > 10 and after < 0.6 * before, (before, after)
        else:
            assert distance < 6 and after < before + 2.0, (before, after)
