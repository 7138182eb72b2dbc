"""Batched SMPL-X forward that computes only what fitting needs (docs/pipeline.md, "fit").

The 55 kinematic joints come from forward kinematics on the shaped rest joints
``J(beta) = J_regressor (v_template + shapedirs beta)`` (precomputed as ``J_template`` and
``J_shapedirs``); the vertex keypoints (nose, eyes, ears, feet, fingertips) are skinned with full
LBS, pose correctives included, for those vertices only. The result equals ``smplx.SMPLXLayer``'s
joints (first 76 columns) with hands, jaw and eyes at identity.
"""

from __future__ import annotations

import numpy as np
import roma
import torch

from motionkit.body.model_file import BodyModelFile, load_model_file
from motionkit.conventions import SMPLX_NUM_JOINTS, SMPLX_VERTEX_KEYPOINTS


def _depth_levels(parents: np.ndarray) -> list[np.ndarray]:
    depth = np.zeros(len(parents), dtype=int)
    for i in range(1, len(parents)):
        depth[i] = depth[parents[i]] + 1
    return [np.flatnonzero(depth == d) for d in range(1, depth.max() + 1)]


def shaped_rest_joints(J_template: torch.Tensor, J_shapedirs: torch.Tensor, betas: torch.Tensor) -> torch.Tensor:
    """Rest-pose joints ``(..., J, 3)`` of ``betas (..., B)`` from the template ``(J, 3)`` and the shape
    directions ``(J, 3, B)``, in the dtype of ``betas``. Element-wise products and a sum over the
    coefficients (not a matmul, whose blocking depends on the batch size): a problem's result does not
    depend on what else is in the batch."""
    dt = betas.dtype
    return J_template.to(dt) + (J_shapedirs.to(dt) * betas[..., None, None, :]).sum(-1)


