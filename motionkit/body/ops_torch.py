"""The fit's operators on torch (the reference backend): the same functions, with the same arguments and
results, as ``body.ops_fused`` (tested for parity), so that ``fitting.fit_batch`` never branches on the
backend. Shapes: ``P`` problems, ``M`` frames, ``R = 22`` rotated joints (root first), ``K`` landmarks.
"""

from __future__ import annotations

import roma
import torch

from motionkit.body.model import BodyModel
from motionkit.body.multiscale import KnotBasis
from motionkit.body.objective import head_motion, prior_terms, robust_reprojection

NAME = "torch"
CUDA_GRAPHS = False  # its Adam step is not captured as a CUDA graph

__all__ = [  # the interface both backends serve (``body.ops_fused`` lists these)
    "adam",
    "body_joints",
    "head_motion",
    "knot_sequence",
    "prior_terms",
    "robust_reprojection",
    "rot6d_to_rotvec",
]


def body_joints(rot6d: torch.Tensor, betas: torch.Tensor, transl: torch.Tensor, body: BodyModel,
                kp_delta: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """Posed joints and landmarks ``(P, M, 55 + K, 3)`` world metres: ``rot6d (P, M, R, 3, 2)`` the first two
    columns of the local rotations of the root and body joints, ``betas (P, B)`` one shape per problem,
    ``transl (P, M, 3)``, ``kp_delta (P, K, 3)`` the landmarks' offsets (``BodyModel.forward``)."""
    P, M = rot6d.shape[:2]
    return body(betas[:, None].expand(P, M, betas.shape[-1]), roma.special_gramschmidt(rot6d[:, :, 0]),
                roma.special_gramschmidt(rot6d[:, :, 1:]), transl, kp_delta=kp_delta[:, None])  # fmt: skip


def rot6d_to_rotvec(rot6d: torch.Tensor) -> torch.Tensor:
    """``(..., 3, 2)`` 6D rotations -> ``(..., 3)`` shortest-arc rotation vectors (radians)."""
    return roma.rotmat_to_rotvec(roma.special_gramschmidt(rot6d))


def knot_sequence(params: torch.Tensor, basis: KnotBasis, weight: torch.Tensor | None = None) -> torch.Tensor:
    """``basis.sequence(params, weight)``: ``params (P, N, *S)`` -> ``(P, M, *S)``."""
    return basis.sequence(params, weight)


def adam(params: list[torch.Tensor], lr: float, eps: float, capturable: bool = False):
    """torch's multi-tensor (``foreach``) Adam; ``eps`` is added to the root of the second moment. Never
    torch's fused single-kernel Adam: its CPU kernel rounds an element differently depending on where it
    falls in the tensor (vector body or tail), so a problem's result would depend on what else is in the
    batch."""
    if capturable:  # a CUDA graph reads the learning rate from device memory: a tensor updated in place
        lr = torch.tensor(lr, dtype=torch.float32, device=params[0].device)
    return torch.optim.Adam(params, lr=lr, eps=eps, foreach=True, capturable=capturable)


robust_reprojection = robust_reprojection
head_motion = head_motion
prior_terms = prior_terms
