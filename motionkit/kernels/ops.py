"""Differentiable entry points of the fused operators (analytic backward in C++/CUDA).

Every function here has a torch reference with the same semantics, tested for parity:
``body_joints`` ~ ``BodyModel.forward`` after ``roma.special_gramschmidt``; ``rot6d_to_rotvec`` ~
``roma.rotmat_to_rotvec(roma.special_gramschmidt(.))``; ``robust_reprojection`` ~
``motionkit.body.objective.robust_reprojection``; ``prior_terms`` ~ ``motionkit.body.objective.prior_terms``;
``head_motion`` ~ ``motionkit.body.objective.head_motion``;
``knot_sequence`` ~ ``motionkit.body.multiscale.KnotBasis.sequence``.
Call ``motionkit.kernels.ensure_loaded()`` first.
"""

from __future__ import annotations

import torch

from motionkit.conventions import SMPLX_JOINT_LIMITS

_registered = False


def register_autograd() -> None:
    """Attach the analytic backward passes to the loaded operators (once)."""
    global _registered
    if _registered:
        return
    lib = torch.library

    def body_setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs[:3], *inputs[4:])  # all but the translation

    def body_backward(ctx, grad):
        rot6d, betas, kp_delta, *model = ctx.saved_tensors
        g6, gb, gt, gd = torch.ops.motionkit.body_joints_backward(grad, rot6d, betas, kp_delta, *model)
        return (g6, gb, gd, gt) + (None,) * 7

    lib.register_autograd("motionkit::body_joints", body_backward, setup_context=body_setup)

    def rotvec_setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def rotvec_backward(ctx, grad):
        return torch.ops.motionkit.rot6d_to_rotvec_backward(grad, ctx.saved_tensors[0])

    lib.register_autograd("motionkit::rot6d_to_rotvec", rotvec_backward, setup_context=rotvec_setup)

    def rep_setup(ctx, inputs, output):
        ctx.sigma = inputs[-1]
        ctx.save_for_backward(output[1], *inputs[:-1])

    def rep_backward(ctx, grad_loss, grad_den):
        den, *inp = ctx.saved_tensors
        g = torch.ops.motionkit.robust_reprojection_backward(grad_loss.contiguous(), den, *inp, ctx.sigma)
        return (g,) + (None,) * 8

    lib.register_autograd("motionkit::robust_reprojection", rep_backward, setup_context=rep_setup)

    def head_setup(ctx, inputs, output):
        ctx.sigma = inputs[-1]
        ctx.save_for_backward(*inputs[:-1])

    def head_backward(ctx, grad):
        g = torch.ops.motionkit.head_motion_backward(grad.contiguous(), *ctx.saved_tensors, ctx.sigma)
        return (g,) + (None,) * 6

    lib.register_autograd("motionkit::head_motion", head_backward, setup_context=head_setup)

    def prior_setup(ctx, inputs, output):
        ctx.scalars = inputs[-2:]
        ctx.save_for_backward(output[1], *inputs[:-2])

    def prior_backward(ctx, grad_terms, grad_den):
        den, *inp = ctx.saved_tensors
        gJ, ggo, grv = torch.ops.motionkit.prior_terms_backward(grad_terms.contiguous(), den, *inp, *ctx.scalars)
        return gJ, None, None, None, None, None, ggo, grv, None, None, None, None

    lib.register_autograd("motionkit::prior_terms", prior_backward, setup_context=prior_setup)

    def knot_setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs[1:])

    def knot_backward(ctx, grad):
        return (torch.ops.motionkit.knot_sequence_backward(grad, *ctx.saved_tensors),) + (None,) * 4

    lib.register_autograd("motionkit::knot_sequence", knot_backward, setup_context=knot_setup)
    _registered = True


