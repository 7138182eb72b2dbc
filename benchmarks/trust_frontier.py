"""How far a per-joint trust rule built from the fit's own signals could go.

The frontier that a learned classifier reaches on the stored fits of ``bench_scenarios.py``.

The per-joint trust of a result file (``fit/joint_trusted``) counts supporting views and their angle.
This script asks whether the rest of what a fit knows about a joint would separate the trusted joints
more than 50 mm from the truth from the others. For every trusted body landmark (shoulders to ankles) of
every take, it takes these signals from the result file:

- the landmark (which joint), its supporting views in the frame, their ``steady_support`` and their mean
  over 0.55 s, the widest angle between two of them (``view_pair_sine``);
- the supporting views' reprojection residuals (mean and largest), in heights of the person's box;
- the detector's confidence of those observations (lowest, mean) and their summed final weights;
- the fitted landmark's speed and acceleration, the frame's supporting views and median reprojection
  error;
- the distance between the fitted landmark and its triangulated point (none: -1).

A gradient-boosted classifier (scikit-learn, not a motionkit dependency: ``pip install scikit-learn``)
learns, on the ``--train`` seeds, which trusted joints are more than 50 mm off. On the other seeds, for
each threshold on its probability, the script untrusts the joints above it and prints per scenario
the worst seed's joint false trust, the range of joint missed failures and the lowest joint coverage
(``synth-report``'s definitions). Its last row is the counted opt-in that asks three supporting views
of a limb (``motionkit fit --limb-trust-views 3``), computed from the same fits. A rule that uses only
these signals, however it combines them, is unlikely to do better than this frontier on the same
seeds. A second table says, per scenario over every seed, what the trusted landmarks more than 50 mm
off have more often than the others: exactly two supporting views, wrists, speed.

Usage: ``python benchmarks/trust_frontier.py DIR [--train 31,41,51]``, after ``python
benchmarks/bench_scenarios.py DIR/r<seed> --seed <seed>`` for the training seeds and at least one
other (``DIR/r<seed>/<scenario>/fits``).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
from scipy.ndimage import uniform_filter1d

from motionkit.body.quality import TrustConfig, observation_support, steady_support, view_pair_sine, views_needed
from motionkit.conventions import COCO17_BODY, COCO17_INDEX
from motionkit.data.store import read_result
from motionkit.eval.synthetic_report import failures, joint_counts, read_gt, truth_at_samples
from motionkit.geometry.camera import Camera, CameraRig
from motionkit.geometry.rotations import invert_transform

BODY = np.array(COCO17_BODY)
WRISTS = [COCO17_INDEX["left-wrist"], COCO17_INDEX["right-wrist"]]
SIGNALS = ("landmark", "support", "steady_support", "support_0.55s", "pair_sine", "residual_mean", "residual_max",
           "confidence_min", "confidence_mean", "weight_sum", "speed", "acceleration", "frame_views",
           "frame_reprojection_px", "triangulated_mm")  # fmt: skip
THRESHOLDS = (0.3, 0.2, 0.15, 0.1, 0.05, 0.03)


def joint_signals(res, cfg: TrustConfig) -> np.ndarray:
    """``(M, 17, len(SIGNALS))`` float32: each landmark's signals (``SIGNALS``) in result ``res``, from the
    arrays its fit stage wrote (the same support ``judge_fit`` computes under ``cfg``)."""
    fps = res.fps
    fit = res["fit/coco17_all"].astype(np.float64)  # (M, 17, 3) world metres
    M = len(fit)
    sup = observation_support(res["fit/obs_weight"], res["association/confidence"], cfg)
    T_world_cam = invert_transform(res["fit/T_cam_world"])
    rig = CameraRig([Camera(f"view{v}", int(size[0]), int(size[1]), params, T)
                     for v, (size, params, T) in enumerate(zip(res["cameras/size"], res["cameras/params"],
                                                                T_world_cam, strict=True))])  # fmt: skip
    box = res["association/box"]
    height_px = np.maximum(np.abs(box[..., 3] - box[..., 1]), 1.0)  # (M, V)
    residual = np.linalg.norm(rig.project(fit) - res["association/keypoints"], axis=-1) / height_px[..., None]
    residual = np.where(sup.views, residual, np.nan)  # (M, V, 17) of the supporting observations
    confidence = np.where(sup.views, res["association/confidence"], np.nan)
    velocity = np.gradient(fit, axis=0) * fps
    acceleration = np.gradient(velocity, axis=0) * fps
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: no supporting view
        columns = [
            np.broadcast_to(np.arange(17), (M, 17)),
            sup.joint,
            steady_support(sup.joint, fps, cfg),
            uniform_filter1d(sup.joint.astype(np.float64), 11, axis=0, mode="nearest"),
            view_pair_sine(sup.views, fit, T_world_cam[:, :3, 3], fps, cfg),
            np.nanmean(residual, 1),
            np.nanmax(residual, 1),
            np.nanmin(confidence, 1),
            np.nanmean(confidence, 1),
            np.where(sup.views, res["fit/obs_weight"], 0).sum(1),
            np.linalg.norm(velocity, axis=-1),
            np.linalg.norm(acceleration, axis=-1),
            np.broadcast_to(sup.n_views[:, None], (M, 17)),
            np.broadcast_to(np.nanmedian(res["reprojection/px"], 1)[:, None], (M, 17)),
            np.linalg.norm(res["triangulation/points"] - fit, axis=-1) * 1000.0,
        ]
    return np.nan_to_num(np.stack(columns, -1), nan=-1.0).astype(np.float32)


def load_take(root: Path, result: Path, cfg: TrustConfig) -> dict:
    """One take's signals, trust, joint errors (mm) and the joints two cameras see unoccluded (gt)."""
    res = read_result(result)
    gt = read_gt(root, result.stem)
    truth = truth_at_samples(gt["landmarks"], res["grid/frame_pos"])
    return {
        "signals": joint_signals(res, cfg),
        "trusted": res["fit/joint_trusted"].astype(bool),
        "wrong": failures(res["fit/coco17_all"].astype(np.float64), truth)[2],  # joints over 50 mm off
        "seen": gt["landmark_views"][res["grid/frame_index"]] >= 2,
    }


