"""Multi-view SMPL-X sequence fitting (docs/pipeline.md, "fit"): one optimisation per take, body shape
shared by the take, robust KB3 reprojection into every selected view, agreement with triangulated
joints, temporal smoothness in physical units, pose L2 plus joint limits, and a shape prior.

All frames of a window are optimised together on one device (float32); long takes are cut into
overlapping windows with the shape fitted first on a subsample and then frozen.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import roma
import torch
from scipy.ndimage import gaussian_filter1d

from motionkit.body.model import BodyModel
from motionkit.body.multiscale import knot_basis
from motionkit.conventions import (
    COCO17_FLIP,
    COCO17_LIMB_LR_PAIRS,
    SMPLX_JOINT_LIMITS,
    SMPLX_NUM_JOINTS,
    SMPLX_PARENTS,
    SMPLX_TO_COCO17,
    TAKE_FPS,
    TORSO_COCO17,
    TORSO_SMPLX,
)
from motionkit.geometry.fisheye import kb3_project_torch, theta_max_np
from motionkit.geometry.interpolation import blend_bracket, fill_gaps_bracket, lerp, slerp_rotmat, slerp_rotvec
from motionkit.geometry.procrustes import procrustes
from motionkit.geometry.refine import CameraRefineConfig, CameraRefinement, chain_refinements, refine_camera_poses
from motionkit.geometry.robust import gmof
from motionkit.kernels import loader as kernel_loader
from motionkit.kernels import ops as kernel_ops

KERNEL_CHOICES = ("auto", "torch", "fused")
FACE_KEYPOINTS = ("nose", "right_eye", "left_eye", "right_ear", "left_ear")
JOINT_LIMITS = SMPLX_JOINT_LIMITS
# COCO limbs used for the shape initialisation: (COCO a, COCO b, SMPL-X a, SMPL-X b)
SHAPE_LIMBS = (
    (5, 7, 16, 18),
    (7, 9, 18, 20),
    (6, 8, 17, 19),
    (8, 10, 19, 21),
    (11, 13, 1, 4),
    (13, 15, 4, 7),
    (12, 14, 2, 5),
    (14, 16, 5, 8),
    (5, 6, 16, 17),
    (11, 12, 1, 2),
    (5, 11, 16, 1),
    (6, 12, 17, 2),
)


@dataclass
class BodyFitConfig:
    """Weights and schedule of the body fit (docs/pipeline.md, "fit"); defaults tuned on synthetic takes."""

    iters: tuple[int, int, int] = (100, 200, 150)  # stages A, B, C (Adam)
    lr: float = 0.02
    lr_final: float = 0.02  # each stage ends at this fraction of lr (half cosine) ...
    lr_decay_from: float = 0.3  # ... starting at this fraction of its iterations (converged ends: fits
    # that differ by float rounding agree to ~0.5 mm instead of ~2 mm, and are as accurate or better)
    sigma_px: float = 100.0
    w_rep: float = 1.0
    w_3d: tuple[float, float] = (0.1, 0.01)  # stages A-B, C
    w_smooth: float = 1e-4  # mean squared acceleration (m/s^2)^2 of the joints (3e-5 before time_levels)
    w_orient_smooth: float = 1.0
    w_pose: float = 1e-5
    w_limits: float = 1.0
    w_shape: float = 1e-5
    w_landmark: float = 1e-3  # prior on the take's landmark offsets (stage C; 0: joint centres, no offsets)
    landmark_sigma_m: float = 0.1  # ... sum of (offset / sigma)^2
    sigma_3d_m: float = 0.1
    time_levels: int = 9  # knots every 2 .. 2**time_levels frames under the body-joint rotations and the
    # translation (body/multiscale.py: Adam then corrects slow errors as fast as quick ones); 0: per frame only
    tri_smooth_s: float = 0.25  # Gaussian sigma (s) of the temporal smoothing of the triangulated joints
    second_pass_px: float = 30.0  # after stage C, drop observations farther than this from the fitted body
    second_pass_sides: bool = True  # ... and those nearer their left/right counterpart's projection than their own
    second_pass_pairs: bool = True  # ... and then their left/right partners as well
    symmetric_limbs: bool = True  # each view's limb pair costs the cheaper of its two labellings (reprojection_loss)
    symmetric_limbs_from: str = "C"  # from this stage on ("B", or "C": the pose first fits the labels as given)
    second_pass_iters: int = 100  # ... and re-run stage C for this many iterations (0: no second pass)
    second_pass_rounds: int = 2  # drop-and-refit rounds (the second finds what the first fit's errors hid)
    refine_cameras: bool = True  # then move each camera onto the fitted landmarks and fit again ...
    camera_refine_rounds: int = 2  # ... this many times
    camera_refine: CameraRefineConfig = CameraRefineConfig()
    window: int = 600
    overlap: int = 40
    max_gap_s: float = 0.5
    device: str = "cpu"  # torch device, or "auto" (CUDA when available)
    kernels: str = "auto"  # "torch" (reference), "fused" (csrc/ operators) or "auto" (fused when built)
    cuda_graphs: bool = True  # on CUDA with fused kernels, replay each stage's Adam iteration as a CUDA graph

    def __post_init__(self) -> None:
        if self.kernels not in KERNEL_CHOICES:
            raise ValueError(f"kernels must be one of {KERNEL_CHOICES}, not {self.kernels!r}")
        if self.symmetric_limbs_from not in ("B", "C"):
            raise ValueError(f"symmetric_limbs_from must be 'B' or 'C', not {self.symmetric_limbs_from!r}")


FitConfig = BodyFitConfig  # the name used before 0.2; kept working


@dataclass
class FitInputs:
    """Everything the fit needs, on the fit grid of ``M`` frames at ``fps``.

    ``keypoints (M, V, 17, 2)`` raw pixels and ``weights (M, V, 17)`` (confidence x association
    confidence, 0 where unused); ``obs_frame (M,)`` the 30 fps frame each observation comes from;
    ``tri (M, 17, 3)`` triangulated joints (NaN missing); camera ``params (V, 8)`` and
    ``T_cam_world (V, 4, 4)``.
    """

    fps: float
    keypoints: np.ndarray
    weights: np.ndarray
    obs_frame: np.ndarray
    tri: np.ndarray
    params: np.ndarray
    T_cam_world: np.ndarray
    t0_s: float = 0.0  # take time of grid frame 0 (windows of a long take start later)


@dataclass
class FitOutput:
    betas: np.ndarray  # (10,)
    global_orient: np.ndarray  # (M, 3) axis-angle, world z up
    body_pose: np.ndarray  # (M, 21, 3)
    transl: np.ndarray  # (M, 3)
    joints: np.ndarray  # (M, 55 + K, 3)
    reproj_px: np.ndarray  # (M, V) mean reprojection error of the used observations (NaN where none)
    obs_weight: np.ndarray | None = None  # (M, V, 17) final weight of every observation (0: unused or dropped)
    n_dropped: int = 0  # observations dropped by the second pass
    losses: dict = field(default_factory=dict)
    kp_delta: np.ndarray | None = None  # (L, 3) offsets of the body's joint landmarks (joint frames, metres)
    camera_refinement: CameraRefinement | None = None  # the cameras the fit used, when it refined them


# ------------------------------------------------------------------------------------------------ losses
def reprojection_loss(joints_world, R_cw, t_cw, params, obs_px, weight, sigma, theta_max=None, partner=None):
    """Robust reprojection of ``joints_world (..., M, J, 3)`` into ``V`` fisheye cameras
    (``R_cw (..., V, 3, 3)``, ``t_cw (..., V, 3)``, ``params (..., V, 8)``) against ``obs_px
    (..., M, V, J, 2)`` with ``weight (..., M, V, J)``: per problem ``sum w GMoF(|pi(X) - x|; sigma) /
    sigma^2 / sum w``, shape ``(...)``. ``theta_max (..., V)``: the cameras' valid angles, if precomputed.
    ``partner (J,)`` int64: each joint's interchangeable counterpart, or -1 (``reprojection_partners``);
    where both joints of such a pair are observed in a view, the pair costs the cheaper of its two
    labellings (a detector's left/right confusion costs nothing then, whichever view made it).

    One function on purpose: a fused CUDA kernel can replace it.
    """
    pc = torch.einsum("...vij,...mkj->...mvki", R_cw, joints_world) + t_cw[..., None, :, None, :]
    tmax = None if theta_max is None else theta_max[..., None, :, None]
    uv, valid = kb3_project_torch(pc, params[..., None, :, None, :], return_valid=True, theta_max=tmax)
    w = weight * valid
    r2 = ((uv - obs_px) ** 2).sum(-1)
    per_obs = w * gmof(torch.where(w > 0, r2, torch.zeros_like(r2)), sigma)
    if partner is not None:
        other = partner.clamp_min(0)
        pair = (partner >= 0) & (w > 0) & (w[..., other] > 0)
        r2x = ((uv[..., other, :] - obs_px) ** 2).sum(-1)  # observation j against its partner's projection
        crossed_obs = w * gmof(torch.where(pair, r2x, torch.zeros_like(r2x)), sigma)
        crossed = pair & (crossed_obs + crossed_obs[..., other] < per_obs + per_obs[..., other])
        per_obs = torch.where(crossed, crossed_obs, per_obs)
    return per_obs.sum((-1, -2, -3)) / w.sum((-1, -2, -3)).clamp_min(1e-6)


def reprojection_partners(pairs: tuple[tuple[int, int], ...], n_joints: int) -> np.ndarray:
    """``(n_joints,)`` int64: each joint's counterpart in ``pairs`` (disjoint index pairs), -1 for the others."""
    partner = np.full(n_joints, -1, dtype=np.int64)
    for a, b in pairs:
        if not (0 <= a < n_joints and 0 <= b < n_joints and a != b) or partner[a] >= 0 or partner[b] >= 0:
            raise ValueError(f"pairs must be disjoint pairs of distinct joints below {n_joints}; got {pairs}")
        partner[a], partner[b] = b, a
    return partner


def limit_loss(body_pose_rotvec: torch.Tensor, limits=JOINT_LIMITS) -> torch.Tensor:
    """Squared hinge on forbidden local rotations (``limits``: ``(SMPL-X joint, axis, min, max)``):
    ``(..., 21, 3)`` axis-angle -> ``(...)`` per frame."""
    loss = body_pose_rotvec.new_zeros(body_pose_rotvec.shape[:-2])
    for j, axis, lo, hi in limits:
        a = body_pose_rotvec[..., j - 1, axis]
        if math.isfinite(lo):
            loss = loss + torch.relu(lo - a).pow(2)
        if math.isfinite(hi):
            loss = loss + torch.relu(a - hi).pow(2)
    return loss


PRIOR_TERMS = ("3d", "smooth", "orient", "pose", "limits")


def prior_terms(J, coco, tri, tri_w, fm, fps, rot6d, rv, sigma_3d: float, limits=JOINT_LIMITS, n_acc: int = 55):
    """The objective's terms besides the reprojection, unweighted, per problem: ``(P, 5)`` in the order
    of ``PRIOR_TERMS`` (torch reference of ``motionkit.kernels.ops.prior_terms``). Each is a masked mean
    ``sum w x / max(sum w, 1)``:

    * ``3d``: ``GMoF(|J[..., coco, :] - tri|^2; sigma_3d)`` with weights ``tri_w (P, M, C)``;
    * ``smooth``: mean squared acceleration (m/s^2) of the first ``n_acc`` joints, weight ``fm`` of the
      three frames (``fps (P,)``);
    * ``orient``: squared change of the 6D global orientation ``rot6d[:, :, 0]`` between frames
      (``rot6d (P, M, R, 3, 2)``: joint 0 is the root);
    * ``pose``: squared angle of the local rotations ``rv (P, M, 21, 3)``; ``limits``: ``limit_loss``.

    ``J (P, M, Jn, 3)`` metres; ``coco (C,)`` int64; ``tri (P, M, C, 3)``; ``fm (P, M)`` 1 for real frames.
    """

    def masked_mean(x, w):
        return (x * w).sum(tuple(range(1, x.dim()))) / w.sum(tuple(range(1, w.dim()))).clamp_min(1)

    zero = J.new_zeros(J.shape[0])
    d2 = ((J[:, :, coco] - tri) ** 2).sum(-1)
    t3d = masked_mean(gmof(d2, sigma_3d), tri_w)
    smooth = orient = zero
    if J.shape[1] >= 3:
        acc = (J[:, 2:, :n_acc] - 2 * J[:, 1:-1, :n_acc] + J[:, :-2, :n_acc]) * (fps**2)[:, None, None, None]
        smooth = masked_mean((acc**2).sum(-1).mean(-1), fm[:, 2:] * fm[:, 1:-1] * fm[:, :-2])
    if J.shape[1] >= 2:
        go6 = rot6d[:, :, 0]
        orient = masked_mean(((go6[:, 1:] - go6[:, :-1]) ** 2).sum((-1, -2)), fm[:, 1:] * fm[:, :-1])
    pose = masked_mean((rv**2).sum((-1, -2)), fm)
    lim = masked_mean(limit_loss(rv, limits), fm)
    return torch.stack([t3d, smooth, orient, pose, lim], -1)


# ------------------------------------------------------------------------------------------------ initialisation
def rotation_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Minimal rotation ``(..., 3, 3)`` taking directions ``a`` onto ``b`` (identity where undefined)."""
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    v = np.cross(a, b)
    c = (a * b).sum(-1)
    s = np.linalg.norm(v, axis=-1)
    axis = v / np.maximum(s, 1e-12)[..., None]
    ang = np.arctan2(s, c)
    rv = axis * ang[..., None]
    ok = np.isfinite(rv).all(-1) & (c > -1 + 1e-9)
    rv = np.where(ok[..., None], rv, 0.0)
    return roma.rotvec_to_rotmat(torch.as_tensor(rv)).numpy()


def kabsch(src: np.ndarray, dst: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-frame rigid alignment ``dst ~ R src + t`` on masked points: ``src (K, 3)``, ``dst (M, K, 3)``,
    ``mask (M, K)`` -> ``R (M, 3, 3)``, ``t (M, 3)``, ``ok (M,)`` (3 or more points)."""
    _, R, t = procrustes(np.broadcast_to(src, dst.shape), dst, mask)
    return R, t, mask.sum(1) >= 3


def _fill_invalid(R: np.ndarray, t: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rotations ``R (M, 3, 3)`` and vectors ``t (M, 3)`` of frames without ``ok`` filled from the
    nearest valid frames (SLERP / linear inside, held at the ends); identity and zero if none is valid."""
    if not ok.any():
        return np.tile(np.eye(3), (len(R), 1, 1)), np.zeros_like(t)
    b = fill_gaps_bracket(ok)
    R_out, t_out = slerp_rotmat(R[ok], b), lerp(t[ok], b)
    R_out[ok], t_out[ok] = R[ok], t[ok]
    return R_out, t_out


def smooth_in_time(x: np.ndarray, sigma_frames: float, min_support: float = 0.3) -> np.ndarray:
    """NaN-aware Gaussian smoothing of ``x (M, ...)`` along axis 0 (normalised convolution): missing
    samples are filled where enough valid neighbours exist (``min_support`` of the kernel mass) and
    stay NaN elsewhere. ``sigma_frames <= 0`` returns ``x``."""
    if sigma_frames <= 0:
        return x
    ok = np.isfinite(x)
    num = gaussian_filter1d(np.where(ok, x, 0.0), sigma_frames, axis=0, mode="nearest")
    den = gaussian_filter1d(ok.astype(np.float64), sigma_frames, axis=0, mode="nearest")
    return np.where(den >= min_support, num / np.maximum(den, 1e-12), np.nan)


def init_shapes(body: BodyModel, tris: list[np.ndarray], iters: int = 200) -> list[np.ndarray]:
    """Betas ``(10,)`` per problem whose limb lengths match the median triangulated limb lengths of
    ``tris[p] (M_p, 17, 3)``; all problems in one Adam optimisation (their losses are independent).
    A problem with fewer than 4 measurable limbs (5 frames or more) keeps the mean shape."""
    target = np.zeros((len(tris), len(SHAPE_LIMBS)))
    ok = np.zeros((len(tris), len(SHAPE_LIMBS)), dtype=bool)
    for p, tri in enumerate(tris):
        for k, (ca, cb, _, _) in enumerate(SHAPE_LIMBS):
            d = np.linalg.norm(tri[:, ca] - tri[:, cb], axis=-1)
            d = d[np.isfinite(d)]
            if len(d) >= 5:
                target[p, k], ok[p, k] = np.median(d), True
    ok &= ok.sum(1, keepdims=True) >= 4
    solve = ok.any(1)
    out = np.zeros((len(tris), 10))
    if not solve.any():
        return list(out)
    # float64: the result of a problem must not depend on what else is in the batch (rounding of batched
    # float32 products would differ at 1e-7, which the fit can amplify)
    dt, dev = torch.float64, body.J_template.device
    tgt = torch.as_tensor(target[solve], dtype=dt, device=dev)
    mask = torch.as_tensor(ok[solve], dtype=dt, device=dev)
    a = torch.as_tensor([limb[2] for limb in SHAPE_LIMBS], device=dev)
    b = torch.as_tensor([limb[3] for limb in SHAPE_LIMBS], device=dev)
    betas = torch.zeros(int(solve.sum()), 10, dtype=dt, device=dev, requires_grad=True)
    opt = torch.optim.Adam([betas], lr=0.05)
    for _ in range(iters):
        J = body.rest_joints(betas)
        ln = (J[:, a] - J[:, b]).norm(dim=-1)
        limb_err = (((ln - tgt) ** 2) * mask).sum(1) / mask.sum(1)
        loss = (limb_err * 100 + 1e-3 * (betas**2).mean(1)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    out[solve] = betas.detach().cpu().double().numpy()
    return list(out)


def init_shape(body: BodyModel, tri: np.ndarray, iters: int = 200) -> np.ndarray:
    """Betas of one take (``init_shapes`` of one problem)."""
    return init_shapes(body, [tri], iters)[0]


def init_pose(body: BodyModel, betas: np.ndarray, tri: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Global orientation and translation by Kabsch on the torso, and swing-only limb rotations.

    Returns ``(global_orient (M, 3, 3), body_pose (M, 21, 3, 3), transl (M, 3))``.
    """
    with torch.no_grad():
        b = torch.as_tensor(betas, dtype=body.J_template.dtype, device=body.J_template.device)
        Jr = body.rest_joints(b).double().cpu().numpy()
    M = len(tri)
    torso = tri[:, TORSO_COCO17]
    mask = np.isfinite(torso).all(-1)
    R, t, ok = kabsch(Jr[TORSO_SMPLX], torso, mask)
    R, t = _fill_invalid(R, t, ok)
    transl = t + np.einsum("mij,j->mi", R, Jr[0]) - Jr[0]
    pose = np.tile(np.eye(3), (M, 21, 1, 1))
    G = {0: R}
    for s_chain, c_chain in (
        ((1, 4, 7), (11, 13, 15)),
        ((2, 5, 8), (12, 14, 16)),
        ((16, 18, 20), (5, 7, 9)),
        ((17, 19, 21), (6, 8, 10)),
    ):
        for k in range(2):
            j, child = s_chain[k], s_chain[k + 1]
            parent = SMPLX_PARENTS[j]
            Gp = G.get(parent)
            if Gp is None:  # collars and spine stay at identity: their global rotation is the root's
                Gp = R
            target = tri[:, c_chain[k + 1]] - tri[:, c_chain[k]]
            local_t = np.einsum("mji,mj->mi", Gp, target)
            rest = np.broadcast_to(Jr[child] - Jr[j], local_t.shape)
            Rl = rotation_between(rest, local_t)
            good = np.isfinite(target).all(-1)
            Rl[~good] = np.eye(3)
            pose[:, j - 1] = Rl
            G[j] = Gp @ Rl
    return R, pose, transl


# ------------------------------------------------------------------------------------------------ the fit
def use_fused_kernels(kernels: str, device: torch.device) -> bool:
    """Whether the fit runs on the fused operators: never for ``"torch"``; for ``"auto"`` where they are
    built for ``device``; ``"fused"`` insists (``RuntimeError`` naming why they are missing)."""
    if kernels == "torch":
        return False
    ok = kernel_loader.available(device)
    if kernels == "fused" and not ok:
        why = kernel_loader.status(load=False)["error"] or f"no fused operators for {device.type}"
        raise RuntimeError(f"kernels='fused' requested but {why}; use kernels='torch' or 'auto'")
    return ok


def adam(params: list[torch.Tensor], lr: float, fused: bool = False, capturable: bool = False):
    """The fit's Adam: on the fused path ``motionkit.kernels.ops.KernelAdam`` (one operator per parameter,
    capturable), else torch's multi-tensor (``foreach``) Adam.

    Never torch's fused single-kernel Adam: its CPU kernel rounds an element differently depending on
    where it falls in the tensor (vector body or tail), so a problem's result would depend on what else
    is in the batch. With either of these a take fitted in a batch equals the take fitted alone, bit for
    bit (tested).
    """
    if fused:
        return kernel_ops.KernelAdam(params, lr)
    if capturable:  # a CUDA graph reads the learning rate from device memory: a tensor updated in place
        lr = torch.tensor(lr, dtype=torch.float32, device=params[0].device)
    return torch.optim.Adam(params, lr=lr, foreach=True, capturable=capturable)


CUDA_GRAPH_WARMUP = 3


def lr_schedule(lr: float, n_it: int, final: float, decay_from: float):
    """Learning rate of iteration ``i`` (0-based) of ``n_it``: ``lr`` up to ``decay_from * n_it``, then a
    half cosine down to ``final * lr`` at the last iteration, so that each stage ends converged."""
    start = int(decay_from * n_it)

    def at(i: int) -> float:
        if i < start or n_it - 1 <= start:
            return lr
        x = (i - start) / (n_it - 1 - start)
        return lr * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * x)))

    return at


