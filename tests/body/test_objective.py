"""The fit's objective terms (torch reference): joint limits, bone ranges, the robust reprojection, the Aria
head terms and the ankles' floor."""

import numpy as np
import pytest
import roma
import torch
from scipy.spatial.transform import Rotation

from motionkit.body.fitting import (
    JOINT_LIMITS,
)
from motionkit.body.model import BodyModel
from motionkit.body.objective import (
    HeadRows,
    ankle_floor,
    bone_component,
    bone_excess,
    bone_ranges,
    floor_penalty,
    head_motion,
    head_motion_index,
    head_motion_pairs,
    head_turn_index,
    head_turn_residual,
    head_turn_targets,
    limit_loss,
    robust_reprojection,
)
from motionkit.conventions import SMPLX_JOINT_NAMES
from motionkit.geometry.fisheye import kb3_project_np
from motionkit.geometry.robust import gmof

J = {n: i for i, n in enumerate(SMPLX_JOINT_NAMES)}


def test_joint_limit_signs_bend_the_right_way():
    bm = BodyModel(dtype=torch.float64, vertex_keypoints=())
    zero = torch.zeros(21, 3, dtype=torch.float64)

    def joints(j, axis, angle):
        p = zero.clone()
        p[j - 1, axis] = angle
        return bm(torch.zeros(10, dtype=torch.float64), torch.zeros(3, dtype=torch.float64), p).numpy()

    rest = joints(4, 0, 0.0)
    # allowed knee rotation (positive about x) moves the ankle backward (-z): a natural knee bend
    assert joints(J["left_knee"], 0, 1.0)[J["left_ankle"], 2] < rest[J["left_ankle"], 2] - 0.2
    # allowed left elbow rotation (negative about y) brings the wrist forward (+z)
    assert joints(J["left_elbow"], 1, -1.0)[J["left_wrist"], 2] > rest[J["left_wrist"], 2] + 0.15
    assert joints(J["right_elbow"], 1, 1.0)[J["right_wrist"], 2] > rest[J["right_wrist"], 2] + 0.15
    rv = torch.zeros(1, 21, 3)
    assert float(limit_loss(rv)) == 0.0
    for j, axis, lo, _hi in JOINT_LIMITS:
        bad = torch.zeros(1, 21, 3)
        bad[0, j - 1, axis] = -0.5 if np.isfinite(lo) else 0.5
        assert float(limit_loss(bad)) > 0


def _rot6d(rotvecs: dict[int, list[float]]) -> torch.Tensor:
    """``(1, 1, 22, 3, 2)`` 6D local rotations, identity but for ``{SMPL-X joint: rotation vector}``."""
    rv = torch.zeros(22, 3, dtype=torch.float64)
    for j, v in rotvecs.items():
        rv[j] = torch.tensor(v, dtype=torch.float64)
    return roma.rotvec_to_rotmat(rv)[None, None, ..., :2]


def test_bone_component_is_the_bones_sideways_bend_in_the_posed_body():
    bm = BodyModel(dtype=torch.float64, vertex_keypoints=())
    rows = bone_ranges(0.25, 0.6)
    knee, ankle = J["left_knee"], J["left_ankle"]

    def shin(rotvec):  # the posed shin's direction, from the body model's own kinematics (hip unrotated)
        p = torch.zeros(21, 3, dtype=torch.float64)
        p[knee - 1] = torch.tensor(rotvec, dtype=torch.float64)
        X = bm(torch.zeros(10, dtype=torch.float64), torch.zeros(3, dtype=torch.float64), p).numpy()
        d = X[ankle] - X[knee]
        return d / np.linalg.norm(d)

    rest_x = shin([0.0, 0.0, 0.0])[0]
    flexed_twisted = (Rotation.from_rotvec([1.7, 0, 0]) * Rotation.from_rotvec([0, 0.6, 0])).as_rotvec()
    sideways = (Rotation.from_rotvec([1.2, 0, 0]) * Rotation.from_rotvec([0, 0, 0.4])).as_rotvec()
    for rotvec in ([1.7, 0.0, 0.0], sideways):
        c = float(bone_component(_rot6d({knee: rotvec}), rows)[0, 0, 0])
        # the model's rest shin leans by a few degrees from -y: compare the change of its sideways component
        assert c == pytest.approx(shin(rotvec)[0] - rest_x, abs=0.01)
    assert float(bone_component(_rot6d({knee: [1.7, 0, 0]}), rows)[0, 0, 0]) == pytest.approx(0.0, abs=1e-12)
    assert float(bone_component(_rot6d({knee: sideways}), rows)[0, 0, 0]) == pytest.approx(np.sin(0.4), abs=1e-12)
    # a twist about the (ideal) shin after the flexion leaves the shin in its plane
    assert float(bone_component(_rot6d({knee: flexed_twisted}), rows)[0, 0, 0]) == pytest.approx(0.0, abs=1e-12)


