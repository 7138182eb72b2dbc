"""HumanML3D 263-d motion features (docs/motion.md).

The default reproduces the reference implementation (``EricGuo5513/HumanML3D``
``motion_representation.ipynb``) with all its quirks Q1-Q9, so that features are interchangeable
with the released data and ``Mean.npy`` / ``Std.npy``. ``variant="corrected"`` fixes Q1, Q2, Q4,
Q5 and Q9, is labelled as such, and must never be normalised with the released statistics.

Layout of one 263-d row: rot_vel (1) | root linear velocity x, z (2) | root height (1) |
RIC positions of joints 1..21 (63) | cont6d of joints 1..21 (126) | local velocities of joints
0..21 (66) | foot contacts L ankle, L foot, R ankle, R foot (4).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.ndimage import gaussian_filter1d

from motionkit.conventions import HML_NUM_JOINTS, R_ZUP_TO_YUP
from motionkit.motion.hml263_numba import features_numba
from motionkit.motion.hml263_skeleton import (
    FEET_THRESHOLD,
    FID_L,
    FID_R,
    KINEMATIC_CHAIN,
    RAW_OFFSETS,
    SMOOTH_SIGMA,
    TARGET_LENGTHS,
    VARIANTS,
)
from motionkit.motion.quaternion import qbetween, qinv, qmul, qrot, quat_to_matrix


def _check_joints(joints: np.ndarray) -> np.ndarray:
    j = np.asarray(joints, dtype=np.float64)
    if j.ndim != 3 or j.shape[1:] != (HML_NUM_JOINTS, 3):
        raise ValueError(f"joints must have shape (T, 22, 3) (Y up, metres, 20 fps); got {j.shape}")
    if j.shape[0] < 2:
        raise ValueError(f"need at least 2 frames to compute HumanML3D features; got {j.shape[0]}")
    if not np.isfinite(j).all():
        bad = np.flatnonzero(~np.isfinite(j).all(axis=(1, 2)))
        raise ValueError(f"joints contain NaN/inf at frames {bad[:10].tolist()}{' ...' if len(bad) > 10 else ''}")
    return j


def uniform_skeleton(joints: np.ndarray, target_lengths: np.ndarray = TARGET_LENGTHS) -> np.ndarray:
    """Retarget ``(..., T, 22, 3)`` to the target bone lengths, keeping bone directions; the root
    trajectory is scaled by the right-leg ratio measured on frame 0 (quirk Q7)."""
    f0 = joints[..., 0, :, :]
    src_leg = np.linalg.norm(f0[..., 5, :] - f0[..., 2, :], axis=-1) + np.linalg.norm(
        f0[..., 8, :] - f0[..., 5, :], axis=-1
    )
    scale = (target_lengths[5] + target_lengths[8]) / src_leg
    new = np.empty_like(joints)
    new[..., 0, :] = joints[..., 0, :] * scale[..., None, None]
    for chain in KINEMATIC_CHAIN:
        for a, b in zip(chain[:-1], chain[1:], strict=True):
            d = joints[..., b, :] - joints[..., a, :]
            new[..., b, :] = new[..., a, :] + target_lengths[b] * d / np.linalg.norm(d, axis=-1, keepdims=True)
    return new


def _root_quat(pos: np.ndarray, variant: str, cross_axis: int) -> np.ndarray:
    """Per-frame facing quaternion ``(B, T, 4)`` (rotates the smoothed facing onto +Z), as the
    reference IK computes it."""
    if variant == "reference":  # Q1: IK reads (l_hip, r_hip, sdr_r, sdr_l) = (2, 1, 17, 16)
        across = (pos[..., 1, :] - pos[..., 2, :]) + (pos[..., 17, :] - pos[..., 16, :])
    else:
        across = (pos[..., 2, :] - pos[..., 1, :]) + (pos[..., 17, :] - pos[..., 16, :])
    across = across / np.linalg.norm(across, axis=-1, keepdims=True)
    forward = np.cross(np.array([0.0, 1.0, 0.0]), across)
    forward = gaussian_filter1d(forward, SMOOTH_SIGMA, axis=-2, mode="nearest")  # Q3
    forward = forward / np.linalg.norm(forward, axis=-1, keepdims=True)
    q = qbetween(forward, np.broadcast_to([0.0, 0.0, 1.0], forward.shape), cross_axis=cross_axis)
    if variant == "reference":
        q[..., 0, :] = (1.0, 0.0, 0.0, 0.0)  # Q2
    return q


def _features(pos: np.ndarray, variant: str, cross_axis: int = -1, return_positions: bool = False):
    """Core of ``joints_to_hml263`` on a batch ``(B, T, 22, 3)`` of equal-length clips -> ``(B, T - 1, 263)``
    (and the normalised global positions ``(B, T, 22, 3)`` with ``return_positions``)."""
    pos = uniform_skeleton(pos)
    B, T = pos.shape[:2]
    # floor, XZ origin, face +Z on frame 0
    pos[..., 1] -= pos[..., 1].min(axis=(1, 2))[:, None, None]
    pos -= (pos[:, 0, 0] * np.array([1.0, 0.0, 1.0]))[:, None, None]
    f0 = pos[:, 0]
    across = (f0[:, 2] - f0[:, 1]) + (f0[:, 17] - f0[:, 16])
    across /= np.linalg.norm(across, axis=-1, keepdims=True)
    fwd = np.cross(np.array([0.0, 1.0, 0.0]), across)
    n = np.linalg.norm(fwd, axis=-1, keepdims=True)
    if (n < 1e-12).any():
        raise ValueError("frame 0 has a degenerate facing direction (hips and shoulders vertical)")
    fwd /= n
    q0 = qbetween(fwd, np.broadcast_to([0.0, 0.0, 1.0], fwd.shape))
    # exactly backwards: the reference gives NaN; motionkit uses a 180 degree yaw
    q0 = np.where((fwd[:, 2:3] < -1 + 1e-12), np.array([0.0, 0.0, 1.0, 0.0]), q0)
    g = qrot(q0[:, None, None], pos)  # global_positions (B, T, 22, 3)

    # foot contacts (Q8: squared displacement only, strict)
    dl = ((g[:, 1:, FID_L] - g[:, :-1, FID_L]) ** 2).sum(-1)
    dr = ((g[:, 1:, FID_R] - g[:, :-1, FID_R]) ** 2).sum(-1)
    contacts = np.concatenate([dl < FEET_THRESHOLD, dr < FEET_THRESHOLD], axis=-1).astype(np.float64)

    # IK: per-frame root rotation and swing-only joint rotations stored at the child (Q6)
    r_rot = _root_quat(g, variant, cross_axis)  # (B, T, 4)
    local = np.zeros((B, T, HML_NUM_JOINTS, 4))
    local[:, :, 0] = r_rot
    for chain in KINEMATIC_CHAIN:
        R = r_rot
        for a, b in zip(chain[:-1], chain[1:], strict=True):
            d = g[:, :, b] - g[:, :, a]
            d = d / np.linalg.norm(d, axis=-1, keepdims=True)
            rot = qbetween(np.broadcast_to(RAW_OFFSETS[b], d.shape), d, cross_axis=cross_axis)
            local[:, :, b] = qmul(qinv(R), rot)
            R = qmul(R, local[:, :, b])
    mats = quat_to_matrix(local[:, :, 1:])  # (B, T, 21, 3, 3)
    cont6d = np.concatenate([mats[..., 0], mats[..., 1]], axis=-1)  # first two columns

    # root velocities
    vel = qrot(r_rot[:, 1:], g[:, 1:, 0] - g[:, :-1, 0])
    r_vel = qmul(r_rot[:, 1:], qinv(r_rot[:, :-1]))
    if variant == "corrected":  # Q4: canonical w >= 0 before arcsin
        r_vel = np.where(r_vel[..., :1] < 0, -r_vel, r_vel)
    rot_vel = np.arcsin(np.clip(r_vel[..., 2], -1.0, 1.0))

    # rotation-invariant positions
    ric = g.copy()
    ric[..., 0] -= ric[:, :, :1, 0]
    ric[..., 2] -= ric[:, :, :1, 2]
    ric = qrot(r_rot[:, :, None], ric)

    # local joint velocities (Q5: r_rot[t], while the root velocity uses r_rot[t + 1])
    rv = r_rot[:, :-1] if variant == "reference" else r_rot[:, 1:]
    local_vel = qrot(rv[:, :, None], g[:, 1:] - g[:, :-1])

    n = T - 1
    out = np.concatenate(
        [
            rot_vel[..., None], vel[..., [0, 2]], ric[:, :-1, 0, 1:2], ric[:, :-1, 1:].reshape(B, n, -1),
            cont6d[:, :-1].reshape(B, n, -1), local_vel.reshape(B, n, -1), contacts,
        ],
        axis=-1,
    ).astype(np.float32)  # fmt: skip
    return (out, g) if return_positions else out


def hml_positions(joints: np.ndarray, *, variant: str = "reference") -> np.ndarray:
    """The retargeted, floored, origin- and facing-normalised joints ``(T, 22, 3)`` that the features
    describe (HumanML3D's ``new_joints``); ``hml263_to_joints`` recovers them (frames 0..T-2)."""
    return _features(_check_joints(joints)[None].copy(), variant, return_positions=True)[1][0]


def _compute(batch: np.ndarray, variant: str, backend: str, cross_axis: int = -1) -> np.ndarray:
    if backend == "numba" and cross_axis == -1:
        return features_numba(batch, variant)
    if backend not in ("numba", "numpy"):
        raise ValueError(f"unknown backend {backend!r}")
    return _features(batch, variant, cross_axis)


def joints_to_hml263(joints: np.ndarray, *, variant: str = "reference", backend: str = "numba") -> np.ndarray:
    """HumanML3D features of one clip.

    Args:
        joints: ``(T, 22, 3)`` SMPL body joints (SMPL-X 0..21), Y up, metres, 20 fps, T >= 2.
        variant: ``"reference"`` (default, reproduces the released features) or ``"corrected"``.
        backend: ``"numba"`` (compiled, default) or ``"numpy"`` (the reference path).

    Returns:
        ``(T - 1, 263)`` float32.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}")
    j = _check_joints(joints)
    cross_axis = -1
    if variant == "reference" and len(j) == 3:  # Q9: torch.cross without dim crosses along time
        warnings.warn("HumanML3D reference mode with T = 3 reproduces quirk Q9 (wrong cont6d)", stacklevel=2)
        cross_axis = -2
    return _compute(j[None].copy(), variant, backend, cross_axis)[0]


def joints_to_hml263_batch(
    clips: list[np.ndarray], *, variant: str = "reference", backend: str = "numba", chunk: int = 256
) -> list[np.ndarray]:
    """Features for many clips of different lengths: list of ``(T_i, 22, 3)`` -> list of ``(T_i - 1, 263)``.

    Clips are sorted by length and processed in chunks padded with their last frame, which leaves
    every result identical to ``joints_to_hml263`` (the reference smoothing pads with the edge value).
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}")
    arrs = []
    for i, c in enumerate(clips):
        try:
            arrs.append(_check_joints(c))
        except ValueError as exc:
            raise ValueError(f"clip {i}: {exc}") from exc
    out: list[np.ndarray | None] = [None] * len(arrs)
    order = sorted(range(len(arrs)), key=lambda i: len(arrs[i]))
    special = [i for i in order if variant == "reference" and len(arrs[i]) == 3]
    for i in special:
        out[i] = joints_to_hml263(arrs[i], variant=variant, backend=backend)
    order = [i for i in order if i not in set(special)]
    for k in range(0, len(order), chunk):
        idx = order[k : k + chunk]
        Tmax = len(arrs[idx[-1]])
        batch = np.empty((len(idx), Tmax, HML_NUM_JOINTS, 3))
        for b, i in enumerate(idx):
            a = arrs[i]
            batch[b, : len(a)] = a
            batch[b, len(a) :] = a[-1]
        feats = _compute(batch, variant, backend)
        for b, i in enumerate(idx):
            out[i] = feats[b, : len(arrs[i]) - 1]
    return out