def _set_lr(opt, value: float) -> None:
    for group in opt.param_groups:
        if isinstance(group["lr"], torch.Tensor):  # CUDA graphs read it from device memory
            group["lr"].fill_(value)
        else:
            group["lr"] = value


def run_iterations(step, n_it: int, graphs: bool, opt, progress=None, lr_at=None):
    """Call ``step()`` (one Adam iteration returning its loss terms) ``n_it`` times, setting the learning
    rate ``lr_at(i)`` before iteration ``i`` (if given). With ``graphs``
    (CUDA), a few warm-up iterations run eagerly on a side stream, the next is captured as a CUDA graph
    and replayed for the rest: one launch per iteration instead of hundreds. Falls back to eager
    iterations (with a warning) if the capture fails."""
    done, terms = 0, None
    if graphs and n_it > CUDA_GRAPH_WARMUP + 1:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(CUDA_GRAPH_WARMUP):
                if lr_at is not None:
                    _set_lr(opt, lr_at(done))
                terms = step()
                done += 1
                if progress is not None:
                    progress(1)
        torch.cuda.current_stream().wait_stream(side)
        try:
            graph = torch.cuda.CUDAGraph()
            opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(graph):
                terms = step()
        except RuntimeError as exc:  # pragma: no cover - needs a GPU
            warnings.warn(f"motionkit: CUDA graph capture failed ({exc}); iterating eagerly", stacklevel=2)
        else:
            for i in range(done, n_it):
                if lr_at is not None:
                    _set_lr(opt, lr_at(i))
                graph.replay()
                if progress is not None:
                    progress(1)
            return terms
    for i in range(done, n_it):
        if lr_at is not None:
            _set_lr(opt, lr_at(i))
        terms = step()
        if progress is not None:
            progress(1)
    return terms


