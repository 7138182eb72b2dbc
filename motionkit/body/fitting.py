"""Multi-view SMPL-X sequence fitting (docs/pipeline.md, "fit"): one optimisation per take, body shape
shared by the take, robust KB3 reprojection into every selected view, agreement with triangulated
joints, temporal smoothness in physical units, pose L2 plus joint limits, and a shape prior.

All frames of a window are optimised together on one device (float32); long takes are cut into
overlapping windows with the shape fitted first on a subsample and then frozen.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import roma
import torch
from scipy.ndimage import gaussian_filter1d

from motionkit.body.model import BodyModel
from motionkit.conventions import SMPLX_PARENTS, SMPLX_TO_COCO17, TAKE_FPS, TORSO_COCO17, TORSO_SMPLX
from motionkit.geometry.fisheye import kb3_project_torch, theta_max_np
from motionkit.geometry.interpolation import blend_bracket, fill_gaps_bracket, lerp, slerp_rotmat, slerp_rotvec
from motionkit.geometry.procrustes import procrustes

FACE_KEYPOINTS = ("nose", "right_eye", "left_eye", "right_ear", "left_ear")
# joint limits (SMPLify's angle prior): (SMPL-X joint, axis, min, max) on the local axis-angle
JOINT_LIMITS = ((4, 0, 0.0, math.inf), (5, 0, 0.0, math.inf), (18, 1, -math.inf, 0.0), (19, 1, 0.0, math.inf))
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
    sigma_px: float = 100.0
    w_rep: float = 1.0
    w_3d: tuple[float, float] = (0.1, 0.01)  # stages A-B, C
    w_smooth: float = 3e-5
    w_orient_smooth: float = 1.0
    w_pose: float = 1e-5
    w_limits: float = 1.0
    w_shape: float = 1e-5
    sigma_3d_m: float = 0.1
    tri_smooth_s: float = 0.25  # Gaussian sigma (s) of the temporal smoothing of the triangulated joints
    second_pass_px: float = 30.0  # after stage C, drop observations farther than this from the fitted body
    second_pass_iters: int = 100  # ... and re-run stage C for this many iterations (0: no second pass)
    window: int = 600
    overlap: int = 40
    max_gap_s: float = 0.5
    device: str = "cpu"


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


# ------------------------------------------------------------------------------------------------ losses
def gmof(r2: torch.Tensor, sigma: float) -> torch.Tensor:
    """Geman-McClure on squared residuals, divided by sigma^2: ``r2 / (sigma^2 + r2)``."""
    return r2 / (sigma * sigma + r2)


def reprojection_loss(joints_world, R_cw, t_cw, params, obs_px, weight, sigma, theta_max=None):
    """Robust reprojection of ``joints_world (..., M, J, 3)`` into ``V`` fisheye cameras
    (``R_cw (..., V, 3, 3)``, ``t_cw (..., V, 3)``, ``params (..., V, 8)``) against ``obs_px
    (..., M, V, J, 2)`` with ``weight (..., M, V, J)``: per problem ``sum w GMoF(|pi(X) - x|; sigma) /
    sigma^2 / sum w``, shape ``(...)``. ``theta_max (..., V)``: the cameras' valid angles, if precomputed.

    One function on purpose: a fused CUDA kernel can replace it.
    """
    pc = torch.einsum("...vij,...mkj->...mvki", R_cw, joints_world) + t_cw[..., None, :, None, :]
    tmax = None if theta_max is None else theta_max[..., None, :, None]
    uv, valid = kb3_project_torch(pc, params[..., None, :, None, :], return_valid=True, theta_max=tmax)
    w = weight * valid
    r2 = ((uv - obs_px) ** 2).sum(-1)
    r2 = torch.where(w > 0, r2, torch.zeros_like(r2))
    return (w * gmof(r2, sigma)).sum((-1, -2, -3)) / w.sum((-1, -2, -3)).clamp_min(1e-6)


def limit_loss(body_pose_rotvec: torch.Tensor) -> torch.Tensor:
    """Squared hinge on forbidden local rotations (``JOINT_LIMITS``): ``(..., 21, 3)`` axis-angle ->
    ``(...)`` per frame."""
    loss = body_pose_rotvec.new_zeros(body_pose_rotvec.shape[:-2])
    for j, axis, lo, hi in JOINT_LIMITS:
        a = body_pose_rotvec[..., j - 1, axis]
        if math.isfinite(lo):
            loss = loss + torch.relu(lo - a).pow(2)
        if math.isfinite(hi):
            loss = loss + torch.relu(a - hi).pow(2)
    return loss


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


def init_shape(body: BodyModel, tri: np.ndarray, iters: int = 200) -> np.ndarray:
    """Betas whose limb lengths match the take's median triangulated limb lengths."""
    target, pairs = [], []
    for ca, cb, sa, sb in SHAPE_LIMBS:
        d = np.linalg.norm(tri[:, ca] - tri[:, cb], axis=-1)
        d = d[np.isfinite(d)]
        if len(d) >= 5:
            target.append(np.median(d))
            pairs.append((sa, sb))
    if len(pairs) < 4:
        return np.zeros(10)
    dt = body.J_template.dtype
    tgt = torch.as_tensor(target, dtype=dt)
    a = torch.as_tensor([p[0] for p in pairs])
    b = torch.as_tensor([p[1] for p in pairs])
    betas = torch.zeros(10, dtype=dt, requires_grad=True)
    opt = torch.optim.Adam([betas], lr=0.05)
    for _ in range(iters):
        J = body.rest_joints(betas)
        ln = (J[a] - J[b]).norm(dim=-1)
        loss = ((ln - tgt) ** 2).mean() * 100 + 1e-3 * (betas**2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return betas.detach().cpu().numpy().astype(np.float64)


def init_pose(body: BodyModel, betas: np.ndarray, tri: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Global orientation and translation by Kabsch on the torso, and swing-only limb rotations.

    Returns ``(global_orient (M, 3, 3), body_pose (M, 21, 3, 3), transl (M, 3))``.
    """
    with torch.no_grad():
        Jr = body.rest_joints(torch.as_tensor(betas, dtype=body.J_template.dtype)).double().cpu().numpy()
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
              betas: list[np.ndarray] | None = None, progress=None) -> list[FitOutput]:  # fmt: skip
    """Fit several independent sequences at once (stacked on a leading problem axis, padded to the
    longest one and to the most views): every loss is computed per problem and then summed, so with
    Adam's per-parameter updates the problems stay independent, while a GPU sees one large batch.

    ``betas``: fixed shapes, one per problem (long takes fit it first); otherwise initialised from
    limb lengths and optimised in stage C. ``progress``: optional callable(int), once per iteration.
    """
    cfg = cfg or BodyFitConfig()
    dev = torch.device(cfg.device)
    dt = torch.float32
    P = len(inputs)
    Ms = [len(x.keypoints) for x in inputs]
    M, V = max(Ms), max(x.keypoints.shape[1] for x in inputs)
    body = body.to(dev)
    # triangulated joints are noisy frame by frame (errors of the 2D detector that persist over a few
    # frames): smooth them in time before they initialise the pose and enter the 3D term
    inputs = [dataclasses.replace(x, tri=smooth_in_time(x.tri, cfg.tri_smooth_s * x.fps)) for x in inputs]
    fixed_betas = betas is not None
    b0 = [init_shape(body, x.tri) for x in inputs] if betas is None else [np.asarray(b, np.float64) for b in betas]
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
    fps = torch.as_tensor([x.fps for x in inputs], dtype=dt, device=dev)
    go = T(np.stack([_pad(r[0], M) for r in inits])[..., :, :2]).clone().requires_grad_(True)  # 6D (two columns)
    pose = T(np.stack([_pad(r[1], M) for r in inits])[..., :, :2]).clone().requires_grad_(True)
    transl = T(np.stack([_pad(r[2], M) for r in inits])).clone().requires_grad_(True)
    betas_t = T(np.stack(b0)).clone().requires_grad_(not fixed_betas)
    kp, wt = T(kp), T(wt)
    fm = T(frame_ok)
    coco = torch.as_tensor(SMPLX_TO_COCO17, device=dev)
    torso = torch.as_tensor(TORSO_COCO17, device=dev)
    pidx = torch.arange(P, device=dev)[:, None]

    def forward():
        Rg = roma.special_gramschmidt(go)
        Rp = roma.special_gramschmidt(pose)
        return body(betas_t[:, None].expand(P, M, 10), Rg, Rp, transl), Rg, Rp

    def masked_mean(x, w):  # per problem
        return (x * w).sum(tuple(range(1, x.dim()))) / w.sum(tuple(range(1, w.dim()))).clamp_min(1)

    def losses(stage: int):
        J, Rg, Rp = forward()
        Jc = J[..., coco, :]
        out = {}
        if stage >= 1:
            Jo = (1 - wj) * Jc[pidx, m0] + wj * Jc[pidx, m1]  # model joints at each observation's exact time
            out["rep"] = cfg.w_rep * reprojection_loss(
                Jo, Tcw[..., :3, :3], Tcw[..., :3, 3], params, kp, wt, cfg.sigma_px, tmax
            )
        sel = slice(None) if stage >= 1 else torso
        d2 = ((Jc[:, :, sel] - tri[:, :, sel]) ** 2).sum(-1)
        w3 = cfg.w_3d[0] if stage < 2 else cfg.w_3d[1]
        out["3d"] = w3 * masked_mean(gmof(d2, cfg.sigma_3d_m), tri_w[:, :, sel])
        if M >= 3:
            acc = (J[:, 2:, :55] - 2 * J[:, 1:-1, :55] + J[:, :-2, :55]) * (fps**2)[:, None, None, None]
            w_acc = fm[:, 2:] * fm[:, 1:-1] * fm[:, :-2]
            out["smooth"] = cfg.w_smooth * masked_mean((acc**2).sum(-1).mean(-1), w_acc)
            out["orient"] = cfg.w_orient_smooth * masked_mean(
                ((go[:, 1:] - go[:, :-1]) ** 2).sum((-1, -2)), fm[:, 1:] * fm[:, :-1]
            )
        if stage >= 1:
            rv = roma.rotmat_to_rotvec(Rp)
            out["pose"] = cfg.w_pose * masked_mean((rv**2).sum((-1, -2)), fm)
            out["limits"] = cfg.w_limits * masked_mean(limit_loss(rv), fm)
        if stage >= 2 and not fixed_betas:
            out["shape"] = cfg.w_shape * (betas_t**2).sum(-1)
        return out  # every term is (P,)

    def body_projection():  # (P, M, V, 17, 2) the current body's COCO joints in every view
        J, Rg, Rp = forward()
        Jc = J[..., coco, :]
        Jo = (1 - wj) * Jc[pidx, m0] + wj * Jc[pidx, m1]
        pc = torch.einsum("pvij,pmkj->pmvki", Tcw[..., :3, :3], Jo) + Tcw[:, None, :, None, :3, 3]
        return kb3_project_torch(pc, params[:, None, :, None, :]), J, Rg, Rp

    def run(stage: int, vars_: list, n_it: int) -> dict:
        opt = torch.optim.Adam(vars_, lr=cfg.lr)
        terms = {}
        for _ in range(n_it):
            terms = losses(stage)
            loss = sum(t.sum() for t in terms.values())
            opt.zero_grad()
            loss.backward()
            opt.step()
            if progress is not None:
                progress(1)
        return {k: v.detach().cpu().numpy() for k, v in terms.items()}

    history = {}
    stages = ((0, [go, transl]), (1, [go, transl, pose]), (2, [go, transl, pose] + ([] if fixed_betas else [betas_t])))
    for (stage, vars_), n_it in zip(stages, cfg.iters, strict=True):
        if n_it:
            history[f"stage_{'ABC'[stage]}"] = run(stage, vars_, n_it)
    n_dropped = torch.zeros(P, dtype=torch.int64, device=dev)
    if cfg.second_pass_px and cfg.second_pass_iters:  # drop what disagrees with the fitted body, re-run C
        with torch.no_grad():
            e = ((body_projection()[0] - kp) ** 2).sum(-1).sqrt()
            drop = (wt > 0) & ~(e <= cfg.second_pass_px)
            n_dropped = drop.sum((1, 2, 3))
            wt = torch.where(drop, torch.zeros_like(wt), wt)
        history["second_pass"] = run(2, stages[2][1], cfg.second_pass_iters)

    with torch.no_grad():
        uv, J, Rg, Rp = body_projection()
        e = ((uv - kp) ** 2).sum(-1).sqrt()
        used = wt > 0
        reproj = torch.where(used.any(-1), (torch.where(used, e, 0).sum(-1) / used.sum(-1).clamp_min(1)), float("nan"))
        go_rv = roma.rotmat_to_rotvec(Rg).cpu().double().numpy()
        bp_rv = roma.rotmat_to_rotvec(Rp).cpu().double().numpy()
        wt_np = wt.cpu().double().numpy()
    outs = []
    for k, (x, m) in enumerate(zip(inputs, Ms, strict=True)):
        v = x.keypoints.shape[1]
        outs.append(FitOutput(
            betas=betas_t[k].detach().cpu().double().numpy(), global_orient=go_rv[k, :m], body_pose=bp_rv[k, :m],
            transl=transl[k, :m].detach().cpu().double().numpy(), joints=J[k, :m].cpu().double().numpy(),
            reproj_px=reproj[k, :m, :v].cpu().double().numpy(), obs_weight=wt_np[k, :m, :v],
            n_dropped=int(n_dropped[k]),
            losses={st: {n: float(val[k]) for n, val in terms.items()} for st, terms in history.items()},
        ))  # fmt: skip
    return outs


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
    (linear for translation and joints, SLERP for rotations)."""
    cfg = cfg or BodyFitConfig()
    M = len(inp.keypoints)
    if M <= cfg.window:
        return fit_sequence(body, inp, cfg, progress=progress)
    betas = fit_sequence(body, _slice_inputs(inp, 0, M, 10), cfg).betas  # the shape, once, on every 10th frame
    starts = list(range(0, M - cfg.overlap, cfg.window - cfg.overlap))
    parts = []
    for s in starts:
        e = min(s + cfg.window, M)
        parts.append((s, e, fit_sequence(body, _slice_inputs(inp, s, e), cfg, betas=betas, progress=progress)))
        if e == M:
            break
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
