"""Where the fit's error comes from on a synthetic dataset, and the floor that annotation noise puts
under the headline figure.

For each take of a dataset fitted with ``motionkit batch``, the fit is run again on the same inputs,
then on inputs with one source of error taken away at a time (from the dataset's ``gt/``):
- ``production``: the pipeline's inputs, as fitted;
- ``exact confidence``: the same observations, with the confidence factor of the weights
  (``confidence^3``) replaced by the generator's own ``1 / E[squared error | confidence]``: how much
  better a perfectly calibrated confidence would do;
- ``true cameras``: the rendering cameras instead of ``gopro_calibs.csv`` (refined on the fitted body
  as the pipeline refines any calibration: the refinement also absorbs part of the detector's and the
  body model's consistent offsets, so it is not left out);
- ``clean obs``: only the observations the generator did not make outliers, swaps or guesses;
- ``wearer selections``: only the views whose selected detection is the wearer (no look-alike that the
  association took for him: what a perfect re-identification would give);
- ``true cameras + clean obs + wearer``: all three (what is left is the detector's noise);
- ``noise-free 2D``: the true landmarks projected through the true cameras, every view that sees them
  (what is left is the body-model mismatch and the fit itself).
Each row is the fit's PA-MPJPE against the true landmarks at the fit's sample times (mm, over the
production fit's valid frames, mean over the takes), and what the result file's own quality control
would make of that fit: its valid frames more than 100 mm off (false trust) and its trusted joints
more than 50 mm off (joint false trust), pooled over the takes, with the refit placed in the world as
the file's fit is (``fit/world_shift_m``; none through the true cameras). The validity and trust
masks stay the production fit's, so the rows say how much of the false trust each source of error
makes. Then the annotation floor: PA-MPJPE of ``annotation3D`` against the true landmarks at its
frames, what a perfect fit would score in ``motionkit eval``, and what a fit with independent errors of
a given size scores against the annotations (simulated on the same frames).

Usage: ``python benchmarks/error_budget.py ROOT FITS [--takes N] [--variants a,b]`` (MOTIONKIT_HOME as
for the batch).
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import warnings
from pathlib import Path

import numpy as np

from motionkit.body.fitting import coco_rows, fit_body_model, fit_take
from motionkit.data.egoexo4d import EgoExoDataset
from motionkit.data.store import read_result
from motionkit.eval.metrics import pa_mpjpe
from motionkit.eval.synthetic_report import failures, gt_views, read_gt, true_rig, truth_at_samples
from motionkit.geometry.camera import CameraRig
from motionkit.pipeline.config import PipelineConfig
from motionkit.pipeline.fit_inputs import build_fit_inputs
from motionkit.synthetic.scene import OBS_CLEAN, OBS_MISSED, OBS_OCCLUDED, expected_squared_error

VARIANTS = ("production", "exact confidence", "true cameras", "clean obs", "wearer selections",
            "true cameras + clean obs + wearer", "noise-free 2D")  # fmt: skip


def exact_confidence_weights(res, gt: dict, production: np.ndarray, conf_power: float) -> np.ndarray:
    """``production`` weights ``(M, V, 17)`` with ``confidence ** conf_power`` replaced by ``1 /
    E[(err / sigma)^2 | confidence]`` of the generator's detector, scaled to the same mean."""
    conf = res["association/confidence"]
    e2 = expected_squared_error(conf, gt["config"].get("conf_error_coupling", 0.0))
    used = production > 0
    w = np.where(used, production / np.where(used, conf**conf_power * e2, 1.0), 0.0)
    return w * production[used].mean() / max(w[used].mean(), 1e-300)


def variant_inputs(name: str, inp, res, gt: dict, true: CameraRig, views: list[int], frames: np.ndarray):
    """The fit inputs of variant ``name`` (modified in place); ``res`` the take's result file, ``gt``
    from ``read_gt``, ``true`` and ``views`` the true cameras and gt camera indices in the order of the
    take's calibration."""
    kind = gt["obs_kind"][frames][:, views]
    truth = gt["landmarks"][frames]
    if name == "exact confidence":
        inp.weights = exact_confidence_weights(res, gt, inp.weights, PipelineConfig().conf_power)
    if "true cameras" in name or name == "noise-free 2D":
        inp.T_cam_world, inp.params = true.T_cam_world, true.params
    if "clean obs" in name:
        inp.weights = np.where((kind == OBS_CLEAN) | (kind == OBS_OCCLUDED), inp.weights, 0.0)
    if "wearer" in name:
        det = res["association/det_index"]
        wearer = (det >= 0) & (gt["person_id"][np.maximum(det, 0)] == 0)  # (M, V) the selection is him
        inp.weights = np.where(wearer[..., None], inp.weights, 0.0)
    if name == "noise-free 2D":
        inp.keypoints = true.project(truth)
        inp.weights = np.where(kind == OBS_MISSED, 0.0, 1.0)
        inp.tri = truth.copy()
    return inp