def _obs_interp(fps: float, obs_frame: np.ndarray, M: int, t0_s: float = 0.0):
    """Observation time k/30 between fit grid frames ``t0 + m / fps``: indices ``(m0, m1)`` and weight ``w``."""
    pos = (np.asarray(obs_frame, dtype=np.float64) / TAKE_FPS - t0_s) * fps
    m0 = np.clip(np.floor(pos).astype(int), 0, M - 1)
    m1 = np.clip(m0 + 1, 0, M - 1)
    w = np.clip(pos - m0, 0, 1)
    w = np.where(m1 == m0, 0.0, w)
    return m0, m1, w


def fit_sequence(body: BodyModel, inp: FitInputs, cfg: BodyFitConfig | None = None, betas: np.ndarray | None = None,
                 progress=None) -> FitOutput:  # fmt: skip
    """Fit one SMPL-X sequence (one take or window) to multi-view keypoints; see ``fit_batch``."""
    return fit_batch(body, [inp], cfg, None if betas is None else [betas], progress)[0]


def _pad(a: np.ndarray, n: int, axis: int = 0) -> np.ndarray:
    """Pad ``a`` to length ``n`` along ``axis`` by repeating its last entry."""
    if a.shape[axis] == n:
        return a
    idx = np.minimum(np.arange(n), a.shape[axis] - 1)
    return np.take(a, idx, axis=axis)


