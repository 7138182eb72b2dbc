"""Left/right label swaps of 2D keypoints, found by leave-one-out triangulation (docs/pipeline.md,
"associate").

2D keypoint models sometimes give a person's left wrist the right wrist's label, in one view and for
a few frames. Per frame, view and left/right pair: triangulate the pair from the other views only,
project it into this view, and compare this view's summed error with the labels as given (``e_o``)
and swapped (``e_s``). The pair is swapped when ``e_o > min_error_px`` and ``e_s < ratio * e_o``;
when most of the testable pairs of a view swap, the whole body is flipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motionkit.conventions import COCO17_LR_PAIRS
from motionkit.geometry.camera import CameraRig
from motionkit.geometry.triangulation import triangulate


@dataclass(frozen=True)
class SwapConfig:
    min_error_px: float = 35.0  # below this, the labels as given fit well enough
    ratio: float = 0.5  # swapped labels must halve the error
    whole_body: bool = True  # flip every pair of a view when most testable pairs swap


def leave_one_out_projections(pixels: np.ndarray, conf: np.ndarray, rig: CameraRig) -> np.ndarray:
    """For each view, the joints triangulated from the other views, projected into it:
    ``pixels (F, V, J, 2)``, ``conf (F, V, J)`` -> ``(F, V, J, 2)`` (NaN where the other views do not
    triangulate the joint)."""
    F, V, J, _ = pixels.shape
    out = np.full((F, V, J, 2), np.nan)
    for v in range(V):  # a loop over cameras (a handful), each one batched triangulation
        others = conf.copy()
        others[:, v] = 0.0
        tri = triangulate(pixels, others, rig)
        out[:, v] = rig[v].project(np.where((tri.status == 0)[..., None], tri.points, np.nan))
    return out


def detect_lr_swaps(pixels: np.ndarray, conf: np.ndarray, rig: CameraRig, cfg: SwapConfig | None = None) -> np.ndarray:
    """``(F, V, P)`` bool: which of the ``P = len(COCO17_LR_PAIRS)`` left/right pairs to swap in each
    view (COCO-17 ``pixels (F, V, 17, 2)`` raw pixels, ``conf (F, V, 17)``, 0 where unused)."""
    cfg = cfg or SwapConfig()
    used = (conf > 0) & np.isfinite(pixels).all(-1)
    px = np.where(used[..., None], pixels, np.nan)
    proj = leave_one_out_projections(px, np.where(used, conf, 0.0), rig)
    a = np.array([p[0] for p in COCO17_LR_PAIRS])
    b = np.array([p[1] for p in COCO17_LR_PAIRS])

    def err(x, y):
        return np.linalg.norm(px[..., x, :] - proj[..., y, :], axis=-1)

    e_o = err(a, a) + err(b, b)  # (F, V, P)
    e_s = err(a, b) + err(b, a)
    testable = np.isfinite(e_o) & np.isfinite(e_s)
    with np.errstate(invalid="ignore"):
        swap = testable & (e_o > cfg.min_error_px) & (e_s < cfg.ratio * e_o)
    if cfg.whole_body:
        n_test = testable.sum(-1)
        body = (swap.sum(-1) * 2 > n_test) & (n_test >= 3)
        swap = np.where(body[..., None], testable, swap)
    return swap


def apply_lr_swaps(values: np.ndarray, swap: np.ndarray) -> np.ndarray:
    """``values (F, V, 17, ...)`` with the labels of the pairs in ``swap (F, V, P)`` exchanged."""
    out = values.copy()
    for p, (a, b) in enumerate(COCO17_LR_PAIRS):
        s = swap[..., p]
        out[s, a], out[s, b] = values[s, b], values[s, a]
    return out


def swap_bits(swap: np.ndarray) -> np.ndarray:
    """``(F, V, P)`` bool -> ``(F, V)`` int32, bit ``p`` set when pair ``COCO17_LR_PAIRS[p]`` was swapped."""
    return (swap.astype(np.int32) << np.arange(swap.shape[-1], dtype=np.int32)).sum(-1).astype(np.int32)
