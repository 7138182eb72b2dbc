"""Loading the fused operators once per process, and saying once why they are not there."""

from __future__ import annotations

import threading
import warnings

import torch

from motionkit.common.device import resolve_device
from motionkit.kernels.build import build_library, kernels_dir, nvcc_path

_lock = threading.Lock()
_state: dict = {"cpu": None, "cuda": None, "error": None}


def _load(kind: str, verbose: bool) -> bool:
    try:
        torch.ops.load_library(str(build_library(kind, verbose=verbose)))
        return True
    except Exception as exc:  # noqa: BLE001 - any build failure means "use the torch path", said once
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        first_error = next((ln.strip() for ln in lines if "error" in ln.lower() and ln.strip() != lines[0]), "")
        _state["error"] = f"{kind} operators unavailable: {lines[0]}" + (f" ({first_error})" if first_error else "")
        return False


def ensure_loaded(cuda: bool | None = None, verbose: bool = False) -> dict:
    """Build (or take from the cache) and load the operators; idempotent and thread-safe.

    ``cuda``: also the CUDA implementations (default: where a GPU is visible and torch is a CUDA build).
    Returns ``status()``.
    """
    with _lock:
        if _state["cpu"] is None:
            _state["cpu"] = _load("cpu", verbose)
            if not _state["cpu"]:
                warnings.warn(f"motionkit: {_state['error']}; fitting uses the torch path", stacklevel=2)
        want_cuda = torch.cuda.is_available() and torch.version.cuda is not None if cuda is None else cuda
        if want_cuda and _state["cuda"] is None and _state["cpu"]:
            _state["cuda"] = _load("cuda", verbose)
            if not _state["cuda"]:
                warnings.warn(f"motionkit: {_state['error']}; CUDA fits use the torch path", stacklevel=2)
        return status(load=False)


def status(load: bool = True) -> dict:
    """``{"cpu": bool, "cuda": bool, "error": str | None}``: which fused implementations are loaded
    (building them on first call unless ``load`` is False) and, if one is missing, why."""
    if load:
        return ensure_loaded()
    return {"cpu": bool(_state["cpu"]), "cuda": bool(_state["cuda"]), "error": _state["error"]}


def available(device: torch.device | str) -> bool:
    """Whether the fused operators run on ``device`` (building/loading them if needed)."""
    dev = torch.device(device)
    st = ensure_loaded(cuda=dev.type == "cuda" or None)
    return st["cuda"] if dev.type == "cuda" else st["cpu"]


def environment_report(build_cuda: bool | None = None) -> dict:
    """What the fit can run on here: torch and its CUDA build, the visible GPUs, nvcc, the cache folder
    and ``status()`` of the fused operators (built now if needed; CUDA ones where a GPU is visible, or
    as ``build_cuda`` says)."""
    gpus = []
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            gpus.append({"index": i, "name": p.name, "capability": f"{p.major}.{p.minor}",
                         "memory_gib": round(p.total_memory / 2**30, 1)})  # fmt: skip
    st = ensure_loaded(cuda=build_cuda)
    return {
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "gpus": gpus,
        "nvcc": nvcc_path(),
        "default_device": str(resolve_device("auto")),
        "cpu_threads": torch.get_num_threads(),
        "kernels_dir": str(kernels_dir()),
        "kernels": st,
    }