def fit_batch(body: BodyModel, inputs: list[FitInputs], cfg: BodyFitConfig | None = None,
              betas: list[np.ndarray] | None = None, progress=None,
              kp_delta: list[np.ndarray] | None = None) -> list[FitOutput]:  # fmt: skip
    """Fit several independent sequences at once (stacked on a leading problem axis, padded to the
    longest one and to the most views): every loss is computed per problem and then summed, so with
    Adam's per-parameter updates the problems stay independent, while a GPU sees one large batch.

    ``betas``: fixed shapes, one per problem (long takes fit it first); otherwise initialised from
    limb lengths and optimised in stage C. ``progress``: optional callable(int), once per iteration.
    ``kp_delta``: with ``betas``, the problems' fixed landmark offsets ``(L, 3)`` (``FitOutput.kp_delta``).

    The COCO keypoints are the body's rows ``coco_rows(body)``: with a ``fit_body_model`` the limb
    keypoints are joint landmarks whose offsets from the joint centres (in the joints' frames, one set
    per take) are learned in stage C with the prior ``w_landmark * sum (offset / landmark_sigma_m)^2``:
    detectors and annotators mark points on the surface (the trochanter beside and above the hip
    joint, the patella in front of the knee), not joint centres.
    """
    cfg = cfg or BodyFitConfig()
    dev = kernel_loader.resolve_device(cfg.device)
    fused = use_fused_kernels(cfg.kernels, dev)
    dt = torch.float32
    P = len(inputs)
    Ms = [len(x.keypoints) for x in inputs]
    M, V = max(Ms), max(x.keypoints.shape[1] for x in inputs)
    body = body.to(dev)
    coco_np = coco_rows(body)
    n_vertex, L = len(body.vertex_keypoint_names), len(body.joint_landmarks)
    # triangulated joints are noisy frame by frame (errors of the 2D detector that persist over a few
    # frames): smooth them in time before they initialise the pose and enter the 3D term
    inputs = [dataclasses.replace(x, tri=smooth_in_time(x.tri, cfg.tri_smooth_s * x.fps)) for x in inputs]
    fixed_betas = betas is not None
    b0 = init_shapes(body, [x.tri for x in inputs]) if betas is None else [np.asarray(b, np.float64) for b in betas]
    inits = [init_pose(body, b, x.tri) for b, x in zip(b0, inputs, strict=True)]

    def T(x):
        return torch.as_tensor(np.ascontiguousarray(x), dtype=dt, device=dev)

    def views(a, fill):  # pad the camera axis (axis 1 of per-frame arrays, 0 of camera arrays)
        return a if a.shape[0] == V else np.concatenate([a, np.full((V - a.shape[0], *a.shape[1:]), fill)], 0)

    kp = np.stack(
        [_pad(np.moveaxis(views(np.moveaxis(np.nan_to_num(x.keypoints), 1, 0), 0.0), 0, 1), M) for x in inputs]
    )
    wt = np.stack([_pad(np.moveaxis(views(np.moveaxis(np.where(np.isfinite(x.keypoints).all(-1), x.weights, 0.0), 1, 0),
                                          0.0), 0, 1), M) for x in inputs])  # fmt: skip
    frame_ok = np.stack([np.arange(M) < m for m in Ms]).astype(np.float32)  # (P, M) real frames
    wt = wt * frame_ok[:, :, None, None]
    tri_np = np.stack([_pad(x.tri, M) for x in inputs])
    tri_w = T(np.isfinite(tri_np).all(-1) * frame_ok[:, :, None])
    tri = T(np.nan_to_num(tri_np))
    Tcw = T(np.stack([np.concatenate([x.T_cam_world, np.tile(np.eye(4), (V - len(x.T_cam_world), 1, 1))])
                      for x in inputs]))  # fmt: skip
    params = T(np.stack([np.concatenate([x.params, np.tile(x.params[:1], (V - len(x.params), 1))]) for x in inputs]))
    tmax = T(theta_max_np(params.cpu().double().numpy()))  # (P, V), once: no host sync per iteration
    interp = [_obs_interp(x.fps, x.obs_frame, m, x.t0_s) for x, m in zip(inputs, Ms, strict=True)]
    m0 = torch.as_tensor(np.stack([_pad(a[0], M) for a in interp]), device=dev)
    m1 = torch.as_tensor(np.stack([_pad(a[1], M) for a in interp]), device=dev)
    wj = T(np.stack([_pad(a[2], M) for a in interp]))[..., None, None]
    wj0 = 1 - wj
    fps = torch.as_tensor([x.fps for x in inputs], dtype=dt, device=dev)
    # one leaf for the 6D rotations (first two columns) of the root and the 21 body joints, (P, M + knots,
    # 22, 3, 2), and one for the translations, (P, M + knots, 3): the per-frame values, then the coarse
    # knots of body/multiscale.py (Adam corrects slow errors as fast as quick ones). The root's rotation
    # has no knots (knots spanning a turn swung it the wrong way round)
    R0 = np.concatenate(
        [np.stack([_pad(r[0], M) for r in inits])[:, :, None], np.stack([_pad(r[1], M) for r in inits])], 2
    )
    basis = knot_basis(M, cfg.time_levels, device=dev, dtype=dt)
    root = (torch.arange(22, device=dev) == 0)[:, None, None].expand(22, 3, 2)
    rot_weight = basis.frozen_weights(root).contiguous()  # (M, E, 22, 3, 2)
    # no view of a leaf may outlive an iteration: it would keep the leaf's gradient accumulator (made on
    # the stream of its first use) alive, and a CUDA graph captured on another stream fails on it
    rot = basis.parameters(T(R0[..., :2])).requires_grad_(True)
    transl = basis.parameters(T(np.stack([_pad(r[2], M) for r in inits]))).requires_grad_(True)
    betas_t = T(np.stack(b0)).clone().requires_grad_(not fixed_betas)
    learn_lm = L > 0 and cfg.w_landmark > 0 and kp_delta is None
    lm_off = T(np.stack(kp_delta) if kp_delta is not None else np.zeros((P, L, 3))).clone().requires_grad_(learn_lm)
    lm_pad = torch.zeros(P, n_vertex, 3, dtype=dt, device=dev)  # the vertex keypoints do not move

    def pose_sequence():  # the 6D rotations (P, M, 22, 3, 2) and translations (P, M, 3) the body takes
        if fused:
            return kernel_ops.knot_sequence(rot, basis, rot_weight), kernel_ops.knot_sequence(transl, basis)
        return basis.sequence(rot, rot_weight), basis.sequence(transl)

    kp, wt = T(kp), T(wt)
    fm = T(frame_ok)
    coco = torch.as_tensor(coco_np, device=dev)
    flip = torch.as_tensor(COCO17_FLIP, device=dev)  # each keypoint's left/right counterpart (itself: nose)
    has_side = flip != torch.arange(17, device=dev)
    torso = torch.as_tensor(TORSO_COCO17, device=dev)
    pidx = torch.arange(P, device=dev)[:, None]
    R_cw, t_cw = Tcw[..., :3, :3].contiguous(), Tcw[..., :3, 3].contiguous()
    model = body.kernel_tensors()
    n_betas = betas_t.shape[-1]

    def forward(stage: int = 2, r=None, tr=None):  # (P, M, 55 + K, 3) posed joints and landmarks
        if r is None:  # the rotations and translations of pose_sequence()
            r, tr = pose_sequence()
        # the landmark offsets (P, K, 3): learned in stage C only, constant before
        delta = torch.cat([lm_pad, lm_off if stage >= 2 else lm_off.detach()], 1) if L else lm_pad
        if fused:
            return kernel_ops.body_joints(r.reshape(P * M, 22, 3, 2), betas_t, tr.reshape(P * M, 3), model,
                                          kp_delta=delta).view(P, M, -1, 3)  # fmt: skip
        return body(betas_t[:, None].expand(P, M, n_betas), roma.special_gramschmidt(r[:, :, 0]),
                    roma.special_gramschmidt(r[:, :, 1:]), tr, kp_delta=delta[:, None])  # fmt: skip

    def pose_rotvec(r):  # (P, M, 21, 3) local body-joint rotations as rotation vectors
        if fused:
            return kernel_ops.rot6d_to_rotvec(r)[:, :, 1:]
        return roma.rotmat_to_rotvec(roma.special_gramschmidt(r[:, :, 1:]))

    # each COCO keypoint's interchangeable counterpart (-1 for none: the operator's input either way, made once),
    # from stage `symmetric_limbs_from` on; before it, the labels as given
    pairs = COCO17_LIMB_LR_PAIRS if cfg.symmetric_limbs else ()
    partner = torch.as_tensor(reprojection_partners(pairs, len(coco_np)), device=dev)
    as_labelled = torch.as_tensor(reprojection_partners((), len(coco_np)), device=dev)
    first_symmetric_stage = "ABC".index(cfg.symmetric_limbs_from) if pairs else len(cfg.iters)

    def reprojection(Jo, stage: int):
        symmetric = stage >= first_symmetric_stage
        if fused:
            return kernel_ops.robust_reprojection(Jo, R_cw, t_cw, params, tmax, kp, wt, cfg.sigma_px,
                                                  partner if symmetric else as_labelled)  # fmt: skip
        return reprojection_loss(Jo, R_cw, t_cw, params, kp, wt, cfg.sigma_px, tmax, partner if symmetric else None)

    terms_names = ("rep",) + PRIOR_TERMS + ("shape",) + (("landmarks",) if learn_lm else ())
    no_term = torch.zeros(P, 1, dtype=dt, device=dev)
    torso_mask = torch.zeros(len(SMPLX_TO_COCO17), dtype=dt, device=dev)
    torso_mask[torso] = 1

    def stage_weights(stage: int) -> torch.Tensor:  # (7 or 8,) weight of each term in this stage
        w = dict.fromkeys(terms_names, 0.0)
        w["3d"] = cfg.w_3d[0] if stage < 2 else cfg.w_3d[1]
        if M >= 3:
            w["smooth"], w["orient"] = cfg.w_smooth, cfg.w_orient_smooth
        if stage >= 1:
            w["rep"], w["pose"], w["limits"] = cfg.w_rep, cfg.w_pose, cfg.w_limits
        if stage >= 2 and not fixed_betas:
            w["shape"] = cfg.w_shape
        if stage >= 2 and learn_lm:
            w["landmarks"] = cfg.w_landmark
        return torch.tensor([w[n] for n in terms_names], dtype=dt, device=dev)

    def objective(stage: int, tri_w_stage: torch.Tensor) -> torch.Tensor:  # (P, 7 or 8) unweighted terms
        r, tr = pose_sequence()
        J = forward(stage, r, tr)
        if stage >= 1:
            Jc = J[..., coco, :]
            rep = reprojection(wj0 * Jc[pidx, m0] + wj * Jc[pidx, m1], stage)  # joints at each observation's time
        else:
            rep = J.new_zeros(P)
        prior = kernel_ops.prior_terms if fused else prior_terms
        pri = prior(J, coco, tri, tri_w_stage, fm, fps, r, pose_rotvec(r), cfg.sigma_3d_m)
        terms = [rep[:, None], pri, (betas_t**2).sum(-1)[:, None]]
        if learn_lm:
            terms.append((lm_off**2).sum((1, 2))[:, None] / cfg.landmark_sigma_m**2 if stage >= 2 else no_term)
        return torch.cat(terms, 1)

    def body_projection():  # (P, M, V, 17, 2) the current body's COCO joints in every view, and the joints
        J = forward()
        Jc = J[..., coco, :]
        Jo = wj0 * Jc[pidx, m0] + wj * Jc[pidx, m1]
        # R X + t element by element (not a batched matmul, whose blocking depends on the batch's shape):
        # the second pass's drop decisions must not depend on what else is in the batch
        pc = (R_cw[:, None, :, None] * Jo[:, :, None, :, None, :]).sum(-1) + t_cw[:, None, :, None]
        return kb3_project_torch(pc, params[:, None, :, None, :]), J

    def run(stage: int, vars_: list, n_it: int) -> dict:
        graphs = fused and cfg.cuda_graphs and dev.type == "cuda"
        opt = adam(vars_, cfg.lr, fused=fused, capturable=graphs)
        weights = stage_weights(stage)
        tri_w_stage = tri_w if stage >= 1 else tri_w * torso_mask  # stage A: the torso only

        def step() -> torch.Tensor:
            terms = objective(stage, tri_w_stage)
            opt.zero_grad(set_to_none=True)
            (terms * weights).sum().backward()
            if stage == 0:  # stage A moves the root only: the body joints' rotations get no update
                rot.grad[:, :, 1:] = 0
            opt.step()
            return terms.detach()  # (not the graph: see `rot`)

        lr_at = lr_schedule(cfg.lr, n_it, cfg.lr_final, cfg.lr_decay_from)
        terms = run_iterations(step, n_it, graphs, opt, progress, lr_at)
        weighted = (terms.detach() * weights).cpu().numpy()
        w = weights.cpu().numpy()
        return {name: weighted[:, i] for i, name in enumerate(terms_names) if w[i] != 0}

    history = {}
    stages = ((0, [rot, transl]), (1, [rot, transl]),
              (2, [rot, transl] + ([] if fixed_betas else [betas_t]) + ([lm_off] if learn_lm else [])))  # fmt: skip
    for (stage, vars_), n_it in zip(stages, cfg.iters, strict=True):
        if n_it:
            history[f"stage_{'ABC'[stage]}"] = run(stage, vars_, n_it)
    n_dropped = torch.zeros(P, dtype=torch.int64, device=dev)
    for k in range(cfg.second_pass_rounds if cfg.second_pass_px and cfg.second_pass_iters else 0):
        # drop what disagrees with the fitted body, re-run stage C
        with torch.no_grad():
            uv = body_projection()[0]
            e = ((uv - kp) ** 2).sum(-1).sqrt()
            used = wt > 0
            drop = used & ~(e <= cfg.second_pass_px)
            if cfg.second_pass_sides:  # a left/right label the fitted body contradicts (or cannot tell)
                e_other = ((uv[..., flip, :] - kp) ** 2).sum(-1).sqrt()
                contradicted = used & has_side & (e_other < e)
                if cfg.second_pass_pairs:  # a swap moves both labels of a pair: its partner goes too
                    contradicted |= used & contradicted[..., flip]
                drop |= contradicted
            n_dropped = n_dropped + drop.sum((1, 2, 3))
            wt = torch.where(drop, torch.zeros_like(wt), wt)
        history["second_pass" + (f"_{k + 1}" if k else "")] = run(2, stages[2][1], cfg.second_pass_iters)

    with torch.no_grad():
        uv, J = body_projection()
        e = ((uv - kp) ** 2).sum(-1).sqrt()
        used = wt > 0
        reproj = torch.where(used.any(-1), (torch.where(used, e, 0).sum(-1) / used.sum(-1).clamp_min(1)), float("nan"))
        rot_e, transl_e = pose_sequence()
        rv = roma.rotmat_to_rotvec(roma.special_gramschmidt(rot_e)).cpu().double().numpy()  # (P, M, 22, 3)
        go_rv, bp_rv = rv[:, :, 0], rv[:, :, 1:]
        wt_np = wt.cpu().double().numpy()
    outs = []
    for k, (x, m) in enumerate(zip(inputs, Ms, strict=True)):
        v = x.keypoints.shape[1]
        outs.append(FitOutput(
            betas=betas_t[k].detach().cpu().double().numpy(), global_orient=go_rv[k, :m], body_pose=bp_rv[k, :m],
            transl=transl_e[k, :m].detach().cpu().double().numpy(), joints=J[k, :m].cpu().double().numpy(),
            reproj_px=reproj[k, :m, :v].cpu().double().numpy(), obs_weight=wt_np[k, :m, :v],
            n_dropped=int(n_dropped[k]),
            losses={st: {n: float(val[k]) for n, val in terms.items()} for st, terms in history.items()},
            kp_delta=lm_off[k].detach().cpu().double().numpy(),
        ))  # fmt: skip
    return outs


