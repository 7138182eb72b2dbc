"""How many of the trusted joints that are wrong are quick moves that the fit smoothed.

For the result files of ``bench_scenarios.py``'s scenario folders, pooled per folder: of the trusted body
landmarks (shoulders to ankles) more than 50 mm from the truth ("wrong", ``synth-report``'s joint false
trust), the share that accelerate quickly (the true landmark's acceleration over ``--acc`` m/s^2) with the
fit's error pointing along that acceleration (within 60 deg). A fit that smooths a movement in time lies
on the inside of its curve, off the truth along its acceleration by about half the smoothing's variance
times the acceleration; a detector's noise points anywhere (a quarter of random directions lie within
60 deg). Also printed: the share of quick moves among the trusted landmarks that are not wrong, and the
median true acceleration of both.

Usage: ``python benchmarks/quick_moves.py DIR/<scenario> [DIR/<scenario> ...] [--acc 5]`` (folders that
hold the dataset and its ``fits/``).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from motionkit.conventions import COCO17_BODY
from motionkit.data.store import read_result
from motionkit.eval.synthetic_report import failures, read_gt, truth_at_samples

BODY = list(COCO17_BODY)
ALONG_COS = 0.5  # within 60 deg of the acceleration


def take_rows(root: Path, result: Path) -> dict[str, np.ndarray]:
    """The trusted body landmarks of one take: whether each is wrong, its true acceleration (m/s^2) and the
    cosine between the fit's error and that acceleration (0 where either is zero)."""
    res = read_result(result)
    fit_all = res["fit/coco17_all"].astype(np.float64)  # (M, 17, 3) world metres
    truth_all = truth_at_samples(read_gt(root, result.stem)["landmarks"], res["grid/frame_pos"])
    fit, truth = fit_all[:, BODY], truth_all[:, BODY]
    trusted = res["fit/joint_trusted"].astype(bool)[:, BODY]
    wrong = failures(fit_all, truth_all)[2][:, BODY]
    acc = np.gradient(np.gradient(truth, axis=0), axis=0) * res.fps**2  # (M, 12, 3): the fit grid is uniform
    err = np.nan_to_num(fit - truth)
    norms = np.linalg.norm(err, axis=-1) * np.linalg.norm(acc, axis=-1)
    cos = np.divide((err * acc).sum(-1), norms, out=np.zeros(norms.shape), where=norms > 0)
    return {"wrong": wrong[trusted], "acc": np.linalg.norm(acc, axis=-1)[trusted], "cos": cos[trusted]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", type=Path, nargs="+")
    ap.add_argument("--acc", type=float, default=5.0, help="a quick move's least true acceleration (m/s^2)")
    args = ap.parse_args()
    print("| folder | trusted body landmarks > 50 mm off | quick and along it: wrong / right | median acceleration "
          "(m/s^2): wrong / right |")  # fmt: skip
    print("|---|---|---|---|")
    for folder in args.folders:
        with warnings.catch_warnings():  # the calibration's skipped camera, once per take
            warnings.simplefilter("ignore", UserWarning)
            takes = [take_rows(folder, r) for r in sorted((folder / "fits").glob("*.h5"))]
        if not takes:
            raise SystemExit(f"{folder}: no result files in {folder / 'fits'}")
        wrong, acc, cos = (np.concatenate([t[k] for t in takes]) for k in ("wrong", "acc", "cos"))
        quick = (acc > args.acc) & (cos > ALONG_COS)
        print(f"| {folder} | {wrong.mean():.1%} | {quick[wrong].mean():.0%} / {quick[~wrong].mean():.0%} | "
              f"{np.median(acc[wrong]):.1f} / {np.median(acc[~wrong]):.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
