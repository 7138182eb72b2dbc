"""The fit's objective terms, torch reference (docs/pipeline.md, "fit"): the robust KB3 reprojection, the
joint limits, the prior terms, the Aria head terms and the ankles' floor. ``motionkit.kernels.ops`` holds
the fused twins with the same arguments, tested for parity; ``body.ops_torch`` and ``body.ops_fused``
serve them to the fit. The floor (``ankle_floor``, ``floor_penalty``: two ankles per frame) has no fused
twin; the fit calls it the same way on both backends.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from motionkit.body.multiscale import reads_by_entry
from motionkit.conventions import SMPLX_HINGES, SMPLX_HIPS, SMPLX_JOINT_LIMITS, WORLD_UP_AXIS
from motionkit.geometry.camera import rig_to_camera_torch
from motionkit.geometry.fisheye import kb3_project_torch
from motionkit.geometry.robust import gmof

JOINT_LIMITS = SMPLX_JOINT_LIMITS


# ------------------------------------------------------------------------------------------------ reprojection
def robust_reprojection(joints_world, R_cw, t_cw, params, theta_max, obs_px, weight, sigma: float, partner=None):
    """Robust reprojection of ``joints_world (..., M, J, 3)`` into ``V`` fisheye cameras
    (``R_cw (..., V, 3, 3)``, ``t_cw (..., V, 3)``, ``params (..., V, 8)``) against ``obs_px
    (..., M, V, J, 2)`` with ``weight (..., M, V, J)``: per problem ``sum w GMoF(|pi(X) - x|; sigma) /
    sigma^2 / sum w``, shape ``(...)``. ``theta_max (..., V)``: the cameras' valid angles (None: computed).
    ``partner (J,)`` int64: each joint's interchangeable counterpart, or -1 (``reprojection_partners``);
    where both joints of such a pair are observed in a view, the pair costs the cheaper of its two
    labellings (a detector's left/right confusion costs nothing then, whichever view made it).

    Torch reference of ``motionkit.kernels.ops.robust_reprojection`` (same arguments, same result).
    """
    pc = rig_to_camera_torch(joints_world, R_cw, t_cw)
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


def bone_ranges(hinge_max_rad: float, hip_extension_max_rad: float, hinges=SMPLX_HINGES, hips=SMPLX_HIPS) -> tuple:
    """The rows ``(joint, column, sign, axis, lower, upper)`` of the ``bones`` prior term
    (``bone_component``): a knee's shin and an elbow's forearm within ``hinge_max_rad`` of the plane they
    bend in (``conventions.SMPLX_HINGES``; flexion and a twist about the bone keep them in it), a thigh at
    most ``hip_extension_max_rad`` behind the hip's frontal plane (``SMPLX_HIPS``; flexion unbounded)."""
    h, e = math.sin(hinge_max_rad), math.sin(hip_extension_max_rad)
    return tuple((*row, -h, h) for row in hinges) + tuple((*row, -e, math.inf) for row in hips)


@functools.lru_cache(maxsize=16)
def _bone_pick(rows, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """``bone_component``'s rows as tensors on a device, built once (no host-to-device copy per
    iteration: CUDA graphs capture the fit's steps): joints ``(B,)``; ``pick (B, 3, 2)``, the sign at
    (axis, column); bounds ``(B,)``."""
    joints = torch.tensor([r[0] for r in rows], dtype=torch.int64, device=device)
    pick = torch.zeros(len(rows), 3, 2, dtype=dtype)
    for i, (_, column, sign, axis, *_) in enumerate(rows):
        pick[i, axis, column] = sign
    lo, hi = (torch.tensor([r[k] for r in rows], device=device, dtype=dtype) for k in (4, 5))
    return joints, pick.to(device), lo, hi


def bone_component(rot6d: torch.Tensor, rows) -> torch.Tensor:
    """``(..., B)`` for each row ``(joint, column, sign, axis, ...)`` (``bone_ranges``): the ``axis``
    component of the joint's child bone, ``sign`` times the ``column``-th column of its local rotation
    ``rot6d (..., R, 3, 2)`` (the first two columns, Gram-Schmidt as ``roma.special_gramschmidt``; joint 0
    the root): the sine of the bone's angle to the plane normal to that axis."""
    joints, pick, _, _ = _bone_pick(tuple(rows), rot6d.device, rot6d.dtype)
    c = rot6d.index_select(-3, joints)  # (..., B, 3, 2)
    b0 = torch.nn.functional.normalize(c[..., 0], dim=-1)
    b1 = torch.nn.functional.normalize(c[..., 1] - (b0 * c[..., 1]).sum(-1, keepdim=True) * b0, dim=-1)
    return (torch.stack([b0, b1], -1) * pick).sum((-1, -2))


def bone_excess(rot6d: torch.Tensor, rows) -> torch.Tensor:
    """``(..., M)`` per frame of ``rot6d (..., M, R, 3, 2)``: ``sum relu(lower - c)^2 + relu(c - upper)^2``
    over the rows of ``bone_ranges``, ``c`` their ``bone_component``; zeros without rows."""
    if not len(rows):
        return rot6d.new_zeros(rot6d.shape[:-3])
    _, _, lo, hi = _bone_pick(tuple(rows), rot6d.device, rot6d.dtype)
    c = bone_component(rot6d, rows)
    return (torch.relu(lo - c) ** 2 + torch.relu(c - hi) ** 2).sum(-1)


def head_motion_pairs(head: np.ndarray, lags: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What ``head_motion`` compares, made once per fit from the Aria head anchor ``head (P, M, 3)``
    (world metres, NaN unknown): the frame pairs ``(2, N)`` ``(m, m + L)`` of every lag ``L`` in ``lags``
    (grid frames), the anchor's displacement over each ``(P, N, 3)`` (0 where unknown) and each pair's
    weight ``(P, N)``: where both anchors are known, 1 / (that lag's known pairs x the number of lags),
    so that ``head_motion`` is the mean over the lags of each lag's mean; else 0."""
    P, M = head.shape[:2]
    pairs, delta, weight = [], [], []
    for lag in (L for L in lags if 0 < L < M):
        m = np.arange(M - lag)
        d = head[:, m + lag] - head[:, m]
        known = np.isfinite(d).all(-1)
        pairs.append(np.stack([m, m + lag]))
        delta.append(np.where(known[..., None], d, 0.0))
        weight.append(known / np.maximum(known.sum(1, keepdims=True), 1) / len(lags))
    if not pairs:
        return np.zeros((2, 0), np.int64), np.zeros((P, 0, 3)), np.zeros((P, 0))
    return tuple(np.ascontiguousarray(np.concatenate(a, 1)) for a in (pairs, delta, weight))


HEAD_PAIR_SIGNS = (0.5, 0.5, -0.5, -0.5)  # the eye midpoint's displacement from the four rows of a pair


@dataclass(frozen=True)
class HeadRows:
    """The head term's vectors as four rows each of a ``(M R)`` flattening of one problem's body output
    ``(M, R, 3)`` (``HEAD_PAIR_SIGNS``: ``0.5 (a + b) - 0.5 (c + d)``): ``index (N, 4)`` int64
    (``head_motion_index``, ``head_turn_index``) and ``n_rows = M R``. ``readers`` and ``reader_ptr``: the
    same reads listed by row (CSR: row ``r`` is read at the flat positions ``4 n + slot`` of ``index`` in
    ``readers[reader_ptr[r]:reader_ptr[r + 1]]``), for the fused operator's backward pass; made once, as
    the index is a constant of the fit. A row outside ``0 .. n_rows - 1`` is a ``ValueError``."""

    index: torch.Tensor
    n_rows: int
    readers: torch.Tensor = field(init=False, repr=False)
    reader_ptr: torch.Tensor = field(init=False, repr=False)

    def __post_init__(self) -> None:
        flat = self.index.reshape(-1)
        if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= self.n_rows):
            raise ValueError(f"head rows must lie in [0, {self.n_rows}), got {int(flat.min())}..{int(flat.max())}")
        readers, reader_ptr = reads_by_entry(flat, self.n_rows)
        object.__setattr__(self, "readers", readers)
        object.__setattr__(self, "reader_ptr", reader_ptr)

    def __len__(self) -> int:
        return len(self.index)

    def check(self, joints: torch.Tensor) -> None:
        """A ``ValueError`` unless ``joints (P, M, R, 3)`` has the ``n_rows = M R`` these rows index."""
        if joints.dim() != 4 or joints.shape[1] * joints.shape[2] != self.n_rows:
            raise ValueError(f"head rows index a body output of {self.n_rows} rows (M x R), got joints of shape "
                             f"{tuple(joints.shape)}")  # fmt: skip


def head_row_vectors(joints: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``(P, N, 3)``: ``0.5 (a + b) - 0.5 (c + d)`` of the four rows ``index (N, 4)`` of a ``(M R)``
    flattening of the body's output ``joints (P, M, R, 3)`` (``HEAD_PAIR_SIGNS``): what ``head_motion``
    compares with its targets."""
    return (joints.flatten(1, 2)[:, index] * joints.new_tensor(HEAD_PAIR_SIGNS)[:, None]).sum(2)


def head_motion_index(pairs: np.ndarray, eye_rows: tuple[int, int], n_rows: int) -> np.ndarray:
    """``(N, 4)`` rows of a ``(M * n_rows)`` flattening of the body's output ``(M, n_rows, 3)`` for each
    pair ``(m, m')`` of ``pairs (2, N)``: the left and right eye at ``m'``, then at ``m``."""
    later, earlier = (np.asarray(pairs[k], np.int64)[:, None] * n_rows + np.asarray(eye_rows) for k in (1, 0))
    return np.concatenate([later, earlier], 1)


def head_motion(joints: torch.Tensor, rows: HeadRows, anchor_delta: torch.Tensor, weight: torch.Tensor,
                sigma: float) -> torch.Tensor:  # fmt: skip
    """How far the fitted head's motion strays from the Aria head anchor's, per problem ``(P, 1)`` (a
    column of the objective's terms).

    ``joints (P, M, R, 3)`` the body's output; ``rows`` (``HeadRows`` of ``head_motion_index``) the eye rows
    of each pair of frames; ``anchor_delta (P, N, 3)`` and ``weight (P, N)`` from ``head_motion_pairs``: over each
    pair, the displacement of the eye midpoint against the anchor's, ``sum weight GMoF(|de - da|^2; sigma)``
    (``/ sigma^2``), the mean over the lags of each lag's mean. Displacements only: the anchor's constant
    offset from the eyes and its slow drift (a few cm over a take) cost nothing, while the SLAM's
    millimetre precision from frame to frame holds the head where far cameras meet at narrow angles. 0
    for problems without a known pair."""
    rows.check(joints)
    d = head_row_vectors(joints, rows.index) - anchor_delta  # (P, N, 3)
    r2 = (d * d).sum(-1)
    return (weight * r2 / (sigma * sigma + r2)).sum(1, keepdim=True)


# the head's vectors whose direction the Aria's orientation fixes, as four COCO rows each (with
# ``HEAD_PAIR_SIGNS``): left minus right eye, left minus right ear, the nose minus the eye midpoint
HEAD_TURN_VECTORS = ((1, 1, 2, 2), (3, 3, 4, 4), (0, 0, 1, 2))


def head_turn_index(coco: np.ndarray, n_frames: int, n_rows: int) -> np.ndarray:
    """``(n_frames * 3, 4)`` rows of a ``(n_frames * n_rows)`` flattening of the body's output for each
    frame's ``HEAD_TURN_VECTORS`` (frame-major), ``coco (17,)`` the body's output rows of the COCO
    keypoints: what ``head_motion`` compares against ``head_turn_targets``."""
    vec = np.asarray(coco, np.int64)[np.asarray(HEAD_TURN_VECTORS)]  # (3, 4)
    return (np.arange(n_frames, dtype=np.int64)[:, None, None] * n_rows + vec[None]).reshape(-1, 4)


def head_turn_targets(joints: torch.Tensor, rows: HeadRows,
                      rotation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """Where the head's vectors should point, from the fitted body and the Aria's orientation: the glasses
    sit still on the head, so each vector is constant in the CPF frame. Its take's constant is the
    median over the frames of the fitted vector seen from the CPF (a head the fit turned wrong on a
    minority of frames does not move it), and each frame's target is that constant turned by the frame's
    CPF rotation. ``joints (P, M, R, 3)`` the body's output, ``rows`` (``HeadRows`` of ``head_turn_index``),
    ``rotation (P, M, 3, 3)`` world-from-CPF (NaN where unknown). Returns the targets
    ``(P, M * 3, 3)`` (world metres) and their weights ``(P, M * 3)``: 1 / (3 x the problem's known
    frames) where known, else 0 (``head_motion`` then gives the mean over the vectors and frames)."""
    P, M = rotation.shape[:2]
    known = rotation.isfinite().all(-1).all(-1)  # (P, M)
    rows.check(joints)
    vec = head_row_vectors(joints, rows.index).view(P, M, 3, 3)  # (P, M, vector, xyz) world
    local = torch.einsum("pmji,pmkj->pmki", rotation, vec)  # R^T v: seen from the CPF
    local = torch.where(known[..., None, None], local, float("nan"))
    constant = local.nanmedian(dim=1).values.nan_to_num(0.0)  # (P, vector, xyz)
    target = torch.einsum("pmij,pkj->pmki", rotation, constant).nan_to_num(0.0).reshape(P, M * 3, 3)
    n_known = known.sum(1, keepdim=True).clamp_min(1)
    weight = (known / (3 * n_known))[..., None].expand(P, M, 3).reshape(P, M * 3)
    return target, weight.to(joints.dtype)


def head_turn_residual(joints: np.ndarray, coco: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """``(M,)`` metres: per frame, how far the fitted head's vectors (``HEAD_TURN_VECTORS`` of the body's
    output ``joints (M, R, 3)``, ``coco (17,)`` its COCO rows) lie from where the Aria's orientation
    ``rotation (M, 3, 3)`` (world-from-CPF) turns them (``head_turn_targets``: the take's constant in the
    CPF frame), the largest of the three; NaN where the orientation is unknown. A few millimetres where
    the head turns as the Aria does; tens of centimetres for a head the fit turned the wrong way."""
    M, R = joints.shape[:2]
    J = torch.as_tensor(np.asarray(joints), dtype=torch.float64)[None]
    rows = HeadRows(torch.as_tensor(head_turn_index(coco, M, R)), M * R)
    target, weight = head_turn_targets(J, rows, torch.as_tensor(np.asarray(rotation), dtype=torch.float64)[None])
    off = (target[0] - head_row_vectors(J, rows.index)[0]).norm(dim=-1).view(M, 3).amax(-1)
    return torch.where(weight.view(M, 3)[:, 0] > 0, off, float("nan")).numpy()


# ------------------------------------------------------------------------------------------------ floor
def ankle_floor(ankles: torch.Tensor, seen: torch.Tensor, quantile: float, margin_m: float,
                min_samples: int) -> torch.Tensor:  # fmt: skip
    """``(P,)`` world height (m, +z up) below which no fitted ankle should go: the ``quantile`` of the
    heights of the ankles ``ankles (P, M, A, 3)`` (world metres) where ``seen (P, M, A)`` (the fit: two or
    more views keep an observation of the ankle), less ``margin_m``. An ankle's height hardly varies while
    the feet stand, kneel or sit on a floor, so an ankle the fit placed lower than the well-seen ones ever
    go is one it pushed along a single camera's ray (a hidden leg). ``-inf`` for problems with fewer than
    ``min_samples`` seen ankles (no floor)."""
    z = torch.where(seen, ankles[..., WORLD_UP_AXIS], float("nan")).flatten(1)
    floor = z.nanquantile(quantile, dim=1) - margin_m
    enough = seen.flatten(1).sum(1) >= min_samples
    return torch.where(enough & floor.isfinite(), floor, float("-inf"))


def floor_penalty(ankles: torch.Tensor, floor: torch.Tensor, weight: torch.Tensor, sigma_m: float) -> torch.Tensor:
    """``(P, 1)``: how far the ankles ``(P, M, A, 3)`` (world metres) lie below the floor ``(P,)`` (from
    ``ankle_floor``; ``-inf``: none), ``sum w GMoF(relu(floor - z); sigma_m) / max(sum w, 1)`` with
    weights ``weight (P, M, A)`` (``/ sigma_m^2``: each ankle costs at most 1, so that a floor wrong by
    decimetres pushes little). The fit weighs the ankles that some view observes: a leg that no camera
    sees has nothing that would pull it back down after a push."""
    below2 = torch.relu(floor[:, None, None] - ankles[..., WORLD_UP_AXIS]) ** 2  # (P, M, A)
    per = below2 / (sigma_m * sigma_m + below2) * weight
    return (per.sum((1, 2)) / weight.sum((1, 2)).clamp_min(1))[:, None]


PRIOR_TERMS = ("3d", "smooth", "orient", "pose", "limits", "bones")


def prior_terms(J, coco, tri, tri_w, fm, fps, rot6d, rv, sigma_3d: float, limits=JOINT_LIMITS, n_acc: int = 55,
                bones=()):  # fmt: skip
    """The objective's terms besides the reprojection, unweighted, per problem: ``(P, 6)`` in the order
    of ``PRIOR_TERMS`` (torch reference of ``motionkit.kernels.ops.prior_terms``, same arguments). Each is a masked mean
    ``sum w x / max(sum w, 1)``:

    * ``3d``: ``GMoF(|J[..., coco, :] - tri|^2; sigma_3d)`` with weights ``tri_w (P, M, C)``;
    * ``smooth``: mean squared acceleration (m/s^2) of the first ``n_acc`` joints, weight ``fm`` of the
      three frames (``fps (P,)``);
    * ``orient``: squared change of the 6D global orientation ``rot6d[:, :, 0]`` between frames
      (``rot6d (P, M, R, 3, 2)``: joint 0 is the root);
    * ``pose``: squared angle of the local rotations ``rv (P, M, 21, 3)``; ``limits``: ``limit_loss``;
    * ``bones``: ``bone_excess`` of ``rot6d`` with the rows ``bones`` (``bone_ranges``; none: 0), weight
      ``fm``: knees and elbows bent sideways, thighs behind the hip.

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
    bone = masked_mean(bone_excess(rot6d, bones), fm)
    return torch.stack([t3d, smooth, orient, pose, lim, bone], -1)