def test_bone_excess_bounds_sideways_knees_and_elbows_and_a_thigh_behind_the_hip():
    rows = bone_ranges(0.25, 0.6)

    def then(first, second):  # rotation vector of ``second`` applied after ``first`` (local frames)
        return (Rotation.from_rotvec(second) * Rotation.from_rotvec(first)).as_rotvec()

    # flexion, a twist about the child bone first, a thigh 0.5 rad behind the hip: all within range
    allowed = {
        J["left_knee"]: [2.0, 0, 0],
        J["right_knee"]: then([0, 0.3, 0], [0.5, 0, 0]),
        J["left_elbow"]: [0, -1.5, 0],
        J["right_elbow"]: then([0.8, 0, 0], [0, 1.0, 0]),
        J["left_hip"]: [-1.6, 0, 0],
        J["right_hip"]: [0.5, 0, 0],
    }
    assert float(bone_excess(_rot6d(allowed), rows)) == 0.0
    bent = {J["left_knee"]: [1.0, 0, 0.5], J["right_elbow"]: [0, 1.0, 0.5], J["right_hip"]: [0.8, 0, 0]}
    for j, rotvec in bent.items():
        assert float(bone_excess(_rot6d({**allowed, j: rotvec}), rows)) > 0.0
    # a hip extension of 0.8 rad costs (sin 0.8 - sin 0.6)^2; flexion of any size nothing
    assert float(bone_excess(_rot6d({J["right_hip"]: [0.8, 0, 0]}), rows)) == pytest.approx(
        (np.sin(0.8) - np.sin(0.6)) ** 2
    )
    assert float(bone_excess(_rot6d(allowed), ())) == 0.0  # no rows, no cost


def test_robust_reprojection_is_zero_on_exact_projections_and_robust():
    rng = np.random.default_rng(0)
    params = np.array([[1700.0, 1700, 1920, 1080, 0.03, 0.05, -0.05, 0.02]] * 2)
    R = np.stack([np.eye(3), roma.rotvec_to_rotmat(torch.tensor([0.0, 0.3, 0.0])).numpy()])
    t = np.array([[0.0, 0, 4.0], [0.5, 0, 4.0]])
    X = rng.normal(0, 0.3, (5, 17, 3))
    obs = np.stack([kb3_project_np(X @ R[v].T + t[v], params[v]) for v in range(2)], axis=1)
    w = np.ones(obs.shape[:-1])
    T = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    loss0 = robust_reprojection(T(X), T(R), T(t), T(params), None, T(obs), T(w), 100.0)
    assert float(loss0) < 1e-12
    obs2 = obs.copy()
    obs2[0, 0, 0] += 1e5  # a wild outlier costs at most its weight
    loss1 = robust_reprojection(T(X), T(R), T(t), T(params), None, T(obs2), T(w), 100.0)
    assert 0 < float(loss1) <= 1.0 / w.size + 1e-9
    assert float(gmof(torch.tensor(100.0**2), 100.0)) == pytest.approx(0.5)


def test_head_motion_costs_what_the_anchor_does_not_explain():
    """The eyes follow the anchor's motion with a constant offset and a slow drift between them: almost
    free (the drift costs what it moves over the lags); a 20-mm wobble of the eyes that the anchor does
    not share costs by hand-computed GMoF; unknown anchors count for nothing; gradients reach the eyes."""
    M, lags, sigma = 200, (1, 2, 4, 8), 0.05
    t = np.arange(M) / 20.0
    anchor = np.stack([1.5 * t, np.sin(t), 1.6 + 0.1 * np.cos(3 * t)], -1)[None]  # a walk with a bob

    def cost(eyes, head=anchor):  # the body's output: both eyes at the eye midpoint (rows 0 and 1)
        pairs, delta, weight = head_motion_pairs(head, lags)
        index = HeadRows(torch.as_tensor(head_motion_index(pairs, (0, 1), 2)), M * 2)
        joints = torch.as_tensor(eyes)[:, :, None].expand(-1, -1, 2, -1)
        return head_motion(joints, index, torch.as_tensor(delta), torch.as_tensor(weight), sigma)

    drift = 0.03 * np.sin(2 * np.pi * t / 20.0)[:, None] * np.array([1.0, 0.0, 0.0])
    speed = 0.03 * 2 * np.pi / 20.0  # the drift's top speed (m/s): it moves at most this x lag / fps
    bound = np.mean([(speed * lag / 20.0) ** 2 / sigma**2 for lag in lags])  # ~0.002: 4 mm over 8 lags at most
    assert 0 < cost(anchor + np.array([0.02, -0.01, 0.03]) + drift).item() <= bound
    wobble = np.zeros((M, 3))
    wobble[::2, 2] = 0.02  # every other sample 20 mm up
    r2 = 0.02**2  # odd lags (1) see the wobble on every pair, even lags (2, 4, 8) never
    assert cost(anchor + wobble).item() == pytest.approx(r2 / (sigma**2 + r2) / len(lags), rel=1e-9)
    unknown = anchor.copy()
    unknown[0, ::2] = np.nan  # the anchor unknown where the eyes wobble: no pair of odd lag is left
    assert cost(anchor + wobble, unknown).item() == pytest.approx(0.0, abs=1e-12)
    assert cost(anchor + wobble, np.full_like(anchor, np.nan)).item() == 0.0  # no anchor: nothing
    moved = torch.as_tensor(anchor + wobble).requires_grad_(True)
    cost(moved).sum().backward()
    assert moved.grad[0, ::2, 2].gt(0).all() and moved.grad[0, 1::2, 2].lt(0).all()  # descent flattens the wobble


