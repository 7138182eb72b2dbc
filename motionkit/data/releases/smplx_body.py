"""SMPL-X parameters of any source -> COCO-17 joints, with one mapping for every method.

The face keypoints are the model's vertex keypoints (nose, eyes, ears); the limb keypoints its joint
centres (``conventions.SMPLX_TO_COCO17``), unless the source carries motionkit's own learned landmark
offsets (``landmark_offset_m (17, 3)``, each in its joint's frame), which are then applied as the fit
applied them. Every joint's offset frame (``conventions.COCO17_OFFSET_PARENT``) comes from the body's
own joint rotations.
"""

from __future__ import annotations

import numpy as np
import torch

from motionkit.body.fitting import coco_rows, fit_body_model
from motionkit.body.model import BodyModel
from motionkit.conventions import COCO17_OFFSET_PARENT, SMPLX_TO_COCO17


def rotation_6d_to_matrix(d6: np.ndarray) -> np.ndarray:
    """``(..., 6)`` -> ``(..., 3, 3)``: Gram-Schmidt of the two 3-vectors, stacked as the matrix's **rows**
    (the pytorch3d ``rotation_6d_to_matrix`` convention that EE4D-Motion stores)."""
    d6 = np.asarray(d6, dtype=np.float64)
    a1, a2 = d6[..., :3], d6[..., 3:]
    b1 = a1 / np.linalg.norm(a1, axis=-1, keepdims=True)
    b2 = a2 - (b1 * a2).sum(-1, keepdims=True) * b1
    b2 = b2 / np.linalg.norm(b2, axis=-1, keepdims=True)
    return np.stack([b1, b2, np.cross(b1, b2)], axis=-2)


def smplx_coco17(body_model: str | None, global_orient: np.ndarray, body_pose: np.ndarray, betas: np.ndarray,
                 transl: np.ndarray,
                 landmark_offset_m: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """COCO-17 joints ``(N, 17, 3)`` and offset-frame rotations ``(N, 17, 3, 3)`` of SMPL-X parameters:
    ``global_orient (N, 3, 3)`` or ``(N, 3)`` axis-angle, ``body_pose (N, 21, 3, 3)`` or ``(N, 21, 3)``,
    ``betas (N, B)`` or ``(B,)`` (the first 10 used), ``transl (N, 3)``; ``body_model`` the SMPL-X file
    (None: the default one). Hands, jaw and eyes at rest."""
    go, bp, tr = (np.asarray(x, dtype=np.float64) for x in (global_orient, body_pose, transl))
    n = len(go)
    b = np.broadcast_to(np.asarray(betas, dtype=np.float64)[..., :10], (n, 10)).copy()  # writable, for torch
    if landmark_offset_m is None:
        body = BodyModel.load(body_model, dtype=torch.float64)
        rows, kp_delta = SMPLX_TO_COCO17, None
    else:
        body = fit_body_model(body_model, dtype=torch.float64)
        rows = coco_rows(body)
        delta = np.zeros((len(body.vertex_keypoint_names) + len(body.joint_landmarks), 3))
        delta[len(body.vertex_keypoint_names) :] = np.asarray(landmark_offset_m, dtype=np.float64)[5:]
        kp_delta = torch.as_tensor(delta).expand(n, *delta.shape)
    with torch.no_grad():
        J, GR = body(torch.as_tensor(b), torch.as_tensor(go), torch.as_tensor(bp), torch.as_tensor(tr),
                     kp_delta=kp_delta, return_transforms=True)  # fmt: skip
    return J.numpy()[:, rows], GR.numpy()[:, COCO17_OFFSET_PARENT]