def training_rows(takes: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The trusted body landmarks' signals ``(N, len(SIGNALS))`` and whether each is wrong ``(N,)``."""
    x = [t["signals"][:, BODY][t["trusted"][:, BODY]] for t in takes]
    y = [t["wrong"][:, BODY][t["trusted"][:, BODY]] for t in takes]
    return np.concatenate(x), np.concatenate(y)


def shares(takes: list[dict], untrust) -> tuple[float, float, float]:
    """(joint false trust, joint missed failures, joint coverage) in % of ``takes`` pooled, with the body
    landmarks that ``untrust(signals (..., S)) -> (...) bool`` picks no longer trusted; NaN where a
    share's denominator is empty."""
    n = np.zeros((3, 2))
    for t in takes:
        trusted = t["trusted"].copy()
        trusted[:, BODY] &= ~untrust(t["signals"][:, BODY])
        n += np.array(list(joint_counts(trusted, t["wrong"], t["seen"]).values()))
    with np.errstate(invalid="ignore", divide="ignore"):
        return tuple(100 * n[:, 0] / n[:, 1])


def describe_wrong(takes: list[dict]) -> str:
    """One table row's cells: of the trusted body landmarks of ``takes``, the share more than 50 mm off,
    and for those / the others: the share that exactly two views support (steady), the share of wrists
    and the median speed (m/s)."""
    x, y = training_rows(takes)
    support, landmark = x[:, SIGNALS.index("steady_support")], x[:, SIGNALS.index("landmark")]
    wrist, speed = np.isin(landmark, WRISTS), x[:, SIGNALS.index("speed")]
    cells = [f"{y.mean():.1%}"]
    columns = ((support == 2, np.mean, "{:.0%}"), (wrist, np.mean, "{:.0%}"), (speed, np.median, "{:.2f}"))
    for values, stat, fmt in columns:
        cells.append(f"{fmt.format(stat(values[y]))} / {fmt.format(stat(values[~y]))}")
    return " | ".join(cells)


def counted_rule(cfg: TrustConfig):
    """The untrust rule of a stricter counted trust ``cfg`` (``body.quality.stricter_trust``): a landmark
    whose steady support is under the views ``cfg`` asks of it (``views_needed``)."""
    need = views_needed(cfg)

    def untrust(signals: np.ndarray) -> np.ndarray:
        landmark = signals[..., SIGNALS.index("landmark")].astype(int)
        return signals[..., SIGNALS.index("steady_support")] < need[landmark]

    return untrust


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--train", default="31,41,51", help="seeds to learn on; the others are scored")
    args = ap.parse_args()
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.metrics import roc_auc_score
    except ImportError:
        raise SystemExit("trust_frontier.py needs scikit-learn (pip install scikit-learn)") from None
    cfg = TrustConfig()
    train_seeds = {f"r{s}" for s in args.train.split(",")}
    takes: dict[tuple[str, str], list[dict]] = {}
    for fits in sorted(args.dir.glob("r*/*/fits")):
        root = fits.parent
        takes[(root.parent.name, root.name)] = [load_take(root, f, cfg) for f in sorted(fits.glob("*.h5"))]
    train = [t for (seed, _), ts in takes.items() if seed in train_seeds for t in ts]
    test = {k: ts for k, ts in takes.items() if k[0] not in train_seeds}
    if not train or not test:
        raise SystemExit(f"need fitted seeds both in and out of --train under {args.dir}")
    x, y = training_rows(train)
    model = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, categorical_features=[0],
                                           random_state=0).fit(x, y)  # fmt: skip

    def above(threshold: float):
        def untrust(signals: np.ndarray) -> np.ndarray:
            flat = signals.reshape(-1, signals.shape[-1])
            return model.predict_proba(flat)[:, 1].reshape(signals.shape[:-1]) > threshold

        return untrust

    xt, yt = training_rows([t for ts in test.values() for t in ts])
    print(f"trained on {len(y)} trusted body landmarks of seeds {sorted(train_seeds)} ({y.mean():.1%} wrong); "
          f"AUC on the other seeds {roc_auc_score(yt, model.predict_proba(xt)[:, 1]):.3f}")  # fmt: skip
    scenarios = sorted({scenario for _, scenario in test})
    print("\n| rule | " + " | ".join(scenarios) + " |\n|---|" + "---|" * len(scenarios))
    rules = [("as fitted", lambda s: np.zeros(s.shape[:-1], dtype=bool))]
    rules += [(f"p > {t:g}", above(t)) for t in THRESHOLDS]
    rules += [("three views for a limb (opt-in)", counted_rule(TrustConfig(limb_trust_views=3)))]
    for name, untrust in rules:
        cells = []
        for scenario in scenarios:
            per_seed = np.array([shares(ts, untrust) for (_, sc), ts in test.items() if sc == scenario])
            missed = per_seed[np.isfinite(per_seed[:, 1]), 1]  # seeds with a wrong joint
            missed_range = f"{missed.min():.0f}-{missed.max():.0f}" if len(missed) else "-"
            cells.append(f"{np.nanmax(per_seed[:, 0]):.1f} / {missed_range} / {np.nanmin(per_seed[:, 2]):.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(
        "\ncells: worst seed's joint false trust / joint missed failures (range over seeds) / lowest joint coverage, %"
    )
    print("\nthe trusted body landmarks more than 50 mm off (wrong) against the others (right), every seed:")
    print("| scenario | trusted body landmarks > 50 mm off | exactly two views: wrong / right | wrists: wrong / right "
          "| median speed (m/s): wrong / right |\n|---|---|---|---|---|")  # fmt: skip
    for scenario in scenarios:
        pooled = [t for (_, sc), ts in takes.items() if sc == scenario for t in ts]
        print(f"| {scenario} | {describe_wrong(pooled)} |")


if __name__ == "__main__":
    main()
