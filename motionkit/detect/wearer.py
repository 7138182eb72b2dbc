"""The camera wearer in every view, rule after rule (docs/pipeline.md, "associate"): one entry point,
``associate_wearer``, that the pipeline's associate stage only records.

1. the SOMA rule (``association.select_wearer``: nearest head to the projected Aria anchor, tracking,
   re-detection, the ground check, other people's tracklets); with ``mode`` ``cylinder`` or
   ``soma+cylinder`` the official cylinder rule everywhere or where the SOMA rule found nobody
   (``cylinder.apply_cylinder_rule``);
2. where the Aria anchor is missing and tracking did not carry the wearer through: the cylinder rule
   around the head bridged across gaps of up to 1 s (``cylinder.bridge_anchor_gaps``);
3. the cross-view check (``crossview.cross_view_check``): views the other views' wearer rescues or
   corrects, and selections whose tracklet it finds someone else's, dropped;
4. left/right labels of the wearer's keypoints (``geometry.swaps.find_lr_swaps``): leave-one-out
   triangulation over the other views, then the labels' continuity in time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motionkit.data.observations import Observations
from motionkit.detect.association import Association, AssociationConfig, select_wearer
from motionkit.detect.crossview import CrossViewConfig, cross_view_check
from motionkit.detect.cylinder import apply_cylinder_rule, bridge_anchor_gaps
from motionkit.geometry.camera import CameraRig
from motionkit.geometry.swaps import SwapConfig, apply_lr_swaps, find_lr_swaps

ASSOCIATION_MODES = ("soma", "cylinder", "soma+cylinder")


@dataclass
class WearerAssociation:
    """``association`` with the labels as detected; ``swap (F, V, P)`` the left/right pairs to swap
    (``conventions.COCO17_LR_PAIRS``); ``keypoints (F, V, 17, 2)`` and ``confidence (F, V, 17)`` with
    the swaps applied (what the later stages read)."""

    association: Association
    swap: np.ndarray
    keypoints: np.ndarray
    confidence: np.ndarray


def associate_wearer(
    obs: Observations,
    rig: CameraRig,
    frames: np.ndarray,
    time_s: np.ndarray,
    anchor_pos: np.ndarray,
    anchor_ok: np.ndarray,
    anchor_reason: np.ndarray,
    fps: float,
    mode: str = "soma",
    selection: AssociationConfig | None = None,
    cross_view: CrossViewConfig | None = None,
    swaps: SwapConfig | None = None,
    anchor_rotation: np.ndarray | None = None,
) -> WearerAssociation:
    """The wearer in every view at take ``frames (F,)`` (``time_s (F,)`` seconds, fit grid at ``fps``),
    from the Aria head anchor ``anchor_pos (F, 3)`` world metres, ``anchor_ok (F,)`` and its
    ``anchor_reason (F,)`` strings, and its CPF axes ``anchor_rotation (F, 3, 3)`` (where the face
    keypoints should be; ``select_wearer``). ``cross_view`` None skips the cross-view check. See the module
    docstring for the order of the rules."""
    if mode not in ASSOCIATION_MODES:
        raise ValueError(f"association mode must be one of {', '.join(ASSOCIATION_MODES)}; got {mode!r}")
    a = select_wearer(obs, rig, frames, anchor_pos, anchor_ok, anchor_reason, selection, anchor_rotation)
    if mode != "soma":
        where = None if mode == "cylinder" else a.reason == "NO_DET_NEAR_ANCHOR"
        a = apply_cylinder_rule(a, obs, rig, anchor_pos, anchor_ok, where)
    head, head_ok = bridge_anchor_gaps(anchor_pos, anchor_ok, fps)
    gap = (~anchor_ok & head_ok)[:, None] & ~a.selected
    if gap.any():
        a = apply_cylinder_rule(a, obs, rig, head, head_ok, gap)
    if cross_view is not None:
        a = cross_view_check(a, obs, rig, cross_view, (selection or AssociationConfig()).tracklet_max_step)
    conf = np.where(a.selected[..., None], a.confidence, 0.0)
    swap = find_lr_swaps(a.keypoints, conf, rig, a.box[..., 3] - a.box[..., 1], time_s, swaps)
    return WearerAssociation(a, swap, apply_lr_swaps(a.keypoints, swap), apply_lr_swaps(a.confidence, swap))
