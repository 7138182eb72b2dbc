"""Fused C++/CUDA operators of the body fit (docs/kernels.md).

``status()`` builds (first use, cached) and loads the operators and says what is available;
``motionkit.kernels.ops`` holds the differentiable Python entry points. Everything has a torch
reference path, used when the operators cannot be built.
"""

from motionkit.kernels.loader import available, ensure_loaded, status

__all__ = ["available", "ensure_loaded", "status"]