def hml263_to_joints(features: np.ndarray) -> np.ndarray:
    """Recover joint positions (``recover_from_ric``): ``(N, 263)`` -> ``(N, 22, 3)`` Y-up metres.

    Accepts leading batch dimensions ``(..., N, 263)``.
    """
    f = np.asarray(features, dtype=np.float64)
    if f.ndim < 2 or f.shape[-1] != 263:
        raise ValueError(f"features must have shape (..., N, 263); got {f.shape}")
    rot_vel = f[..., 0]
    ang = np.zeros_like(rot_vel)
    ang[..., 1:] = rot_vel[..., :-1]
    ang = np.cumsum(ang, axis=-1)
    q = np.zeros(f.shape[:-1] + (4,))
    q[..., 0] = np.cos(ang)
    q[..., 2] = np.sin(ang)
    r_pos = np.zeros(f.shape[:-1] + (3,))
    r_pos[..., 1:, 0] = f[..., :-1, 1]
    r_pos[..., 1:, 2] = f[..., :-1, 2]
    r_pos = np.cumsum(qrot(qinv(q), r_pos), axis=-2)
    r_pos[..., 1] = f[..., 3]
    ric = f[..., 4 : 4 + 63].reshape(f.shape[:-1] + (21, 3))
    pos = qrot(qinv(q)[..., None, :], ric)
    pos[..., 0] += r_pos[..., None, 0]
    pos[..., 2] += r_pos[..., None, 2]
    return np.concatenate([r_pos[..., None, :], pos], axis=-2)


def normalize(features: np.ndarray, mean: np.ndarray, std: np.ndarray, *, variant: str = "reference") -> np.ndarray:
    """``(x - Mean) / Std`` with the released statistics; refuses corrected features."""
    if variant != "reference":
        raise ValueError("corrected HumanML3D features must not be normalised with the released Mean/Std")
    return (features - mean) / std


def smplx_joints_zup_to_hml(joints_smplx_zup: np.ndarray) -> np.ndarray:
    """SMPL-X joints of a fitted take (``(T, >=22, 3)``, Ego-Exo4D z-up world) -> ``(T, 22, 3)`` Y up."""
    j = np.asarray(joints_smplx_zup, dtype=np.float64)
    if j.ndim != 3 or j.shape[1] < HML_NUM_JOINTS or j.shape[2] != 3:
        raise ValueError(f"joints must have shape (T, >=22, 3); got {j.shape}")
    return j[:, :HML_NUM_JOINTS] @ R_ZUP_TO_YUP.T
