"""The fit's starting point: minimal rotations, NaN-aware smoothing in time, missing hips and hidden knees."""

import numpy as np
import pytest
import torch

from motionkit.body.fitting import FACE_KEYPOINTS
from motionkit.body.initial import init_pose, place_hidden_knees, rotation_between, smooth_in_time
from motionkit.body.model import BodyModel
from motionkit.conventions import SMPLX_TO_COCO17


def test_rotation_between():
    a = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    b = np.array([[0.0, 0, 1], [1, 0, 0], [0, 0, -1]])
    R = rotation_between(a, b)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", R[:2], a[:2]), b[:2], atol=1e-12)


def test_smooth_in_time_removes_noise_fills_short_gaps_and_keeps_long_ones():

    rng = np.random.default_rng(0)
    t = np.arange(200) / 20.0
    truth = np.stack([np.sin(0.3 * t), np.cos(0.2 * t), 0.1 * t], 1)
    noisy = truth + rng.normal(0, 0.03, truth.shape)
    noisy[50] = np.nan  # a one-sample gap: filled
    noisy[120:160] = np.nan  # a 2-s gap: stays a gap inside
    sm = smooth_in_time(noisy, 5.0)
    assert np.isfinite(sm[50]).all() and np.isnan(sm[135:145]).all()
    ok = np.isfinite(noisy).all(1) & np.isfinite(sm).all(1)
    err_raw = np.abs(noisy[ok] - truth[ok]).mean()
    err_sm = np.abs(sm[ok] - truth[ok]).mean()
    assert err_sm < 0.35 * err_raw  # theory for sigma 5 frames: 0.24x; measured 0.30x (gaps, ends)
    np.testing.assert_array_equal(smooth_in_time(noisy, 0.0), noisy)


def _rest_legs() -> np.ndarray:
    """Rest joints ``(55, 3)`` whose legs have 0.4 m thighs and 0.45 m shins (SMPL-X hips 1, 2, knees 4, 5,
    ankles 7, 8)."""
    rest = np.zeros((55, 3))
    for hip, knee, ankle, x in ((1, 4, 7, 0.1), (2, 5, 8, -0.1)):
        rest[hip], rest[knee], rest[ankle] = [x, 0, 0], [x, -0.4, 0], [x, -0.85, 0]
    return rest


def test_a_knee_triangulation_missed_starts_in_front_of_its_hip_and_ankle():
    tri = np.full((3, 17, 3), np.nan)
    tri[:, 11] = [0.0, 0.0, 1.0]  # left hip; the right hip (12) is missing
    tri[0, 15] = [0.1, 0.0, 0.4]  # within reach (0.61 m of the hip's 0.85)
    tri[1, 15] = [0.0, 0.0, -0.2]  # beyond it (1.2 m)
    tri[2, 13] = [0.3, 0.1, 0.8]  # a knee triangulation found
    tri[2, 15] = [0.0, 0.0, 0.3]
    tri[:, 16] = [0.5, 0.0, 0.3]  # a right ankle without its hip
    forward = np.tile([0.0, 1.0, 0.0], (3, 1))
    out = place_hidden_knees(tri, forward, _rest_legs())
    knee = out[0, 13]
    assert abs(np.linalg.norm(knee - tri[0, 11]) - 0.4) < 1e-9  # a thigh from the hip ...
    assert abs(np.linalg.norm(knee - tri[0, 15]) - 0.45) < 1e-9  # ... and a shin from the ankle ...
    hip_to_ankle = tri[0, 15] - tri[0, 11]
    off_line = knee - tri[0, 11] - hip_to_ankle * ((knee - tri[0, 11]) @ hip_to_ankle) / (hip_to_ankle @ hip_to_ankle)
    np.testing.assert_allclose(off_line / np.linalg.norm(off_line), [0, 1, 0], atol=1e-9)  # ... in front
    # beyond reach: on the line, splitting it as the bones do
    np.testing.assert_allclose(out[1, 13], [0.0, 0.0, 1.0 - 1.2 * 0.4 / 0.85], atol=1e-12)
    np.testing.assert_array_equal(out[2], tri[2])  # found knees stay
    assert np.isnan(out[:, 14]).all()  # no hip: no knee
    assert np.isnan(tri[0, 13]).all()  # the input is not changed


