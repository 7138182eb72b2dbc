"""Which of the wearer's 2D observations the fit gets, and with what weight (docs/pipeline.md, "fit").

``build_fit_inputs`` turns a result holding the association and triangulation stages into
``FitInputs``: the selected views (``selected_views``), the weights below, and no weight for what
triangulation rejected or does not use.

A detector's keypoint error is not the same for every observation: it grows with the person's size in
the image (top-down models see every person at the same crop resolution, so one crop pixel covers more
raw pixels of a near person) and it is larger where the detector is less sure. The reprojection loss
is a weighted sum of squared pixel errors, so the weight of an observation should follow the inverse
of its expected squared error:

    w = assoc_conf * confidence ** conf_power * clip((h_ref / h) ** size_power, 1 / size_clip, size_clip)

with ``h`` the height (px) of the selected person's box in that view and ``h_ref`` the take's median.
``conf_power = 1, size_power = 0`` is plain confidence weighting. ``size_power = 2`` would be exact for
errors proportional to the box; 1 is a hedge, as far views are also where wrong selections happen most,
and the clip keeps one tiny box from outweighing the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from motionkit.body.fitting import FitInputs
from motionkit.data.store import TakeResult
from motionkit.geometry.camera import CameraRig
from motionkit.geometry.triangulation import TriangulationConfig


@dataclass(frozen=True)
class ObservationWeighting:
    """How confidence and person size enter the fit weights (see the module docstring)."""

    conf_power: float = 3.0
    size_power: float = 1.0
    size_clip: float = 4.0

    def __post_init__(self) -> None:
        if not (self.conf_power >= 0 and self.size_power >= 0 and self.size_clip >= 1):
            raise ValueError(
                f"observation weighting needs conf_power >= 0, size_power >= 0, size_clip >= 1; got {self}"
            )


def size_factor(box: np.ndarray, weighting: ObservationWeighting) -> np.ndarray:
    """``(M, V)`` weight factor of the person's size: ``box (M, V, 4)`` = x0, y0, x1, y1 in raw pixels
    (NaN where no person). Views without a usable box get 1, as does everything when ``size_power`` is 0."""
    box = np.asarray(box, dtype=np.float64)
    h = box[..., 3] - box[..., 1]
    usable = np.isfinite(h) & (h > 0)
    if weighting.size_power == 0 or not usable.any():
        return np.ones(h.shape)
    ratio = np.median(h[usable]) / np.where(usable, h, 1.0)
    factor = np.clip(ratio**weighting.size_power, 1.0 / weighting.size_clip, weighting.size_clip)
    return np.where(usable, factor, 1.0)


def observation_weights(
    confidence: np.ndarray,
    assoc_conf: np.ndarray,
    box: np.ndarray,
    selected: np.ndarray,
    weighting: ObservationWeighting | None = None,
) -> np.ndarray:
    """``(M, V, 17)`` fit weights: ``confidence (M, V, 17)`` of each keypoint in [0, 1], ``assoc_conf
    (M, V)`` of the wearer's selection, ``box (M, V, 4)`` raw pixels, ``selected (M, V)`` bool. Zero
    where not selected or where the confidence is zero or not finite."""
    wg = weighting or ObservationWeighting()
    c = np.nan_to_num(np.asarray(confidence, dtype=np.float64), nan=0.0).clip(0.0, 1.0)
    a = np.nan_to_num(np.asarray(assoc_conf, dtype=np.float64), nan=0.0).clip(0.0, None)
    per_view = a * size_factor(box, wg) * np.asarray(selected, bool)
    return np.where(c > 0, c**wg.conf_power, 0.0) * per_view[..., None]


def observed_views(r: TakeResult) -> np.ndarray:
    """``(M, V)``: the wearer selected in a view whose calibration applies to that frame."""
    active = r["cameras/active"].astype(bool) if "cameras/active" in r.arrays else True
    return (r["association/det_index"] >= 0) & active


def selected_views(r: TakeResult) -> np.ndarray:
    """``(M, V)`` bool: the wearer was selected in that view, its calibration applies to the frame, the
    camera survived pruning and the view is not a ``VIEW_OUTLIER`` at that frame."""
    sel = observed_views(r) & r["triangulation/camera_kept"].astype(bool)[None]
    return sel & ~r["triangulation/view_outlier"].astype(bool) if "triangulation/view_outlier" in r.arrays else sel


def build_fit_inputs(
    r: TakeResult,
    rig: CameraRig,
    fps: float,
    weighting: ObservationWeighting | None = None,
    triangulation: TriangulationConfig | None = None,
) -> FitInputs:
    """``FitInputs`` from a result holding the association and triangulation stages: selected keypoints
    weighted by ``observation_weights`` (confidence, association confidence, the person's size). No
    weight for keypoints below the ``triangulation`` config's ``conf_min`` (what triangulation does not
    use either: a detector's guess at a hidden joint), for pruned cameras, for the views that
    triangulation rejected at joints it triangulated, and, at joints it could not triangulate, for the
    views more than its ``max_residual_px`` from the best point of the others. The Aria head anchor's
    position and orientation at the samples' own times (``aria/position_at_sample``,
    ``aria/rotation_at_sample``) guide the head (``FitInputs.head``, ``head_rotation``)."""
    tcfg = triangulation or TriangulationConfig()
    sel = selected_views(r)
    conf = np.asarray(r["association/confidence"], dtype=np.float64)
    conf = np.where(conf >= tcfg.conf_min, conf, 0.0)  # NaN: none
    w = observation_weights(conf, r["association/assoc_conf"], r["association/box"], sel, weighting)
    tri_ok = (r["triangulation/status"] == 0)[:, None, :]
    rejected = tri_ok & ~r["triangulation/inlier"].astype(bool)
    with np.errstate(invalid="ignore"):
        disagrees = ~tri_ok & (r["triangulation/residual_px"] > tcfg.max_residual_px)
    w = np.where(rejected | disagrees, 0.0, w)
    return FitInputs(fps, r["association/keypoints"], w, r["grid/frame_index"], r["triangulation/points"], rig.params,
                     rig.T_cam_world, head=r["aria/position_at_sample"],
                     head_rotation=r["aria/rotation_at_sample"])  # fmt: skip
