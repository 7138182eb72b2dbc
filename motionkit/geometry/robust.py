"""Robust penalties shared by the fit and the camera refinement."""

from __future__ import annotations

import torch


def gmof(r2: torch.Tensor, sigma: float) -> torch.Tensor:
    """Geman-McClure on squared residuals, divided by sigma^2: ``r2 / (sigma^2 + r2)`` (0 at 0, 1/2 at
    ``sigma``, towards 1 far out)."""
    return r2 / (sigma * sigma + r2)