class BodyModel(torch.nn.Module):
    """Joints-only SMPL-X forward.

    Args:
        model: a loaded ``BodyModelFile`` (or None to load the default / ``$MOTIONKIT_BODY_MODEL``).
        vertex_keypoints: names from ``conventions.SMPLX_VERTEX_KEYPOINTS`` to compute (all 21 by
            default); output columns 55.. follow the order of the full smplx layout, restricted.
        joint_landmarks: SMPL-X joints whose landmark follows after the vertex keypoints: a point rigidly
            attached to the joint, at the joint centre unless ``forward``'s ``kp_delta`` moves it (in
            the rest pose, so in the joint's own frame once posed).
        dtype: float32 for fitting, float64 for synthesis and tests.
    """

    def __init__(
        self,
        model: BodyModelFile | None = None,
        vertex_keypoints: tuple[str, ...] | None = None,
        dtype: torch.dtype = torch.float32,
        joint_landmarks: tuple[int, ...] = (),
    ) -> None:
        super().__init__()
        model = model if model is not None else load_model_file()
        self.identity = model.identity
        names = [n for n, _ in SMPLX_VERTEX_KEYPOINTS]
        keep = names if vertex_keypoints is None else [n for n in names if n in set(vertex_keypoints)]
        self.vertex_keypoint_names = tuple(keep)
        vid = np.array([dict(SMPLX_VERTEX_KEYPOINTS)[n] for n in keep], dtype=np.int64)
        self.joint_landmarks = tuple(int(j) for j in joint_landmarks)
        Jr = model.J_regressor
        t = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=dtype)  # noqa: E731
        J_template, J_shapedirs = Jr @ model.v_template, np.einsum("jv,vcb->jcb", Jr, model.shapedirs)
        jl = list(self.joint_landmarks)
        self.register_buffer("J_template", t(J_template))  # (55, 3)
        self.register_buffer("J_shapedirs", t(J_shapedirs))  # (55, 3, 10)
        # landmarks: vertex keypoints, then joint landmarks (rigid to one joint, no pose correctives)
        self.register_buffer("kp_template", t(np.concatenate([model.v_template[vid], J_template[jl]])))  # (K, 3)
        self.register_buffer("kp_shapedirs", t(np.concatenate([model.shapedirs[vid], J_shapedirs[jl]])))
        # pose correctives of the vertex keypoints only: (486, 3 Kv); the joint landmarks have none
        self.register_buffer("kp_posedirs", t(model.posedirs[vid].reshape(len(vid) * 3, 486).T))
        self.register_buffer("kp_weights", t(np.concatenate([model.weights[vid], np.eye(SMPLX_NUM_JOINTS)[jl]])))
        self.parents = model.parents.copy()
        self.register_buffer("_parents", torch.as_tensor(self.parents, dtype=torch.int64), persistent=False)
        # forward kinematics level by level: (joints, their parents) per depth, as index buffers that
        # follow the module to its device
        for d, lv in enumerate(_depth_levels(self.parents)):
            self.register_buffer(f"_level{d}", torch.as_tensor(lv), persistent=False)
            self.register_buffer(f"_level_parent{d}", torch.as_tensor(self.parents[lv]), persistent=False)
        self._n_levels = d + 1

    @classmethod
    def load(cls, path=None, **kw) -> BodyModel:
        return cls(load_model_file(path), **kw)

    @property
    def num_outputs(self) -> int:
        return SMPLX_NUM_JOINTS + len(self.vertex_keypoint_names) + len(self.joint_landmarks)

    def kernel_tensors(self) -> dict[str, torch.Tensor]:
        """The buffers the fused operator ``motionkit.kernels.ops.body_joints`` reads (on this module's
        device and dtype): templates, shape and pose blend shapes, skinning weights and ``parents``."""
        names = ("J_template", "J_shapedirs", "kp_template", "kp_shapedirs", "kp_posedirs", "kp_weights")
        return {**{n: getattr(self, n) for n in names}, "parents": self._parents}

    def rest_joints(self, betas: torch.Tensor) -> torch.Tensor:
        """``betas (..., 10)`` -> rest-pose joints ``(..., 55, 3)``, in the dtype of ``betas``
        (``shaped_rest_joints``)."""
        return shaped_rest_joints(self.J_template, self.J_shapedirs, betas)

    def forward(
        self,
        betas: torch.Tensor,
        global_orient: torch.Tensor,
        body_pose: torch.Tensor,
        transl: torch.Tensor | None = None,
        *,
        other_pose: torch.Tensor | None = None,
        kp_delta: torch.Tensor | None = None,
        return_transforms: bool = False,
    ):
        """Posed joints.

        Args:
            betas: ``(..., 10)``.
            global_orient: ``(..., 3, 3)`` rotation matrix or ``(..., 3)`` axis-angle.
            body_pose: ``(..., 21, 3, 3)`` or ``(..., 21, 3)`` axis-angle (joints 1..21).
            transl: ``(..., 3)`` metres, added to every output.
            other_pose: optional ``(..., 33, 3, 3)`` for jaw, eyes and hands (identity by default).
            kp_delta: optional ``(..., K, 3)`` metres added to the landmarks' rest template (a take's own
                landmark offsets, e.g. ``joint_landmarks`` placed where its detector marks them).
            return_transforms: also return the global joint rotations ``(..., 55, 3, 3)``.

        Returns:
            ``(..., 55 + K, 3)`` joints in the model/world frame of ``global_orient``.
        """
        if global_orient.shape[-1] == 3 and global_orient.shape[-2:] != (3, 3):
            global_orient = roma.rotvec_to_rotmat(global_orient)
        if body_pose.shape[-2:] != (3, 3):
            body_pose = roma.rotvec_to_rotmat(body_pose)
        batch = torch.broadcast_shapes(betas.shape[:-1], global_orient.shape[:-2], body_pose.shape[:-3])
        dtype, dev = self.J_template.dtype, self.J_template.device
        if other_pose is None:
            other_pose = torch.eye(3, dtype=dtype, device=dev).expand(*batch, 33, 3, 3)
        R = torch.cat(
            [
                global_orient.expand(*batch, 3, 3)[..., None, :, :],
                body_pose.expand(*batch, 21, 3, 3),
                other_pose.expand(*batch, 33, 3, 3),
            ],
            dim=-3,
        )  # (..., 55, 3, 3)
        Jrest = self.rest_joints(betas).expand(*batch, SMPLX_NUM_JOINTS, 3)
        # forward kinematics level by level (11 levels instead of 55 sequential steps)
        GR = R.new_empty(R.shape)
        Gt = Jrest.new_empty(Jrest.shape)
        GR[..., 0, :, :] = R[..., 0, :, :]
        Gt[..., 0, :] = Jrest[..., 0, :]
        for d in range(self._n_levels):
            lv, lp = getattr(self, f"_level{d}"), getattr(self, f"_level_parent{d}")
            pR = GR[..., lp, :, :]
            rel = Jrest[..., lv, :] - Jrest[..., lp, :]
            GR[..., lv, :, :] = pR @ R[..., lv, :, :]
            Gt[..., lv, :] = Gt[..., lp, :] + (pR @ rel[..., None])[..., 0]
        joints = Gt
        outs = [joints]
        if self.kp_template.shape[0]:
            eye = torch.eye(3, dtype=dtype, device=dev)
            pose_feat = (R[..., 1:, :, :] - eye).reshape(*batch, 486)
            v = self.kp_template + torch.einsum("kcb,...b->...kc", self.kp_shapedirs, betas)
            if kp_delta is not None:
                v = v + kp_delta
            corr = (pose_feat @ self.kp_posedirs).reshape(*batch, -1, 3)  # (..., Kv, 3)
            v = v + (torch.cat([corr, corr.new_zeros(*batch, len(self.joint_landmarks), 3)], -2)
                     if self.joint_landmarks else corr)  # fmt: skip
            # LBS: A_j x = G_R (x - J_j) + G_t
            At = Gt - (GR @ Jrest[..., None])[..., 0]  # (..., 55, 3)
            WR = torch.einsum("kj,...jab->...kab", self.kp_weights, GR)
            Wt = torch.einsum("kj,...ja->...ka", self.kp_weights, At)
            outs.append((WR @ v[..., None])[..., 0] + Wt)
        out = torch.cat(outs, dim=-2)
        if transl is not None:
            out = out + transl[..., None, :]
        return (out, GR) if return_transforms else out
