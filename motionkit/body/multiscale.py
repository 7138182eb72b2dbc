"""Coarse-to-fine parametrisation of sequences in time, for first-order optimisers.

A sequence ``x (P, M, *S)`` over ``M`` frames is written as its per-frame values plus, for each level
``l = 1 .. L``, the linear interpolation of knots placed every ``2**l`` frames (frame 0 on a knot):

    x[:, m] = fine[:, m] + sum_l ((1 - a) knots_l[:, i] + a knots_l[:, i + 1]),  i = m // 2**l,  a = m / 2**l - i

Every sequence the per-frame values can take is still reachable, so the optimum of an objective does
not change; what changes is the path to it. Adam moves each leaf by about its learning rate per step,
whatever the gradient's size, and a per-frame leaf alone moves a slow motion that spans many frames no
faster than a jitter of one frame. Under a strong smoothness term, whose gradient pulls neighbouring
frames against each other, a per-frame fit therefore corrects its slow errors only after very many
steps. The coarse knots move whole stretches of frames at once, so slow and fast parts converge at
similar rates (a multigrid-like preconditioning; the knots start at 0).

The per-frame values and the knots of all levels live in one tensor, the *parameters*
``(P, M + n_knots, *S)`` (frames first, then the knots level after level), and each frame reads its
``1 + 2 L`` entries with one gather: the whole sum costs a handful of operations and one optimiser
leaf (the fit is launch-bound on GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


def reads_by_entry(flat: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The reads ``flat (F,)`` int64 (entries in ``0 .. n-1``) listed by entry, in CSR form for a fused
    operator's backward pass (one sum per entry, no atomics): ``readers (F,)`` the positions in ``flat``
    sorted by the entry they read (stable: in reading order), ``reader_ptr (n + 1,)`` where each entry's
    readers start."""
    counts = torch.bincount(flat, minlength=n)
    return torch.argsort(flat, stable=True), torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])


@dataclass(frozen=True)
class KnotBasis:
    """Frames ``0 .. M-1`` as weighted sums of their own value and of knots every 2, 4, ..., ``2**L`` frames.

    ``index (M, 1 + 2L)`` int64: the entries of the parameters that each frame reads (its own first);
    ``weight (M, 1 + 2L)``: their weights (1, then each level's linear interpolation); ``levels``:
    ``(stride, first entry, number of knots)`` per level. ``readers`` and ``reader_ptr``: the same
    reads listed by parameter entry (CSR: entry ``n`` is read at the flat positions ``m E + e`` in
    ``readers[reader_ptr[n]:reader_ptr[n + 1]]``), for the fused operator's backward pass.
    """

    n_frames: int
    index: torch.Tensor
    weight: torch.Tensor
    levels: tuple[tuple[int, int, int], ...]
    readers: torch.Tensor = field(init=False, repr=False)
    reader_ptr: torch.Tensor = field(init=False, repr=False)
    _flat_index: torch.Tensor = field(init=False, repr=False)

    def __post_init__(self) -> None:  # made once: the fit reads the sequence every iteration
        flat = self.index.reshape(-1).contiguous()
        readers, reader_ptr = reads_by_entry(flat, self.n_params)
        object.__setattr__(self, "_flat_index", flat)
        object.__setattr__(self, "readers", readers)
        object.__setattr__(self, "reader_ptr", reader_ptr)

    @property
    def n_params(self) -> int:
        """Length of the parameters' axis 1: the frames, then every level's knots."""
        return self.n_frames + sum(n for _, _, n in self.levels)

    def parameters(self, per_frame: torch.Tensor) -> torch.Tensor:
        """Parameters ``(P, n_params, *S)`` that give the sequence ``per_frame (P, M, *S)``: the
        per-frame values, knots at 0 (a new tensor)."""
        knots = per_frame.new_zeros(per_frame.shape[0], self.n_params - self.n_frames, *per_frame.shape[2:])
        return torch.cat([per_frame, knots], 1)

    def frozen_weights(self, per_frame_only: torch.Tensor) -> torch.Tensor:
        """Weights ``(M, 1 + 2L, *C)`` for ``sequence``: the channels where ``per_frame_only (*C)`` (bool)
        is set read their per-frame value only (their knots get no gradient, so Adam leaves them at 0)."""
        keep = (~per_frame_only).to(self.weight.dtype)
        w = self.weight.view(*self.weight.shape, *([1] * per_frame_only.dim())) * keep
        w[:, 0] = 1.0
        return w

    def sequence(self, params: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
        """``params (P, n_params, *S)`` -> the sequence ``(P, M, *S)``; ``weight``: from
        ``frozen_weights`` (its channel shape broadcast against ``S``), else ``self.weight``."""
        if params.shape[1] != self.n_params:
            raise ValueError(f"parameters have {params.shape[1]} entries on axis 1, the basis {self.n_params}")
        if not self.levels:  # the per-frame values only, times their weights
            return params if weight is None else params * weight[:, 0]
        picked = params.index_select(1, self._flat_index).view(params.shape[0], *self.index.shape, *params.shape[2:])
        if weight is None:
            weight = self.weight
        weight = weight.view(1, *weight.shape, *([1] * (picked.dim() - weight.dim() - 1)))
        return (picked * weight).sum(2)


def knot_basis(n_frames: int, n_levels: int, device=None, dtype=torch.float32) -> KnotBasis:
    """Levels ``1 .. n_levels``: knots every 2, 4, ..., ``2**n_levels`` frames over ``n_frames`` frames
    (each level's last knot at or beyond the last frame); ``n_levels = 0``: the per-frame values only."""
    if n_frames < 1 or n_levels < 0:
        raise ValueError(f"knot_basis needs n_frames >= 1 and n_levels >= 0, got {n_frames}, {n_levels}")
    m = torch.arange(n_frames)
    index, weight, levels, first = [m], [torch.ones(n_frames, dtype=torch.float64)], [], n_frames
    for lev in range(1, n_levels + 1):
        stride = 2**lev
        left = torch.div(m, stride, rounding_mode="floor")
        right_w = (m - left * stride).to(torch.float64) / stride
        index += [first + left, first + left + 1]
        weight += [1 - right_w, right_w]
        n = (n_frames - 1) // stride + 2
        levels.append((stride, first, n))
        first += n
    return KnotBasis(
        n_frames, torch.stack(index, 1).to(device), torch.stack(weight, 1).to(device, dtype), tuple(levels)
    )