def test_head_turn_targets_hold_the_face_as_the_glasses_see_it():
    """A head turning with the glasses (its face points fixed in the CPF frame), turned round by 180
    degrees on a fifth of the frames: every frame's target is where the glasses put the face's vectors
    (the take's constant is the median, which the wrong fifth does not move), so the right frames cost
    nothing and the turned ones cost by hand-computed GMoF; frames without orientation get no weight;
    the weights make a mean; gradients turn the wrong frames back."""
    gen = np.random.default_rng(3)
    M, sigma = 50, 0.05
    R = roma.random_rotmat(M, generator=torch.Generator().manual_seed(4)).double()  # world from CPF
    face = torch.as_tensor(gen.normal(0, 0.05, (5, 3)))  # nose, eyes, ears in the CPF frame (metres)
    centre = torch.as_tensor(gen.normal(0, 1, (M, 1, 3)))
    joints = (centre + torch.einsum("mij,kj->mki", R, face))[None].clone()  # (1, M, 5, 3): rows = COCO 0-4
    turned = torch.arange(M) % 5 == 0
    flip = torch.diag(torch.tensor([-1.0, -1.0, 1.0], dtype=torch.float64))  # 180 degrees about the CPF's y
    joints[0, turned] = centre[turned] + torch.einsum("mij,jl,kl->mki", R[turned], flip, face)
    known = torch.ones(1, M, dtype=torch.bool)
    known[0, 7] = False
    rotation = torch.where(known[..., None, None], R[None], float("nan"))  # the glasses unknown at frame 7
    index = HeadRows(torch.as_tensor(head_turn_index(np.arange(5), M, 5)), M * 5)
    target, weight = head_turn_targets(joints, index, rotation)
    vectors = torch.stack([face[1] - face[2], face[3] - face[4], face[0] - 0.5 * (face[1] + face[2])])
    want = torch.einsum("mij,kj->mki", R, vectors).reshape(1, M * 3, 3)
    rows = ~known[0].repeat_interleave(3)
    torch.testing.assert_close(target[0, ~rows], want[0, ~rows])
    assert weight[0, rows].eq(0).all() and weight.sum().item() == pytest.approx(1.0)
    cost = head_motion(joints, index, target, weight, sigma).item()
    vec = (joints.flatten(1, 2)[:, index.index] * joints.new_tensor([0.5, 0.5, -0.5, -0.5])[:, None]).sum(2)
    r2 = ((vec - want) ** 2).sum(-1)[0]  # only the turned frames' vectors are off (reversed in x and z)
    expected = (weight[0] * r2 / (sigma**2 + r2)).sum().item()
    assert cost == pytest.approx(expected, rel=1e-6) and expected > 0.1
    right = joints.clone()
    right[0, turned] = (centre + torch.einsum("mij,kj->mki", R, face))[turned]
    assert head_motion(right, index, target, weight, sigma).item() == pytest.approx(0.0, abs=1e-12)
    moved = joints.clone().requires_grad_(True)
    head_motion(moved, index, target, weight, sigma).sum().backward()
    g = moved.grad[0]
    assert g[~turned].abs().max() < 1e-4 * g[turned].abs().max()  # only the turned frames are pulled ...
    step = (joints - 1e-4 * g).detach()
    assert head_motion(step, index, target, weight, sigma).item() < cost  # ... towards their targets