def body_joints(rot6d: torch.Tensor, betas: torch.Tensor, transl: torch.Tensor, model: dict,
                kp_delta: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
    """Posed SMPL-X joints and landmarks.

    Args:
        rot6d: ``(N, R, 3, 2)`` first two columns of the local rotations of joints ``0..R-1`` (global
            orientation first); the other joints keep identity local rotations.
        betas: ``(N, B)``, or ``(P, B)`` shared by ``N / P`` consecutive frames (one take's shape);
            transl: ``(N, 3)`` metres.
        kp_delta: ``(rows of betas, K, 3)`` metres added to the landmarks' rest template (a take's own
            landmark offsets), zero if not given.
        model: tensors ``J_template (J, 3)``, ``J_shapedirs (J, 3, B)``, ``kp_template (K, 3)``,
            ``kp_shapedirs (K, 3, B)``, ``kp_posedirs (>= (R-1) 9, 3 Kp)`` (the first ``Kp <= K`` landmarks
            have pose correctives), ``kp_weights (K, J)``,
            ``parents (J,)`` int64 (``BodyModel.kernel_tensors()``).

    Returns:
        ``(N, J + K, 3)`` in the frame of the global orientation, plus ``transl``.
    """
    register_autograd()
    if kp_delta is None:
        kp_delta = betas.new_zeros(betas.shape[0], model["kp_template"].shape[0], 3)
    return torch.ops.motionkit.body_joints(
        rot6d.contiguous(), betas.contiguous(), kp_delta.contiguous(), transl.contiguous(), model["J_template"],
        model["J_shapedirs"], model["kp_template"], model["kp_shapedirs"], model["kp_posedirs"], model["kp_weights"],
        model["parents"],
    )  # fmt: skip


def knot_sequence(params: torch.Tensor, basis, weight: torch.Tensor | None = None) -> torch.Tensor:
    """``basis.sequence(params, weight)`` (``motionkit.body.multiscale.KnotBasis``) in one operator:
    ``params (P, N, *S)`` -> ``(P, M, *S)``; ``weight (M, E, *S)`` per channel, or None for the basis's
    own weights (every channel alike)."""
    register_autograd()
    if not basis.levels:  # the per-frame values only, times their weights
        return params if weight is None else params * weight[:, 0]
    P, N, S = params.shape[0], params.shape[1], params.shape[2:]
    w = basis.weight[..., None] if weight is None else weight.reshape(*basis.weight.shape, -1)
    flat = torch.ops.motionkit.knot_sequence(params.reshape(P, N, -1).contiguous(), basis.index, w.contiguous(),
                                             basis.readers, basis.reader_ptr)  # fmt: skip
    return flat.view(P, basis.n_frames, *S)


def rot6d_to_rotvec(rot6d: torch.Tensor) -> torch.Tensor:
    """``(..., 3, 2)`` 6D rotations -> ``(..., 3)`` shortest-arc rotation vectors (radians)."""
    register_autograd()
    flat = rot6d.reshape(-1, 3, 2).contiguous()
    return torch.ops.motionkit.rot6d_to_rotvec(flat).reshape(*rot6d.shape[:-2], 3)


def robust_reprojection(
    joints, R_cw, t_cw, params, theta_max, obs_px, weight, sigma: float, partner: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-problem robust KB3 reprojection loss ``(P,)``: ``sum w GMoF(r^2) / sum w`` (see
    ``motionkit.body.objective.robust_reprojection``), fused in one pass.

    ``joints (P, M, J, 3)`` world; ``R_cw (P, V, 3, 3)``, ``t_cw (P, V, 3)``, ``params (P, V, 8)``,
    ``theta_max (P, V)``; ``obs_px (P, M, V, J, 2)``; ``weight (P, M, V, J)``; ``partner (J,)`` int64,
    each joint's interchangeable counterpart or -1 (``reprojection_partners``; None: no pairs), on the
    joints' device. Gradient w.r.t. ``joints`` only (cameras and observations are constants of the fit).
    """
    register_autograd()
    if partner is None:
        partner = torch.full((joints.shape[-2],), -1, dtype=torch.int64, device=joints.device)
    c = [x.contiguous() for x in (joints, R_cw, t_cw, params, theta_max, obs_px, weight, partner)]
    return torch.ops.motionkit.robust_reprojection(*c, float(sigma))[0]


def head_motion(joints, rows, anchor_delta, weight, sigma: float) -> torch.Tensor:
    """Per-problem Aria head term ``(P, 1)``, fused: same arguments and result as
    ``motionkit.body.objective.head_motion`` (``rows`` a ``HeadRows``: its index and, for the backward
    pass, the same reads listed by row), all contiguous (no copies: the operator checks them, and the body
    output's size against the rows: ``ValueError``). Gradient w.r.t. ``joints`` only."""
    register_autograd()
    return torch.ops.motionkit.head_motion(joints, rows.index, anchor_delta, weight, rows.readers, rows.reader_ptr,
                                           float(sigma))  # fmt: skip


_limit_tables: dict = {}


def _limit_table(limits, n_rot: int, like: torch.Tensor) -> torch.Tensor:
    """``(L, 4)`` tensor (rv column, axis, lower, upper) of ``limits`` on ``like``'s device and dtype,
    built and checked once per (limits, device, dtype): no host-to-device copy per iteration."""
    key = (tuple(limits), n_rot, like.device, like.dtype)
    if key not in _limit_tables:
        rows = [(j - 1, axis, lo, hi) for j, axis, lo, hi in limits]
        if any(not (0 <= r[0] < n_rot and 0 <= r[1] < 3) for r in rows):
            raise ValueError(f"joint limits {limits} name joints outside 1..{n_rot} or axes outside 0..2")
        _limit_tables[key] = torch.tensor(rows, dtype=like.dtype).reshape(-1, 4).to(like.device)
    return _limit_tables[key]


def _bone_table(bones, n_rot6d: int, like: torch.Tensor) -> torch.Tensor:
    """``(B, 6)`` tensor (rot6d joint, column, sign, axis, lower, upper) of the ``bones`` rows
    (``objective.bone_ranges``) on ``like``'s device and dtype, built and checked once per (rows,
    device, dtype)."""
    key = ("bones", tuple(bones), n_rot6d, like.device, like.dtype)
    if key not in _limit_tables:
        if any(not (0 <= b[0] < n_rot6d and b[1] in (0, 1) and b[2] in (-1, 1) and 0 <= b[3] < 3) for b in bones):
            raise ValueError(f"bone rows {bones} name joints outside 0..{n_rot6d - 1}, columns but 0 and 1, signs "
                             "but +-1 or axes outside 0..2")  # fmt: skip
        _limit_tables[key] = torch.tensor(bones, dtype=like.dtype).reshape(-1, 6).to(like.device)
    return _limit_tables[key]


def prior_terms(J, coco, tri, tri_w, fm, fps, rot6d, rv, sigma_3d: float, limits=None, n_acc: int = 55,
                bones=()) -> torch.Tensor:  # fmt: skip
    """The fit's terms besides the reprojection, ``(P, 6)``, fused: same arguments and result as
    ``motionkit.body.objective.prior_terms`` (3D agreement, acceleration, orientation change, pose,
    joint limits, bone ranges). Gradients w.r.t. ``J``, ``rot6d`` (the root, and the joints of
    ``bones``) and ``rv``."""
    register_autograd()
    table = _limit_table(SMPLX_JOINT_LIMITS if limits is None else limits, rv.shape[-2], J)
    bone_table = _bone_table(bones, rot6d.shape[-3], J)
    c = [x.contiguous() for x in (J, coco, tri, tri_w, fm, fps, rot6d, rv)]
    return torch.ops.motionkit.prior_terms(*c, table, bone_table, float(sigma_3d), int(n_acc))[0]


class KernelAdam:
    """Adam (torch's update rule, no weight decay) on the ``motionkit::adam_step_`` operator: one
    operator per parameter and step, and every element updated by the same arithmetic wherever it sits
    in its tensor, so that a problem fitted in a batch gets exactly the update it gets alone (torch's
    fused CPU Adam rounds vector-body and tail elements differently). ``lr`` and the step count live in
    tensors on the parameters' device (CUDA graphs replay the update with their current values);
    ``param_groups[0]["lr"]`` is that tensor."""

    def __init__(self, params: list[torch.Tensor], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:  # fmt: skip
        self.params = list(params)
        like = self.params[0]
        self.lr = torch.tensor(lr, dtype=like.dtype, device=like.device)
        self.step_count = torch.zeros((), dtype=like.dtype, device=like.device)
        self.betas, self.eps = betas, eps
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        self.param_groups = [{"lr": self.lr, "params": self.params}]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        self.step_count.add_(1)
        for p, m, v in zip(self.params, self.exp_avg, self.exp_avg_sq, strict=True):
            if p.grad is not None:
                torch.ops.motionkit.adam_step_(p, m, v, p.grad, self.lr, self.step_count, self.betas[0],
                                               self.betas[1], self.eps)  # fmt: skip
