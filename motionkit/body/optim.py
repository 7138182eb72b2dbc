"""The fit's optimiser loop: the learning-rate schedule and the iterations, eager or replayed as a CUDA
graph. The Adam implementations are the backends' (``body.ops_torch.adam``, ``body.ops_fused.adam``)."""

from __future__ import annotations

import math
import warnings

import torch

CUDA_GRAPH_WARMUP = 3


def lr_schedule(lr: float, n_it: int, final: float, decay_from: float):
    """Learning rate of iteration ``i`` (0-based) of ``n_it``: ``lr`` up to ``decay_from * n_it``, then a
    half cosine down to ``final * lr`` at the last iteration, so that each stage ends converged."""
    start = int(decay_from * n_it)

    def at(i: int) -> float:
        if i < start or n_it - 1 <= start:
            return lr
        x = (i - start) / (n_it - 1 - start)
        return lr * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * x)))

    return at


def _set_lr(opt, value: float) -> None:
    for group in opt.param_groups:
        if isinstance(group["lr"], torch.Tensor):  # CUDA graphs read it from device memory
            group["lr"].fill_(value)
        else:
            group["lr"] = value


def run_iterations(step, n_it: int, graphs: bool, opt, progress=None, lr_at=None):
    """Call ``step()`` (one Adam iteration returning its loss terms) ``n_it`` times, setting the learning
    rate ``lr_at(i)`` before iteration ``i`` (if given). With ``graphs``
    (CUDA), a few warm-up iterations run eagerly on a side stream, the next is captured as a CUDA graph
    and replayed for the rest: one launch per iteration instead of hundreds. Falls back to eager
    iterations (with a warning) if the capture fails."""
    done, terms = 0, None
    if graphs and n_it > CUDA_GRAPH_WARMUP + 1:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(CUDA_GRAPH_WARMUP):
                if lr_at is not None:
                    _set_lr(opt, lr_at(done))
                terms = step()
                done += 1
                if progress is not None:
                    progress(1)
        torch.cuda.current_stream().wait_stream(side)
        try:
            graph = torch.cuda.CUDAGraph()
            opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(graph):
                terms = step()
        except RuntimeError as exc:  # pragma: no cover - needs a GPU
            warnings.warn(f"motionkit: CUDA graph capture failed ({exc}); iterating eagerly", stacklevel=2)
        else:
            for i in range(done, n_it):
                if lr_at is not None:
                    _set_lr(opt, lr_at(i))
                graph.replay()
                if progress is not None:
                    progress(1)
            return terms
    for i in range(done, n_it):
        if lr_at is not None:
            _set_lr(opt, lr_at(i))
        terms = step()
        if progress is not None:
            progress(1)
    return terms