@pytest.fixture(scope="module")
def body() -> BodyModel:
    return BodyModel(vertex_keypoints=FACE_KEYPOINTS)


def _start_joints(body: BodyModel, global_orient: np.ndarray, body_pose: np.ndarray,
                  transl: np.ndarray) -> np.ndarray:  # fmt: skip
    """SMPL-X joints ``(55 + K, 3)`` of the mean-shape body at the first frame of an initial pose
    (``init_pose``'s output)."""
    first = (torch.as_tensor(a[0], dtype=torch.float32) for a in (global_orient, body_pose, transl))
    with torch.no_grad():
        return body(torch.zeros(10), *first).double().numpy()


def _kneeling(body: BodyModel) -> np.ndarray:
    """COCO-17 joint centres ``(1, 17, 3)`` of the mean-shape body kneeling (thighs forward, shins folded
    back) at the origin."""
    pose = torch.zeros(21, 3)
    pose[0, 0] = pose[1, 0] = -1.4  # hips flexed (thighs forward, about the body's x axis)
    pose[3, 0] = pose[4, 0] = 2.0  # knees flexed (shins back)
    with torch.no_grad():
        joints = body(torch.zeros(10), torch.zeros(3), pose).double().numpy()
    return joints[np.asarray(SMPLX_TO_COCO17)][None]


def test_the_initial_pose_bends_a_hidden_knee_the_way_the_kneeling_body_does(body):
    """A kneeling body (thighs forward, shins folded back) whose knees triangulation missed: its initial
    pose puts the knees within 14 mm of the true ones; left straight, they would hang 0.5 m away."""
    truth = _kneeling(body)
    tri = truth.copy()
    tri[:, [13, 14]] = np.nan  # knees hidden
    global_orient, body_pose, transl = init_pose(body, np.zeros(10), tri)
    knees = _start_joints(body, global_orient, body_pose, transl)[[4, 5]]
    assert np.linalg.norm(knees - truth[0, [13, 14]], axis=-1).max() < 0.03  # 14 mm: the circle's forward point
    straight = tri.copy()
    straight[:, [15, 16]] = np.nan  # without ankles the legs start straight
    _, pose_straight, _ = init_pose(body, np.zeros(10), straight)
    hanging = _start_joints(body, global_orient, pose_straight, transl)[[4, 5]]
    assert np.linalg.norm(hanging - truth[0, [13, 14]], axis=-1).min() > 0.4  # 0.50 m


def test_a_hip_triangulation_missed_starts_where_the_torso_puts_it_and_its_leg_follows_the_knee(body):
    """The kneeling body with its right hip missing (knee and ankle found): the start places the hip
    where the torso's pose puts the model's hip and aims the leg at the found knee and ankle, so the
    right hip, knee and ankle start within 2 mm of the true ones; without the fill the leg started at
    rest, 0.5 m away."""
    truth = _kneeling(body)
    tri = truth.copy()
    tri[:, 12] = np.nan  # right hip missing
    right_leg = _start_joints(body, *init_pose(body, np.zeros(10), tri))[[2, 5, 8]]  # SMPL-X right hip, knee, ankle
    assert np.linalg.norm(right_leg - truth[0, [12, 14, 16]], axis=-1).max() < 0.002
    assert np.isnan(tri[:, 12]).all()  # the input is not changed


def test_without_any_torso_the_limbs_start_at_rest_where_the_root_is(body):
    """No frame with three torso joints: there is no torso pose to place a missing shoulder or hip by, so
    the limbs whose roots are missing start at rest instead of aiming from the origin at a found elbow."""
    tri = np.full((4, 17, 3), np.nan)
    tri[:, 7] = [2.0, 3.0, 1.2]  # a left elbow 3.7 m from the origin, nothing else
    global_orient, body_pose, transl = init_pose(body, np.zeros(10), tri)
    assert np.isfinite(body_pose).all() and np.isfinite(transl).all()
    np.testing.assert_allclose(body_pose, np.broadcast_to(np.eye(3), body_pose.shape), atol=1e-12)