def test_head_turn_residual_is_how_far_the_face_is_turned_from_the_glasses():
    """A head turning with the glasses on four frames of five and turned round by 180 degrees about the
    CPF's y on the fifth (nose, eyes and ears as rows 0-4 of a 7-row output, rows 5-6 elsewhere): the
    residual is 0 where the face turns as the glasses do, the largest of the three vectors' hand-computed
    displacements where it is turned round, NaN where the glasses' orientation is unknown."""
    gen = np.random.default_rng(5)
    M = 40
    R = Rotation.random(M, random_state=6).as_matrix()  # world from CPF
    face = gen.normal(0, 0.05, (5, 3))  # nose, eyes, ears in the CPF frame (metres)
    flip = np.diag([-1.0, -1.0, 1.0])
    turned = np.arange(M) % 5 == 0
    local = np.where(turned[:, None, None], face @ flip.T, face)  # (M, 5, 3)
    joints = np.concatenate([np.einsum("mij,mkj->mki", R, local), gen.normal(0, 1, (M, 2, 3))], 1)
    joints += gen.normal(0, 1, (M, 1, 3))  # anywhere in the world
    rotation = R.copy()
    rotation[3] = np.nan
    res = head_turn_residual(joints, np.r_[np.arange(5), np.full(12, 6)], rotation)
    vectors = np.stack([face[1] - face[2], face[3] - face[4], face[0] - 0.5 * (face[1] + face[2])])
    want = np.linalg.norm(vectors @ flip.T - vectors, axis=-1).max()
    np.testing.assert_allclose(res[turned], want, rtol=1e-9)
    assert np.isnan(res[3]) and np.nanmax(res[~turned]) < 1e-12 and want > 0.02


def test_ankle_floor_lies_below_the_ankles_two_views_see():
    """The floor is the quantile of the heights of the ankles two views see, less the margin, in world
    heights (+z up); ankles no second view confirms (a hidden leg pushed down a camera ray) do not pull
    it down; a problem with too few seen ankles has none (-inf)."""
    M = 100
    rng = np.random.default_rng(3)
    z = -1.1 + rng.uniform(0.10, 0.20, (2, M, 2))  # a floor at -1.1 m, ankles 10-20 cm above it
    z[0, :15, 1] = -1.1 + 0.02  # a hidden ankle fitted 2 cm above the floor, one view only
    seen = np.ones((2, M, 2), bool)
    seen[0, :15, 1] = False
    seen[1] = False
    seen[1, :10, 0] = True  # ten seen ankles: too few
    ankles = torch.as_tensor(np.stack([np.zeros_like(z), np.zeros_like(z), z], -1))
    floor = ankle_floor(ankles, torch.as_tensor(seen), quantile=0.02, margin_m=0.03, min_samples=20)
    assert floor[0].item() == pytest.approx(np.quantile(z[0][seen[0]], 0.02) - 0.03, abs=1e-12)
    assert -1.1 + 0.07 < floor[0].item() < -1.1 + 0.08  # 10 cm above the floor at the 2 %, less 3 cm
    assert floor[1].item() == float("-inf")


def test_floor_penalty_robustly_lifts_what_lies_below():
    """Ankles on or above the floor cost nothing and get no gradient; one ``d`` below costs
    ``d^2 / (sigma^2 + d^2)``, averaged over the weighted ankles (an unweighted one, a leg no view
    observes or a padded frame, costs nothing however low); descent lifts it; a problem without a floor
    costs nothing."""
    sigma, M = 0.05, 10
    z = np.full((2, M, 2), 0.15)
    z[0, 3, 1], z[0, 7, 0] = 0.02, 0.08  # 8 cm and 2 cm below a floor at 0.10
    z[0, 9] = z[0, 5, 0] = -1.0  # far below, unweighted: not counted
    weight = np.ones((2, M, 2))
    weight[0, 9] = weight[0, 5, 0] = 0
    ankles = torch.as_tensor(np.stack([np.zeros_like(z), np.zeros_like(z), z], -1)).requires_grad_(True)
    floor = torch.tensor([0.10, float("-inf")], dtype=torch.float64)
    cost = floor_penalty(ankles, floor, torch.as_tensor(weight), sigma)
    expected = sum(d * d / (sigma**2 + d * d) for d in (0.08, 0.02)) / weight[0].sum()
    assert cost.shape == (2, 1)
    assert cost[0, 0].item() == pytest.approx(expected, rel=1e-12) and cost[1, 0].item() == 0.0
    cost.sum().backward()
    grad = ankles.grad[..., 2]
    assert grad[0, 3, 1] < 0 and grad[0, 7, 0] < 0  # descent raises them
    below = torch.zeros_like(grad, dtype=torch.bool)
    below[0, 3, 1] = below[0, 7, 0] = True
    assert (grad[~below] == 0).all() and (ankles.grad[..., :2] == 0).all()