def scored(landmarks: np.ndarray, res, truth: np.ndarray) -> tuple[float, np.ndarray]:
    """A fit's ``landmarks (M, 17, 3)`` (world) against ``truth (M, 17, 3)`` under the result file's
    validity (``valid``) and trust (``fit/joint_trusted``) masks (``synthetic_report.failures``): its mean
    PA-MPJPE (mm) over the valid frames, and ``[valid frames failed, valid frames, trusted joints failed,
    trusted joints]``."""
    valid, trusted = res["valid"].astype(bool), res["fit/joint_trusted"].astype(bool)
    error, frame_off, joint_off = failures(landmarks, truth)
    counts = np.array([(valid & frame_off).sum(), valid.sum(), (trusted & joint_off).sum(), trusted.sum()])
    return float(np.nanmean(error[valid])), counts


def annotation_floor(take, truth: np.ndarray, rng: np.random.Generator, fit_errors_mm=(0, 10, 15, 20)) -> dict:
    """PA-MPJPE (mm) against ``annotation3D`` of the true landmarks ``truth (F, 17, 3)`` (30 fps) plus
    independent errors of each size (rms, 3D)."""
    ann = take.body_annotation()
    if ann is None or not len(ann.frames):
        return {}
    truth = truth[ann.frames]
    out = {}
    for e in fit_errors_mm:
        pred = truth + rng.normal(0.0, e / 1000 / np.sqrt(3), truth.shape)
        out[e] = float(np.nanmean(pa_mpjpe(pred, ann.joints3d)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("fits", type=Path)
    ap.add_argument("--takes", type=int, default=None, help="the first N takes only")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated variants to fit (default: all)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message=".*quality != 1.*")
    ds = EgoExoDataset(args.root)
    body = fit_body_model(None)
    rows = coco_rows(body)
    pipeline = PipelineConfig(device="cpu")
    fit_cfg = dataclasses.replace(pipeline.body_fit, device="cpu", kernels=pipeline.kernels)
    rng = np.random.default_rng(0)
    variants = [v.strip() for v in args.variants.split(",")]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    fit_mm = {v: [] for v in variants}
    counts = {v: np.zeros(4, np.int64) for v in variants}
    floors = []
    infos = [t for t in ds.takes() if (args.fits / f"{t.take_uid}.h5").is_file()][: args.takes]
    for info in infos:
        res = read_result(args.fits / f"{info.take_uid}.h5")
        take = ds.take(info.take_uid)
        frames = res["grid/frame_index"]
        gt = read_gt(args.root, info.take_uid)
        true, views = true_rig(gt, take.rig), gt_views(gt, take.rig)
        at_samples = truth_at_samples(gt["landmarks"], res["grid/frame_pos"])
        shift = res["fit/world_shift_m"] if "fit/world_shift_m" in res.arrays else np.zeros(3)
        for name in variants:
            inp = build_fit_inputs(res, take.rig, res.fps, pipeline.weighting, pipeline.triangulation)
            inp = variant_inputs(name, inp, res, gt, true, views, frames)
            out = fit_take(body, inp, fit_cfg)  # cameras refined as the pipeline does, exact or not
            exact_cameras = "true cameras" in name or name == "noise-free 2D"
            landmarks = out.joints[:, rows] + (0.0 if exact_cameras else shift)
            mm, take_counts = scored(landmarks, res, at_samples)
            fit_mm[name].append(mm)
            counts[name] += take_counts
        floors.append(annotation_floor(take, gt["landmarks"], rng))
        print(f"{info.take_uid[:8]}  " + "  ".join(f"{v}: {fit_mm[v][-1]:.1f}" for v in variants), flush=True)
    print(f"\n{args.root} ({len(infos)} takes; {platform.machine()}, {platform.node()})")
    print("fit PA-MPJPE against the true landmarks (mm, mean over takes); under the result files' validity")
    print("and trust: valid frames over 100 mm (false trust), trusted joints over 50 mm (joint false trust)")
    for v in variants:
        c = counts[v]
        print(
            f"  {v:<34} {np.mean(fit_mm[v]):5.1f} mm   false trust {100 * c[0] / max(c[1], 1):4.1f} %"
            f"   joint false trust {100 * c[2] / max(c[3], 1):4.1f} %"
        )
    floors = [f for f in floors if f]
    if floors:
        print("PA-MPJPE against annotation3D of the truth + independent 3D errors (rms), mean over takes")
        for e in floors[0]:
            print(f"  fit error {e:>2} mm rms   {np.mean([f[e] for f in floors]):5.1f}")


if __name__ == "__main__":
    main()
