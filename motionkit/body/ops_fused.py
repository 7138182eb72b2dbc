"""The fit's operators on the fused C++/CUDA kernels (``motionkit.kernels.ops``, analytic gradients):
the same functions, with the same arguments and results, as the reference ``body.ops_torch``.
Load them first (``motionkit.kernels.ensure_loaded``; ``fitting.fit_backend`` does).
"""

from __future__ import annotations

import torch

from motionkit.body import ops_torch as reference
from motionkit.body.model import BodyModel
from motionkit.body.multiscale import KnotBasis
from motionkit.kernels import ops as kernel_ops

NAME = "fused"
CUDA_GRAPHS = True  # every step is capturable: on CUDA each stage's iteration is replayed as a graph

__all__ = list(reference.__all__)  # the interface both backends serve


def body_joints(rot6d: torch.Tensor, betas: torch.Tensor, transl: torch.Tensor, body: BodyModel,
                kp_delta: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """See ``body.ops_torch.body_joints``."""
    P, M = rot6d.shape[:2]
    return kernel_ops.body_joints(rot6d.reshape(P * M, *rot6d.shape[2:]), betas, transl.reshape(P * M, 3),
                                  body.kernel_tensors(), kp_delta=kp_delta).view(P, M, -1, 3)  # fmt: skip


def knot_sequence(params: torch.Tensor, basis: KnotBasis, weight: torch.Tensor | None = None) -> torch.Tensor:
    """See ``body.ops_torch.knot_sequence``."""
    return kernel_ops.knot_sequence(params, basis, weight)


def adam(params: list[torch.Tensor], lr: float, eps: float, capturable: bool = False) -> kernel_ops.KernelAdam:
    """``KernelAdam``: one operator per parameter, capturable, every element updated by the same
    arithmetic wherever it sits in its tensor; ``eps`` is added to the root of the second moment."""
    return kernel_ops.KernelAdam(params, lr, eps=eps)


rot6d_to_rotvec = kernel_ops.rot6d_to_rotvec
robust_reprojection = kernel_ops.robust_reprojection
head_motion = kernel_ops.head_motion
prior_terms = kernel_ops.prior_terms
