"""Fitting a 20-s take (400 frames at 20 fps, 4 views) from cached observations: wall time per
stage and frames/s on the CPU (target <= 60 s including all stages), and on CUDA when present
(target >= 2,000 frames/s, several takes batched as separate problems)."""

from __future__ import annotations

import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np


def main(takes: int = 3) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="mk_bench_fit_"))
    os.environ.setdefault("MOTIONKIT_HOME", str(tmp / "home"))
    import h5py
    import torch

    from motionkit.data.egoexo4d import EgoExoDataset
    from motionkit.eval.metrics import mpjpe, pa_mpjpe
    from motionkit.pipeline import PipelineConfig, run_fit
    from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

    write_synthetic_dataset(tmp / "ds", SynthConfig(takes=takes, seed=11, duration=20.0))
    ds = EgoExoDataset(tmp / "ds")
    infos = ds.takes()
    run_fit(
        tmp / "ds", infos[0].take_uid, tmp / "warm", PipelineConfig(), until="triangulate", progress=False
    )  # JIT warm-up
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(
        f"# fitting 20-s takes (400 frames at 20 fps, 4 views; {platform.machine()}, {os.cpu_count()} cores, "
        f"torch {torch.__version__}, threads {torch.get_num_threads()})"
    )
    print(
        f"| {'device':<6} | {'take':<14} | {'total s':>8} | {'fit s':>6} | {'frames/s':>9} | {'PA-MPJPE mm':>11} | "
        f"{'MPJPE mm':>8} | {'coverage':>8} |"
    )
    print("|--------|----------------|----------|--------|-----------|-------------|----------|----------|")
    for dev in devices:
        for info in infos:
            t0 = time.perf_counter()
            oc = run_fit(
                tmp / "ds", info.take_uid, tmp / f"out_{dev}", PipelineConfig(device=dev), progress=False, plot=False
            )
            total = time.perf_counter() - t0
            r = oc.result
            with h5py.File(tmp / "ds" / "gt" / f"{info.take_uid}.h5") as g:
                gt30 = g["wearer/coco17_world"][()]
            pos = r["time_s"] * 30
            i0 = np.floor(pos).astype(int)
            i1 = np.minimum(i0 + 1, len(gt30) - 1)
            w = (pos - i0)[:, None, None]
            gt = (1 - w) * gt30[i0] + w * gt30[i1]
            pa = np.nanmean(pa_mpjpe(r["joints/coco17"], gt))
            mp = np.nanmean(mpjpe(r["joints/coco17"], gt))
            n = len(r["time_s"])
            tf = oc.timings["fit"]
            cov = 100 * np.mean(r["valid"])
            row = f"| {dev:<6} | {info.take_name:<14} | {total:8.1f} | {tf:6.1f} | {n / tf:9.1f} |"
            print(f"{row} {pa:11.1f} | {mp:8.1f} | {cov:7.1f}% |")
        # all takes as one batch of independent problems (what a GPU needs to be kept busy)
        from motionkit.body.fitting import FACE_KEYPOINTS, BodyFitConfig, fit_batch
        from motionkit.body.model import BodyModel
        from motionkit.data.store import read_result
        from motionkit.pipeline import build_fit_inputs

        inputs = [build_fit_inputs(read_result(tmp / f"out_{dev}" / f"{i.take_uid}.h5"), ds.take(i.take_uid).rig, 20.0)
                  for i in infos]  # fmt: skip
        body = BodyModel(vertex_keypoints=FACE_KEYPOINTS)
        t0 = time.perf_counter()
        fit_batch(body, inputs, BodyFitConfig(device=dev))
        tb = time.perf_counter() - t0
        n = sum(len(x.keypoints) for x in inputs)
        label = f"{len(inputs)} batched"
        blank = f"| {'':>11} | {'':>8} | {'':>8} |"
        print(f"| {dev:<6} | {label:<14} | {'':>8} | {tb:6.1f} | {n / tb:9.1f} {blank}")


if __name__ == "__main__":
    main()
