"""The full body mesh of a posed SMPL-X body: linear blend skinning of every vertex with the body's
pose correctives (hands, jaw and eyes at rest, as motionkit fits them)."""

from __future__ import annotations

import numpy as np

from motionkit.body.model_file import BodyModelFile

BODY_POSE_FEATURES = 21 * 9  # pose-corrective inputs of the 21 body joints (the first columns of posedirs)


def shaped_template(model: BodyModelFile, betas: np.ndarray) -> np.ndarray:
    """``(V, 3)``: the model's template with the shape blend of ``betas`` (rest pose, metres)."""
    b = np.asarray(betas, np.float64)[: model.shapedirs.shape[-1]]
    return model.v_template + model.shapedirs[..., : len(b)] @ b


def posed_vertices(model: BodyModelFile, betas: np.ndarray, joints: np.ndarray, rotations: np.ndarray) -> np.ndarray:
    """Vertices ``(M, V, 3)`` (world metres) of the body with shape ``betas (10,)`` whose 55 joints sit
    at ``joints (M, 55, 3)`` with world rotations ``rotations (M, 55, 3, 3)`` (``fitted_body(...,
    return_transforms=True)``).

    ``v = sum_j w_vj (R_j (v_posed - J_rest_j) + J_j)``, with ``v_posed`` the shaped template plus the
    pose correctives ``posedirs[:, :, :189] (R_local - I)`` of the 21 body joints. Memory grows as
    ``M x V x 9`` floats: pass a few frames at a time for long takes."""
    v_shaped = shaped_template(model, betas)  # (V, 3)
    j_rest = model.J_regressor @ v_shaped  # (55, 3)
    R = np.asarray(rotations, np.float64)
    parents = model.parents
    local = np.einsum("mjba,mjbc->mjac", R[:, parents[1:22]], R[:, 1:22])  # R_parent^T R_j, body joints
    feat = (local - np.eye(3)).reshape(len(R), BODY_POSE_FEATURES)
    v_posed = v_shaped[None] + np.einsum("vcp,mp->mvc", model.posedirs[:, :, :BODY_POSE_FEATURES], feat)
    # each joint's transform applied to every vertex it weighs on
    offset = np.asarray(joints, np.float64) - np.einsum("mjab,jb->mja", R, j_rest)  # (M, 55, 3)
    A = np.einsum("vj,mjab->mvab", model.weights, R)  # (M, V, 3, 3)
    t = np.einsum("vj,mja->mva", model.weights, offset)
    return np.einsum("mvab,mvb->mva", A, v_posed) + t