# the SMPL-X joints whose landmarks are the COCO limb keypoints (shoulders .. ankles) in a fit body model
FIT_JOINT_LANDMARKS = tuple(int(j) for j in SMPLX_TO_COCO17[5:])


def fit_body_model(path=None) -> BodyModel:
    """The body model the fit uses: SMPL-X joints, the face vertex keypoints and a landmark attached to
    each COCO limb joint (``FIT_JOINT_LANDMARKS``), whose offsets each take learns."""
    return BodyModel.load(path, vertex_keypoints=FACE_KEYPOINTS, joint_landmarks=FIT_JOINT_LANDMARKS)


def coco_rows(body: BodyModel) -> np.ndarray:
    """``(17,)`` rows of ``body``'s output holding the COCO-17 keypoints: the face vertex keypoints, and
    for the limbs the joint landmarks where the body has them, else the joint centres."""
    rows = SMPLX_TO_COCO17.copy()
    base = SMPLX_NUM_JOINTS + len(body.vertex_keypoint_names)
    for c in range(5, 17):
        if int(SMPLX_TO_COCO17[c]) in body.joint_landmarks:
            rows[c] = base + body.joint_landmarks.index(int(SMPLX_TO_COCO17[c]))
    return rows


def coco_landmark_offsets(body: BodyModel, kp_delta: np.ndarray | None) -> np.ndarray:
    """``(17, 3)``: the learned offset (``FitOutput.kp_delta``, joint frames, metres) of each COCO
    keypoint that is one of ``body``'s joint landmarks; 0 elsewhere (face, joint centres)."""
    off = np.zeros((17, 3))
    if kp_delta is not None:
        rows = coco_rows(body) - SMPLX_NUM_JOINTS - len(body.vertex_keypoint_names)  # landmark index, or < 0
        off[rows >= 0] = np.asarray(kp_delta)[rows[rows >= 0]]
    return off


