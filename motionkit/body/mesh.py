"""The full body mesh of a posed SMPL-X body: linear blend skinning of every vertex with the body's
pose correctives (hands, jaw and eyes at rest, as motionkit fits them)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motionkit.body.model_file import BodyModelFile
from motionkit.conventions import SMPLX_NUM_JOINTS

BODY_POSE_FEATURES = 21 * 9  # pose-corrective inputs of the 21 body joints (the first columns of posedirs)
# the body part (one of the 22 body joints) of each SMPL-X joint: the jaw and eyes belong to the head (15),
# the fingers to their wrist (20 left, 21 right)
PART_OF_JOINT = np.array([*range(22), 15, 15, 15, *[20] * 15, *[21] * 15])
assert len(PART_OF_JOINT) == SMPLX_NUM_JOINTS


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
    M, V = len(R), len(v_shaped)
    feat = (local - np.eye(3)).reshape(M, BODY_POSE_FEATURES)
    correctives = model.posedirs[:, :, :BODY_POSE_FEATURES].reshape(V * 3, BODY_POSE_FEATURES) @ feat.T  # (3V, M)
    v_posed = v_shaped[None] + correctives.T.reshape(M, V, 3)
    # each joint's transform applied to every vertex it weighs on (matrix products: BLAS, not einsum loops)
    offset = np.asarray(joints, np.float64) - np.einsum("mjab,jb->mja", R, j_rest)  # (M, 55, 3)
    A = (model.weights @ R.reshape(M, -1, 9)).reshape(M, V, 3, 3)  # (M, V, 3, 3)
    t = model.weights @ offset  # (M, V, 3)
    return (A @ v_posed[..., None])[..., 0] + t


def body_parts(model: BodyModelFile) -> list[np.ndarray]:
    """The vertex indices of each of the 22 body parts: a vertex belongs to the body joint (0-21,
    ``PART_OF_JOINT``) that moves it most."""
    part = PART_OF_JOINT[np.argmax(model.weights, axis=1)]
    return [np.flatnonzero(part == j) for j in range(22)]


@dataclass
class PosedMesh:
    """A body over time: the model file, the shape ``betas (10,)``, and per frame the 55 joints ``joints
    (F, 55, 3)`` (world metres) with their world rotations ``rotations (F, 55, 3, 3)``; ``vertices(i)``
    poses the mesh of frame ``i`` on demand (a long take never holds every frame's vertices)."""

    model: BodyModelFile
    betas: np.ndarray
    joints: np.ndarray
    rotations: np.ndarray

    @property
    def faces(self) -> np.ndarray:
        return self.model.faces

    def __len__(self) -> int:
        return len(self.joints)

    def vertices(self, i: int) -> np.ndarray:
        """``(V, 3)`` world metres at frame ``i``."""
        return posed_vertices(self.model, self.betas, self.joints[i : i + 1], self.rotations[i : i + 1])[0]
