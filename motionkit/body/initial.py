"""The fit's starting point (docs/pipeline.md, "fit"): triangulated joints smoothed in time, a shape from
their limb lengths, the root by Kabsch on the torso, swing-only limb rotations and hidden knees bent the
way knees bend."""

from __future__ import annotations

import numpy as np
import roma
import torch
from scipy.ndimage import gaussian_filter1d

from motionkit.body.model import BodyModel, shaped_rest_joints
from motionkit.conventions import (
    COCO17_LIMB_CHAINS,
    COCO17_LIMBS,
    SMPLX_LIMB_CHAINS,
    SMPLX_PARENTS,
    SMPLX_TO_COCO17,
    TORSO_COCO17,
    TORSO_SMPLX,
)
from motionkit.geometry.interpolation import fill_gaps_bracket, lerp, slerp_rotmat
from motionkit.geometry.procrustes import procrustes

# COCO limbs used for the shape initialisation: (COCO a, COCO b, SMPL-X a, SMPL-X b), the first 12 of
# COCO17_LIMBS (arms, legs, shoulders, hips, sides) with the SMPL-X joints at those keypoints
SHAPE_LIMBS = tuple((a, b, int(SMPLX_TO_COCO17[a]), int(SMPLX_TO_COCO17[b])) for a, b in COCO17_LIMBS[:12])


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
    # float32 products would differ at 1e-7, which the fit can amplify). On the CPU whatever the body
    # model's device: a few hundred sequential steps of a tiny problem, which a GPU would run as
    # thousands of kernel launches; and every device then starts the fit from the same shape.
    dt = torch.float64
    template, shapedirs = (x.detach().to("cpu", dt) for x in (body.J_template, body.J_shapedirs))
    tgt = torch.as_tensor(target[solve], dtype=dt)
    mask = torch.as_tensor(ok[solve], dtype=dt)
    a = torch.as_tensor([limb[2] for limb in SHAPE_LIMBS])
    b = torch.as_tensor([limb[3] for limb in SHAPE_LIMBS])
    betas = torch.zeros(int(solve.sum()), 10, dtype=dt, requires_grad=True)
    opt = torch.optim.Adam([betas], lr=0.05)
    for _ in range(iters):
        J = shaped_rest_joints(template, shapedirs, betas)
        ln = (J[:, a] - J[:, b]).norm(dim=-1)
        limb_err = (((ln - tgt) ** 2) * mask).sum(1) / mask.sum(1)
        loss = (limb_err * 100 + 1e-3 * (betas**2).mean(1)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    out[solve] = betas.detach().numpy()
    return list(out)


def init_shape(body: BodyModel, tri: np.ndarray, iters: int = 200) -> np.ndarray:
    """Betas of one take (``init_shapes`` of one problem)."""
    return init_shapes(body, [tri], iters)[0]


def init_pose(body: BodyModel, betas: np.ndarray, tri: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Global orientation and translation by Kabsch on the torso, and swing-only limb rotations onto
    ``tri (M, 17, 3)``. Shoulders and hips that triangulation missed are first placed where the torso's
    pose puts the model's joints (``place_missing_roots``, where some frame has three torso joints to
    pose it by; otherwise a limb whose shoulder or hip is missing starts at rest however far its
    triangulated elbow or knee lies), then knees it missed between a hip and an ankle where a knee bends
    (``place_hidden_knees``; a straight leg's start can leave a knee that one view sees at the
    mirror-image depth along that view's ray).

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
    if ok.any():  # without any torso pose a missing root stays missing (its limb starts at rest)
        tri = place_missing_roots(tri, R, t, Jr)
    tri = place_hidden_knees(tri, R[:, :, 2], Jr)
    pose = np.tile(np.eye(3), (M, 21, 1, 1))
    G = {0: R}
    for s_chain, c_chain in zip(SMPLX_LIMB_CHAINS, COCO17_LIMB_CHAINS, strict=True):
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


def place_missing_roots(tri: np.ndarray, R: np.ndarray, t: np.ndarray, rest_joints: np.ndarray) -> np.ndarray:
    """``tri (M, 17, 3)`` with each shoulder and hip that triangulation missed placed where the torso's
    rigid pose (``R (M, 3, 3)``, ``t (M, 3)``: world = ``R`` rest + ``t``) puts the model's joint
    (``rest_joints (55, 3)``, the shape's rest pose). A copy; the rest as given."""
    out = np.array(tri, dtype=np.float64, copy=True)
    for s_chain, c_chain in zip(SMPLX_LIMB_CHAINS, COCO17_LIMB_CHAINS, strict=True):
        missing = ~np.isfinite(out[:, c_chain[0]]).all(-1)
        out[missing, c_chain[0]] = np.einsum("mij,j->mi", R[missing], rest_joints[s_chain[0]]) + t[missing]
    return out


def place_hidden_knees(tri: np.ndarray, forward: np.ndarray, rest_joints: np.ndarray) -> np.ndarray:
    """``tri (M, 17, 3)`` with each knee that triangulation missed between a hip and an ankle it found
    placed where a knee bends: on the circle of points a thigh's length from the hip and a shin's from the
    ankle (``rest_joints (55, 3)``, the shape's), at its point farthest along the body's ``forward (M, 3)``
    (world; a knee flexes with the shin behind the thigh, so the knee lies in front of the hip-ankle
    line); with the ankle beyond the leg's reach, on the straight line. A copy; the rest as given."""
    out = np.array(tri, dtype=np.float64, copy=True)
    for (s_hip, s_knee, s_ankle), (hip, knee, ankle) in zip(SMPLX_LIMB_CHAINS[:2], COCO17_LIMB_CHAINS[:2], strict=True):
        thigh = np.linalg.norm(rest_joints[s_knee] - rest_joints[s_hip])
        shin = np.linalg.norm(rest_joints[s_ankle] - rest_joints[s_knee])
        H, A = out[:, hip], out[:, ankle]
        hidden = ~np.isfinite(out[:, knee]).all(-1) & np.isfinite(H).all(-1) & np.isfinite(A).all(-1)
        if not hidden.any():
            continue
        H, A, f = H[hidden], A[hidden], forward[hidden]
        d = np.linalg.norm(A - H, axis=-1)
        d_safe = np.maximum(d, 1e-9)
        u = (A - H) / d_safe[:, None]
        along = np.clip((d**2 + thigh**2 - shin**2) / (2 * d_safe), -thigh, thigh)
        radius = np.sqrt(np.maximum(thigh**2 - along**2, 0.0))
        side = f - (f * u).sum(-1, keepdims=True) * u
        side /= np.maximum(np.linalg.norm(side, axis=-1, keepdims=True), 1e-9)
        reach = d < thigh + shin
        out[hidden, knee] = (
            H
            + u * np.where(reach, along, thigh * d / (thigh + shin))[:, None]
            + side * np.where(reach, radius, 0.0)[:, None]
        )
    return out