def eye_midpoint(joints: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """Midpoint of the vertex eyes ``(M, 3)`` from a BodyModel output with those keypoints."""
    return 0.5 * (joints[:, 55 + names.index("left_eye")] + joints[:, 55 + names.index("right_eye")])


def _slice_inputs(inp: FitInputs, start: int, stop: int, step: int = 1) -> FitInputs:
    """Grid frames ``start:stop:step`` of the inputs, with their own time origin and rate."""
    idx = np.arange(start, stop, step)
    return FitInputs(inp.fps / step, inp.keypoints[idx], inp.weights[idx], inp.obs_frame[idx], inp.tri[idx],
                     inp.params, inp.T_cam_world, inp.t0_s + start / inp.fps)  # fmt: skip


def fit_take(body: BodyModel, inp: FitInputs, cfg: BodyFitConfig | None = None, progress=None) -> FitOutput:
    """Fit a whole take: one window, or (longer than ``cfg.window`` frames) the shape first on every
    10th frame, then overlapping windows with that shape frozen, cross-faded in the overlaps
    (linear for translation and joints, SLERP for rotations). See ``fit_takes``."""
    return fit_takes(body, [inp], cfg, progress)[0]


def _windows(M: int, cfg: BodyFitConfig) -> list[tuple[int, int]]:
    """``(start, stop)`` grid frames of the overlapping windows of a take of ``M > cfg.window`` frames."""
    out = []
    for s in range(0, M - cfg.overlap, cfg.window - cfg.overlap):
        e = min(s + cfg.window, M)
        out.append((s, e))
        if e == M:
            break
    return out


def fit_takes(body: BodyModel, inputs: list[FitInputs], cfg: BodyFitConfig | None = None,
              progress=None) -> list[FitOutput]:  # fmt: skip
    """Fit several takes on one device with at most two ``fit_batch`` calls: first every short take
    (``<= cfg.window`` frames) together with the shape problems of the long ones (every 10th frame),
    then all windows of all long takes with their shapes frozen. Each take's result equals fitting it
    alone with ``fit_take`` (the problems of a batch are independent).

    With ``cfg.refine_cameras``, each take's cameras are then moved onto its fitted landmarks
    (``refine_camera_poses``, with the fit's final observation weights) and the takes are fitted again
    through them, ``cfg.camera_refine_rounds`` times; ``FitOutput.camera_refinement`` holds the cameras
    used and their change from the calibration."""
    cfg = cfg or BodyFitConfig()
    outs = _fit_takes_once(body, inputs, cfg, progress)
    rounds = cfg.camera_refine_rounds if cfg.refine_cameras else 0
    if not rounds:
        return outs
    rows = coco_rows(body)
    calibrated = [x.T_cam_world for x in inputs]
    history = [[] for _ in inputs]
    for _ in range(rounds):
        for k, (x, o) in enumerate(zip(inputs, outs, strict=True)):
            landmarks = o.joints[:, rows]
            history[k].append(
                refine_camera_poses(x.T_cam_world, x.params, landmarks, x.keypoints, o.obs_weight, cfg.camera_refine)
            )
        inputs = [dataclasses.replace(x, T_cam_world=h[-1].T_cam_world) for x, h in zip(inputs, history, strict=True)]
        outs = _fit_takes_once(body, inputs, cfg, progress)
    return [
        dataclasses.replace(o, camera_refinement=chain_refinements(T, h))
        for o, T, h in zip(outs, calibrated, history, strict=True)
    ]


def _fit_takes_once(body: BodyModel, inputs: list[FitInputs], cfg: BodyFitConfig, progress=None) -> list[FitOutput]:
    """``fit_takes`` through the given cameras."""
    long_ = [k for k, x in enumerate(inputs) if len(x.keypoints) > cfg.window]
    first = [x if k not in long_ else _slice_inputs(x, 0, len(x.keypoints), 10) for k, x in enumerate(inputs)]
    outs = fit_batch(body, first, cfg, progress=progress)
    if not long_:
        return outs
    jobs = [(k, s, e) for k in long_ for s, e in _windows(len(inputs[k].keypoints), cfg)]
    parts = fit_batch(body, [_slice_inputs(inputs[k], s, e) for k, s, e in jobs], cfg,
                      betas=[outs[k].betas for k, _, _ in jobs], progress=progress,
                      kp_delta=[outs[k].kp_delta for k, _, _ in jobs])  # fmt: skip
    for k in long_:
        mine = [(s, e, p) for (j, s, e), p in zip(jobs, parts, strict=True) if j == k]
        outs[k] = dataclasses.replace(_stitch(inputs[k], mine, outs[k].betas, cfg), kp_delta=outs[k].kp_delta)
    return outs


def _stitch(inp: FitInputs, parts: list[tuple[int, int, FitOutput]], betas: np.ndarray,
            cfg: BodyFitConfig) -> FitOutput:  # fmt: skip
    """One take's output from its window fits ``(start, stop, output)``, cross-faded in the overlaps."""
    M = len(inp.keypoints)
    last = parts[0][2]
    go, bp, tr = (np.zeros((M, *x.shape[1:])) for x in (last.global_orient, last.body_pose, last.transl))
    J = np.zeros((M, *last.joints.shape[1:]))
    rep = np.full((M, inp.keypoints.shape[1]), np.nan)
    obs_w = np.zeros(inp.weights.shape)
    for k, (s, e, out) in enumerate(parts):
        ov = min(cfg.overlap, e - s) if k > 0 else 0
        go[s + ov : e], bp[s + ov : e], tr[s + ov : e] = out.global_orient[ov:], out.body_pose[ov:], out.transl[ov:]
        J[s + ov : e], rep[s + ov : e], obs_w[s:e] = out.joints[ov:], out.reproj_px[ov:], out.obs_weight
        if ov:  # cross-fade into the previous window: linear for positions, SLERP for rotations
            fade = blend_bracket(ov, (np.arange(ov) + 0.5) / ov)
            a = slice(s, s + ov)
            tr[a] = lerp(np.concatenate([tr[a], out.transl[:ov]]), fade)
            J[a] = lerp(np.concatenate([J[a], out.joints[:ov]]), fade)
            go[a] = slerp_rotvec(np.concatenate([go[a], out.global_orient[:ov]]), fade)
            bp[a] = slerp_rotvec(np.concatenate([bp[a], out.body_pose[:ov]]), fade)
            rep[a] = out.reproj_px[:ov]
    n_dropped = sum(out.n_dropped for _, _, out in parts)  # overlaps counted in both windows
    return FitOutput(betas, go, bp, tr, J, rep, obs_weight=obs_w, n_dropped=n_dropped,
                     losses={"windows": len(parts), **parts[-1][2].losses})  # fmt: skip
