"""The fused operators of csrc/: analytic gradients against finite differences (float64), forward and
backward against the torch reference path, CUDA against CPU, clear errors on bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import roma
import torch

from motionkit import kernels
from motionkit.body import ops_fused, ops_torch
from motionkit.body.model import BodyModel
from motionkit.body.multiscale import knot_basis
from motionkit.body.objective import (
    HeadRows,
    head_motion,
    head_motion_index,
    head_motion_pairs,
    head_turn_index,
    prior_terms,
    reprojection_partners,
)
from motionkit.body.objective import robust_reprojection as reference_reprojection
from motionkit.conventions import COCO17_LIMB_LR_PAIRS
from motionkit.geometry.camera import look_at
from motionkit.geometry.fisheye import kb3_project_torch, theta_max_np
from motionkit.kernels import ops

F64 = torch.float64


@pytest.fixture(scope="module", autouse=True)
def loaded():
    st = kernels.ensure_loaded()
    assert st["cpu"], f"the CPU operators must build wherever a C++ compiler exists: {st['error']}"
    return st


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request) -> str:
    """Each parity test runs the fused operator on the CPU and, where a GPU is visible, on CUDA, against
    the torch reference on the CPU."""
    if request.param == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("needs CUDA")
        assert kernels.ensure_loaded(cuda=True)["cuda"], kernels.status(load=False)["error"]
    return request.param


def _to(device: str, *xs: torch.Tensor) -> list[torch.Tensor]:
    """Copies on ``device``, as leaves that require a gradient where the originals do."""
    return [x.detach().to(device).requires_grad_(x.requires_grad) for x in xs]


def _model(body: BodyModel, device: str) -> dict:
    return {k: v.to(device) for k, v in body.kernel_tensors().items()}


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().cpu(), b.detach().cpu()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def _rot6d(n: int, joints: int, gen: torch.Generator, spread: float = 0.6) -> torch.Tensor:
    """Random 6D inputs (not orthonormal: Gram-Schmidt must be differentiated too)."""
    rv = spread * torch.randn(n, joints, 3, generator=gen, dtype=F64)
    r6 = roma.rotvec_to_rotmat(rv)[..., :2]
    return (r6 * (1 + 0.3 * torch.rand(n, joints, 1, 2, generator=gen, dtype=F64))).contiguous()


def _body_inputs(n: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    r6 = _rot6d(n, 22, gen).requires_grad_(True)
    betas = torch.randn(n, 10, generator=gen, dtype=F64).requires_grad_(True)
    transl = torch.randn(n, 3, generator=gen, dtype=F64).requires_grad_(True)
    return r6, betas, transl


@pytest.fixture(scope="module")
def body64() -> BodyModel:
    return BodyModel(dtype=F64)  # all 21 landmarks: every skinning path is exercised


def test_body_joints_equal_the_torch_body_model_forward_and_backward(body64, device):
    r6, betas, transl = _body_inputs(6)
    R = roma.special_gramschmidt(r6)
    ref = body64(betas, R[:, 0], R[:, 1:], transl)
    inputs = _to(device, r6, betas, transl)
    out = ops.body_joints(*inputs, _model(body64, device))
    assert out.shape == ref.shape == (6, 55 + 21, 3)
    assert _rel(out, ref) < 1e-12
    g = torch.randn_like(ref)
    g_ref = torch.autograd.grad((ref * g).sum(), (r6, betas, transl))
    g_out = torch.autograd.grad((out * g.to(device)).sum(), inputs)
    for a, b in zip(g_out, g_ref, strict=True):
        assert _rel(a, b) < 1e-10


def test_body_joints_gradcheck(body64):
    r6, betas, transl = _body_inputs(2, seed=1)
    model = body64.kernel_tensors()
    assert torch.autograd.gradcheck(lambda a, b, c: ops.body_joints(a, b, c, model), (r6, betas, transl))


def test_landmark_offsets_match_the_torch_reference_and_sit_in_the_joint_frame(device):
    """Joint landmarks moved by per-take ``kp_delta`` (rows shared by the frames of one take, as betas):
    fused == torch forward and backward (kp_delta's gradient summed over a take's frames), gradcheck,
    and a landmark posed with its joint is the joint centre plus the joint's world rotation times the
    offset."""
    body = BodyModel(dtype=F64, vertex_keypoints=("nose",), joint_landmarks=(1, 4, 18))  # hip, knee, elbow
    K = 1 + 3
    r6, betas, transl = _body_inputs(6, seed=5)
    betas_p = betas.detach()[:2].clone().requires_grad_(True)  # 2 takes x 3 frames
    gen = torch.Generator().manual_seed(6)
    delta = (0.05 * torch.randn(2, K, 3, generator=gen, dtype=F64)).requires_grad_(True)
    R = roma.special_gramschmidt(r6)
    rows = torch.arange(6) // 3
    ref, GR = body(betas_p[rows], R[:, 0], R[:, 1:], transl, kp_delta=delta[rows], return_transforms=True)
    inputs = _to(device, r6, betas_p, transl, delta)
    out = ops.body_joints(*inputs[:3], _model(body, device), kp_delta=inputs[3])
    assert out.shape == ref.shape == (6, 55 + K, 3) and _rel(out, ref) < 1e-12
    lm = ref[:, 56:] - ref[:, [1, 4, 18]]
    want = torch.einsum("njab,njb->nja", GR[:, [1, 4, 18]], delta[rows][:, 1:])
    assert _rel(lm, want) < 1e-12
    g = torch.randn_like(ref)
    g_ref = torch.autograd.grad((ref * g).sum(), (r6, betas_p, transl, delta))
    g_out = torch.autograd.grad((out * g.to(device)).sum(), inputs)
    for a, b in zip(g_out, g_ref, strict=True):
        assert _rel(a, b) < 1e-10
    model = body.kernel_tensors()
    assert torch.autograd.gradcheck(lambda a, b, c, d: ops.body_joints(a, b, c, model, kp_delta=d),
                                    (r6[:2], betas_p[:1], transl[:2], delta[:1]))  # fmt: skip


def test_rot6d_to_rotvec_matches_roma_including_identity_and_near_half_turn(device):
    gen = torch.Generator().manual_seed(2)
    r6 = _rot6d(50, 1, gen, spread=1.5)[:, 0]
    special = roma.rotvec_to_rotmat(torch.tensor([[0.0, 0, 0], [1e-9, 0, 0], [0, 3.1, 0.1], [0, 0, math.pi - 1e-3]],
                                                 dtype=F64))[..., :2]  # fmt: skip
    r6 = torch.cat([r6, special]).contiguous().requires_grad_(True)
    ref = roma.rotmat_to_rotvec(roma.special_gramschmidt(r6))
    (r6d,) = _to(device, r6)
    out = ops.rot6d_to_rotvec(r6d)
    assert _rel(out, ref) < 1e-12
    g = torch.randn_like(ref)
    g_out = torch.autograd.grad((out * g.to(device)).sum(), r6d)[0]
    assert _rel(g_out, torch.autograd.grad((ref * g).sum(), r6)[0]) < 1e-8


def test_rot6d_to_rotvec_gradcheck():
    gen = torch.Generator().manual_seed(3)
    r6 = _rot6d(8, 1, gen, spread=1.0)[:, 0].contiguous().requires_grad_(True)
    assert torch.autograd.gradcheck(ops.rot6d_to_rotvec, (r6,))


def _reprojection_problem(seed: int = 4, P: int = 2, M: int = 5, V: int = 3, J: int = 17):
    """Cameras 4 m around the origin looking at it; joints within ~1 m; observations 30 px off the
    projections; some weights zero; one point behind a camera."""
    gen = torch.Generator().manual_seed(seed)
    X = 0.5 * torch.randn(P, M, J, 3, generator=gen, dtype=F64)
    centers = torch.randn(P, V, 3, generator=gen, dtype=F64)
    centers = 4 * centers / centers.norm(dim=-1, keepdim=True)
    T = torch.as_tensor(np.stack([[look_at(c.numpy(), np.zeros(3)) for c in cp] for cp in centers]), dtype=F64)
    R, t = T[..., :3, :3].contiguous(), T[..., :3, 3].contiguous()
    params = torch.tensor([700, 690, 1900, 1400, 0.03, -0.01, 0.002, -0.0003], dtype=F64).expand(P, V, 8).contiguous()
    tmax = torch.as_tensor(theta_max_np(params.numpy()))
    X[0, 0, 0] = centers[0, 0] * 1.5  # behind camera 0 of problem 0: invalid, no contribution
    pc = torch.einsum("pvij,pmkj->pmvki", R, X) + t[:, None, :, None]
    uv = kb3_project_torch(pc, params[:, None, :, None])
    obs = torch.nan_to_num(uv + 30 * torch.randn(uv.shape, generator=gen, dtype=F64), nan=100.0)
    w = torch.rand(P, M, V, J, generator=gen, dtype=F64)
    w[w < 0.2] = 0
    return X.requires_grad_(True), R, t, params, tmax, obs, w


def test_robust_reprojection_equals_the_torch_loss_forward_and_backward(device):
    X, R, t, params, tmax, obs, w = problem = _reprojection_problem()
    Xd, *rest = _to(device, *problem)
    for sigma in (100.0, 10.0):
        ref = reference_reprojection(X, R, t, params, tmax, obs, w, sigma)
        out = ops.robust_reprojection(Xd, *rest, sigma)
        assert _rel(out, ref) < 1e-12
        g = torch.tensor([0.7, -1.3], dtype=F64)
        g_out = torch.autograd.grad((out * g.to(device)).sum(), Xd)[0]
        assert _rel(g_out, torch.autograd.grad((ref * g).sum(), X)[0]) < 1e-10


def test_robust_reprojection_gradcheck():
    X, R, t, params, tmax, obs, w = _reprojection_problem(seed=5, P=1, M=2, V=2, J=4)
    assert torch.autograd.gradcheck(lambda x: ops.robust_reprojection(x, R, t, params, tmax, obs, w, 50.0), (X,))
    partner = torch.tensor([1, 0, -1, -1])
    assert torch.autograd.gradcheck(
        lambda x: ops.robust_reprojection(x, R, t, params, tmax, obs, w, 50.0, partner), (X,)
    )


def _head_problem(seed: int = 0, P: int = 2, M: int = 30, R: int = 7):
    """Body outputs ``(P, M, R, 3)`` and the head term's pairs from a random anchor with unknown frames
    (the last problem's anchor known on half of its frames only)."""
    gen = np.random.default_rng(seed)
    joints = torch.as_tensor(gen.normal(0, 0.2, (P, M, R, 3))).requires_grad_(True)
    head = gen.normal(0, 0.2, (P, M, 3))
    head[-1, ::2] = np.nan
    pairs, delta, weight = head_motion_pairs(head, (1, 2, 4, 8))
    rows = HeadRows(torch.as_tensor(head_motion_index(pairs, (5, 3), R)), M * R)
    return joints, rows, torch.as_tensor(delta), torch.as_tensor(weight)


def _rows_on(device: str, rows: HeadRows) -> HeadRows:
    return HeadRows(rows.index.to(device), rows.n_rows)


def test_head_motion_equals_the_torch_reference_forward_and_backward(device):
    J, rows, delta, weight = _head_problem()
    Jd, delta_d, weight_d = _to(device, J, delta, weight)
    for sigma in (0.05, 0.5):
        ref = head_motion(J, rows, delta, weight, sigma)
        out = ops.head_motion(Jd, _rows_on(device, rows), delta_d, weight_d, sigma)
        assert out.shape == ref.shape == (2, 1) and _rel(out, ref) < 1e-12 and (ref > 0).all()
        g = torch.tensor([[0.7], [-1.3]], dtype=F64)
        g_out = torch.autograd.grad((out * g.to(device)).sum(), Jd)[0]
        g_ref = torch.autograd.grad((ref * g).sum(), J)[0]
        assert _rel(g_out, g_ref) < 1e-10 and (g_ref[:, :, [0, 1, 2, 4, 6]] == 0).all()  # the eyes' rows only


def test_head_motion_gradcheck():
    J, rows, delta, weight = _head_problem(seed=3, P=1, M=10, R=6)
    assert torch.autograd.gradcheck(lambda x: ops.head_motion(x, rows, delta, weight, 0.05), (J,))


def test_head_rows_list_each_rows_readers_in_pair_order():
    """The CSR that the head operator's backward gathers by: for each row, the entries ``4 n + slot`` that
    read it, in increasing order (rows nobody reads have none); rows outside the body output are an
    error, on construction and against a body output of another size."""
    rows = HeadRows(torch.tensor([[3, 1, 0, 0], [1, 3, 2, 1]]), 6)
    assert rows.reader_ptr.tolist() == [0, 2, 5, 6, 8, 8, 8]
    assert rows.readers.tolist() == [2, 3, 1, 4, 7, 6, 0, 5]  # row 0: entries 2, 3; row 1: 1, 4, 7; ...
    with pytest.raises(ValueError, match=r"head rows must lie in \[0, 3\), got 0..3"):
        HeadRows(rows.index, 3)
    with pytest.raises(ValueError, match="head rows index a body output of 6 rows"):
        ops.head_motion(torch.zeros(1, 2, 2, 3, dtype=F64), rows, torch.zeros(1, 2, 3, dtype=F64),
                        torch.zeros(1, 2, dtype=F64), 0.05)  # fmt: skip


def _limb_swapped(obs: torch.Tensor, w: torch.Tensor, every: int = 2):
    """``obs``, ``w`` with the limb pairs' labels exchanged in every ``every``-th (frame, view)."""
    obs, w = obs.clone(), w.clone()
    sel = torch.zeros(obs.shape[:-2], dtype=torch.bool)
    sel.view(-1)[::every] = True
    for a, b in COCO17_LIMB_LR_PAIRS:
        obs[sel, a], obs[sel, b] = obs[sel, b].clone(), obs[sel, a].clone()
        w[sel, a], w[sel, b] = w[sel, b].clone(), w[sel, a].clone()
    return obs, w


def test_head_turn_equals_the_torch_reference_forward_and_backward(device):
    """The head-turn term's index reads a row twice in one pair (the nose in nose - eye midpoint) and the
    same rows from three vectors per frame: the gathered backward adds them as the reference does."""
    gen = np.random.default_rng(4)
    P, M, R = 2, 12, 9
    J = torch.as_tensor(gen.normal(0, 0.2, (P, M, R, 3))).requires_grad_(True)
    rows = HeadRows(torch.as_tensor(head_turn_index(np.array([8, 6, 7, 2, 3]), M, R)), M * R)
    target = torch.as_tensor(gen.normal(0, 0.05, (P, M * 3, 3)))
    weight = torch.as_tensor(np.where(gen.random((P, M * 3)) < 0.2, 0.0, 1.0 / (3 * M)))
    Jd, target_d, weight_d = _to(device, J, target, weight)
    rows_d = _rows_on(device, rows)
    ref = head_motion(J, rows, target, weight, 0.05)
    out = ops.head_motion(Jd, rows_d, target_d, weight_d, 0.05)
    assert _rel(out, ref) < 1e-12
    g_out = torch.autograd.grad(out.sum(), Jd)[0]
    g_ref = torch.autograd.grad(ref.sum(), J)[0]
    assert _rel(g_out, g_ref) < 1e-10 and (g_ref[:, :, [0, 1, 4, 5]] == 0).all() and (g_ref[:, :, 8] != 0).any()
    with pytest.raises(ValueError, match="head rows index a body output"):
        ops.head_motion(Jd[:, :2].contiguous(), rows_d, target_d, weight_d, 0.05)  # rows beyond this body output


def test_limb_pairs_cost_their_cheaper_labelling(device):
    """With the limb pairs interchangeable, labels exchanged in some views cost what the right ones cost
    when those fit better (observations 2 px off, both labels of every pair observed), and never more
    than the labels as given otherwise; the fused operator equals the torch reference, gradients included."""
    X, R, t, params, tmax, obs, w = _reprojection_problem(seed=9)
    partner = torch.as_tensor(reprojection_partners(COCO17_LIMB_LR_PAIRS, 17))
    pc = torch.einsum("pvij,pmkj->pmvki", R, X.detach()) + t[:, None, :, None]
    tm = tmax[:, None, :, None]
    exact, valid = kb3_project_torch(pc, params[:, None, :, None], return_valid=True, theta_max=tm)
    noise = 2.0 * torch.randn(exact.shape, generator=torch.Generator().manual_seed(1), dtype=F64)
    near = torch.nan_to_num(exact, nan=100.0) + noise
    # a pair is only exchanged where both of its labels are observed (and project): weight them all
    other = partner.clamp_min(0)
    both = torch.where(valid & valid[..., other], w.clamp_min(0.5), 0.0)
    assert (both[..., [7, 8, 9, 10, 13, 14, 15, 16]] > 0).sum() >= 40
    swapped, w_swapped = _limb_swapped(near, both)
    plain = reference_reprojection(X, R, t, params, tmax, near, both, 100.0)
    symmetric = reference_reprojection(X, R, t, params, tmax, swapped, w_swapped, 100.0, partner)
    assert _rel(symmetric, plain) < 1e-12
    assert (reference_reprojection(X, R, t, params, tmax, swapped, w_swapped, 100.0) > 5 * plain).all()
    for o, ww in ((obs, w), _limb_swapped(obs, w, every=3)):  # 30 px noise: some pairs cross, some do not
        ref = reference_reprojection(X, R, t, params, tmax, o, ww, 100.0, partner)
        Xd, *rest = _to(device, X, R, t, params, tmax, o, ww, partner)
        out = ops.robust_reprojection(Xd, *rest[:-1], 100.0, rest[-1])
        assert _rel(out, ref) < 1e-12
        assert (ref <= reference_reprojection(X, R, t, params, tmax, o, ww, 100.0) + 1e-15).all()
        g = torch.tensor([0.7, -1.3], dtype=F64)
        g_out = torch.autograd.grad((out * g.to(device)).sum(), Xd)[0]
        assert _rel(g_out, torch.autograd.grad((ref * g).sum(), X)[0]) < 1e-10


def test_reprojection_partners():
    np.testing.assert_array_equal(reprojection_partners(((0, 2),), 4), [2, -1, 0, -1])
    for bad in (((0, 0),), ((0, 4),), ((0, 1), (1, 2))):
        with pytest.raises(ValueError, match="disjoint pairs"):
            reprojection_partners(bad, 4)


def _prior_problem(seed: int = 8, P: int = 2, M: int = 7):
    """Random joints, triangulations with gaps, a padded problem (frames 5.. of problem 1), two rates."""
    gen = torch.Generator().manual_seed(seed)
    J = 0.3 * torch.randn(P, M, 76, 3, generator=gen, dtype=F64)
    coco = torch.arange(17)
    coco[0] = 60  # a landmark column, as the nose is
    tri = J[:, :, coco] + 0.05 * torch.randn(P, M, 17, 3, generator=gen, dtype=F64)
    tri_w = (torch.rand(P, M, 17, generator=gen, dtype=F64) > 0.3).to(F64)
    fm = torch.ones(P, M, dtype=F64)
    fm[-1, 5:] = 0
    tri_w[-1, 5:] = 0
    fps = torch.tensor([20.0, 10.0], dtype=F64)[:P]
    rot6d = _rot6d(P * M, 4, gen).reshape(P, M, 4, 3, 2)
    rv = 0.5 * torch.randn(P, M, 21, 3, generator=gen, dtype=F64)
    rv[0, 0, 3, 0] = -0.4  # knee bent the forbidden way: the limit term is active
    for x in (J, rot6d, rv):
        x.requires_grad_(True)
    return J, coco, tri, tri_w, fm, fps, rot6d, rv


# bone rows (``objective.bone_ranges``) on the 4 joints of ``_prior_problem``'s 6D rotations: both columns,
# both signs, every axis, two-sided and one-sided bounds
BONES = ((1, 1, -1.0, 0, -0.25, 0.25), (2, 0, 1.0, 1, -0.25, 0.25), (3, 1, -1.0, 2, -0.5, math.inf),
         (3, 0, -1.0, 0, -math.inf, 0.1))  # fmt: skip


def test_prior_terms_equal_the_torch_reference_forward_and_backward(device):
    J, coco, tri, tri_w, fm, fps, rot6d, rv = args = _prior_problem()
    ref = prior_terms(*args, 0.1, bones=BONES)
    dargs = _to(device, *args)
    out = ops.prior_terms(*dargs, 0.1, bones=BONES)
    assert (ref[:, 4] > 0).any() and (ref[:, 5] > 0).all()  # every term is exercised
    assert _rel(out, ref) < 1e-12
    g = torch.randn(ref.shape, dtype=F64)
    g_ref = torch.autograd.grad((ref * g).sum(), (J, rot6d, rv))
    g_out = torch.autograd.grad((out * g.to(device)).sum(), (dargs[0], dargs[6], dargs[7]))
    for a, b in zip(g_out, g_ref, strict=True):
        assert _rel(a, b) < 1e-10


def test_prior_terms_gradcheck():
    J, coco, tri, tri_w, fm, fps, rot6d, rv = _prior_problem(seed=9, P=1, M=4)
    J = J[:, :, :56].detach().clone().requires_grad_(True)  # 55 kinematic joints + the nose column
    coco = torch.clamp(coco, max=55)

    def fn(J, rot6d, rv):
        return ops.prior_terms(J, coco, tri, tri_w, fm, fps, rot6d, rv, 0.1, bones=BONES)

    assert torch.autograd.gradcheck(fn, (J, rot6d, rv))


def test_adam_step_equals_torch_adam_and_ignores_where_an_element_sits():
    gen = torch.Generator().manual_seed(10)
    p0 = torch.randn(37, generator=gen, dtype=F64)
    grads = [torch.randn(37, generator=gen, dtype=F64) for _ in range(5)]
    ref = p0.clone().requires_grad_(True)
    torch_opt = torch.optim.Adam([ref], lr=0.02, foreach=True)
    mine = p0.clone().requires_grad_(True)
    opt = ops.KernelAdam([mine], lr=0.02)
    for k, g in enumerate(grads):
        ref.grad, mine.grad = g.clone(), g.clone()
        opt.param_groups[0]["lr"].fill_(0.02 / (k + 1))  # the schedule writes the lr tensor in place
        for group in torch_opt.param_groups:
            group["lr"] = 0.02 / (k + 1)
        torch_opt.step()
        opt.step()
    assert _rel(mine, ref) < 1e-12
    # the first 16 elements updated inside a 37-element tensor or alone: the same bits (float32)
    a = p0.float()[:16].clone().requires_grad_(True)
    b = p0.float().clone().requires_grad_(True)
    oa, ob = ops.KernelAdam([a], lr=0.1), ops.KernelAdam([b], lr=0.1)
    for g in grads:
        a.grad, b.grad = g.float()[:16].clone(), g.float().clone()
        oa.step()
        ob.step()
    assert torch.equal(a[:16], b[:16])


def test_both_backends_adam_take_the_fits_denominator_floor():
    """``adam(params, lr, eps)`` of both fit backends (``BodyFitConfig.adam_eps``): on the first step an
    element moves by ``lr * g / (|g| + eps)``, a full learning rate where the gradient is far above the
    floor and in proportion to it where it is far below (a parameter that nothing observes)."""
    g = torch.tensor([1e-2, 1e-5, 1e-7, -1e-9], dtype=F64)
    for backend in (ops_torch, ops_fused):
        p = torch.zeros(4, dtype=F64, requires_grad=True)
        opt = backend.adam([p], 0.02, 1e-5)
        p.grad = g.clone()
        opt.step()
        torch.testing.assert_close(p.detach(), -0.02 * g / (g.abs() + 1e-5), rtol=1e-9, atol=0.0)


def _knot_problem(P=2, M=37, levels=4, seed=11):
    """A basis, parameters (P, N, 22, 3, 2) and per-channel weights with the root's knots frozen."""
    basis = knot_basis(M, levels, dtype=F64)
    gen = torch.Generator().manual_seed(seed)
    params = torch.randn(P, basis.n_params, 22, 3, 2, generator=gen, dtype=F64).requires_grad_(True)
    root = (torch.arange(22) == 0)[:, None, None].expand(22, 3, 2)
    return basis, params, basis.frozen_weights(root).contiguous()


def test_knot_sequence_equals_the_torch_reference_forward_and_backward(device):
    basis, params, weight = _knot_problem()
    basis_d = knot_basis(basis.n_frames, len(basis.levels), device=device, dtype=F64)
    (params_d,) = _to(device, params)
    for w in (weight, None):  # per-channel weights, and the basis's own
        got = ops.knot_sequence(params_d, basis_d, None if w is None else w.to(device))
        ref = basis.sequence(params, w)
        assert got.shape == ref.shape == (2, 37, 22, 3, 2)
        assert _rel(got, ref) < 1e-14
        g = torch.randn_like(ref)
        (ga,) = torch.autograd.grad((got * g.to(device)).sum(), params_d)
        (gb,) = torch.autograd.grad((ref * g).sum(), params)
        assert _rel(ga, gb) < 1e-14
    # the frozen root reads its own frame only, and its knots get no gradient
    assert torch.equal(ops.knot_sequence(params, basis, weight)[:, :, 0], params[:, :37, 0])
    (gk,) = torch.autograd.grad(ops.knot_sequence(params, basis, weight).sum(), params)
    assert (gk[:, 37:, 0] == 0).all() and (gk[:, 37:, 1:] != 0).any()


def test_knot_sequence_gradcheck():
    basis, params, weight = _knot_problem(P=1, M=9, levels=2)
    x = params[..., :1, :1, :].detach().clone().requires_grad_(True)  # (1, N, 1, 1, 2): small for finite differences
    assert torch.autograd.gradcheck(lambda p: ops.knot_sequence(p, basis, weight[..., :1, :1, :]), (x,))
    assert torch.autograd.gradcheck(lambda p: ops.knot_sequence(p, basis), (x,))


def test_float32_matches_float64(body64):
    r6, betas, transl = _body_inputs(4, seed=6)
    out64 = ops.body_joints(r6, betas, transl, body64.kernel_tensors())
    body32 = BodyModel(dtype=torch.float32)
    out32 = ops.body_joints(r6.float(), betas.float(), transl.float(), body32.kernel_tensors())
    assert (out32.double() - out64).abs().max() < 1e-5  # metres


def test_bad_shapes_give_clear_errors(body64):
    r6, betas, transl = _body_inputs(3)
    with pytest.raises(RuntimeError, match="betas must be"):
        ops.body_joints(r6, betas[:2], transl, body64.kernel_tensors())
    with pytest.raises(RuntimeError, match="rot6d must have shape"):
        ops.body_joints(r6[..., :1], betas, transl, body64.kernel_tensors())
    with pytest.raises(RuntimeError, match="dtype"):
        ops.body_joints(r6.float(), betas.float(), transl.float(), body64.kernel_tensors())
    X, R, t, params, tmax, obs, w = _reprojection_problem()
    with pytest.raises(RuntimeError, match="obs must be"):
        ops.robust_reprojection(X, R, t, params, tmax, obs[:, :, :1], w, 100.0)
    with pytest.raises(RuntimeError, match="partner must be"):
        ops.robust_reprojection(X, R, t, params, tmax, obs, w, 100.0, torch.zeros(3, dtype=torch.int64))
    basis, kp, kw = _knot_problem()
    with pytest.raises(RuntimeError, match="weight must have shape"):
        ops.knot_sequence(kp, basis, kw[:, :, :5])
    with pytest.raises(RuntimeError, match="reader_ptr has"):
        ops.knot_sequence(kp[:, :-1], basis, kw)
