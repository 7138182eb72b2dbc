"""The body fit, torch reference path vs fused operators (``motionkit/kernels/csrc/``), on 20-s realistic takes
(400 frames at 20 fps, 4 views), from the fit inputs of the pipeline (everything before the fit runs once).

Prints, per device (CPU, and CUDA when present):
1. ATen operations per stage-B Adam iteration (torch profiler; difference of 11 and 1 iterations);
2. wall time and frames/s of the whole fit (``fit_batch``: shape init, 3 stages, second pass) for
   one take (both paths) and for K takes batched as independent problems (fused path);
3. PA-MPJPE / MPJPE of the fused and the torch fits against the synthetic truth, and their difference.

Usage: ``python benchmarks/bench_fit.py [--takes K] [--devices cpu,cuda] [--seconds 20]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np


def count_ops(fn) -> tuple[int, int]:
    """(ATen operations, motionkit operators) dispatched while ``fn()`` runs (nested calls included)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    names = [e.name for e in prof.events()]
    return sum(n.startswith("aten::") for n in names), sum(n.startswith("motionkit::") for n in names)


def realistic_fit_inputs(folder: Path, takes: int, seconds: float) -> tuple[list, list[np.ndarray]]:
    """``takes`` realistic takes of ``seconds`` (seed 11) written under ``folder`` and run up to the fit:
    their ``FitInputs`` at 20 fps and the true COCO-17 landmarks at the fit's samples ``(M, 17, 3)``.
    ``gpu_profile.py`` fits the first of them too."""
    import h5py

    from motionkit.data.egoexo4d import EgoExoDataset
    from motionkit.eval.synthetic_report import truth_at_samples
    from motionkit.pipeline import PipelineConfig, build_fit_inputs, run_take
    from motionkit.synthetic.writer import SynthConfig, write_synthetic_dataset

    write_synthetic_dataset(folder / "ds", SynthConfig(takes=takes, seed=11, duration=seconds, preset="realistic"))
    ds = EgoExoDataset(folder / "ds")
    inputs, truth = [], []
    for info in ds.takes():
        r = run_take(folder / "ds", info.take_uid, folder / "pre", PipelineConfig(device="cpu"), until="triangulate",
                     progress=False, plot=False).result  # fmt: skip
        inputs.append(build_fit_inputs(r, ds.take(info.take_uid).rig, 20.0))
        with h5py.File(folder / "ds" / "gt" / f"{info.take_uid}.h5") as g:
            truth.append(truth_at_samples(g["wearer/coco17_world"][()], r["grid/frame_pos"]))
    return inputs, truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--takes", type=int, default=3, help="takes batched in the batched row")
    ap.add_argument("--seconds", type=float, default=20.0, help="take duration")
    ap.add_argument("--devices", default=None, help="comma-separated; default cpu (+ cuda when available)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mk_bench_fit_"))
    home = Path(os.environ.get("MOTIONKIT_HOME", "~/.cache/motionkit")).expanduser()
    os.environ.setdefault("MOTIONKIT_KERNELS_DIR", str(home / "kernels"))  # built operators: the user's cache
    os.environ.setdefault("MOTIONKIT_HOME", str(tmp / "home"))
    import torch

    from motionkit import kernels
    from motionkit.body.fitting import BodyFitConfig, coco_rows, fit_batch, fit_body_model
    from motionkit.eval.metrics import mpjpe, pa_mpjpe

    K = max(1, args.takes)
    inputs, truth = realistic_fit_inputs(tmp, K, args.seconds)
    devices = args.devices.split(",") if args.devices else ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    st = kernels.ensure_loaded(cuda="cuda" in devices)
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    print(f"# body fit, {args.seconds:g}-s realistic takes ({len(inputs[0].keypoints)} frames, 4 views); "
          f"{platform.machine()}, {os.cpu_count()} cores, {gpu}, torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}; kernels {st}")  # fmt: skip
    body = fit_body_model()
    coco = list(coco_rows(body))

    def sync(dev):
        if dev == "cuda":
            torch.cuda.synchronize()

    for dev in devices:
        paths = ["torch"] + (["fused"] if kernels.available(dev) else [])
        print(f"\n## {dev}: ATen operations per stage-B iteration (1 take)")
        ops = {}
        for kern in paths:
            n = {}
            for it in (1, 11):
                cfg = BodyFitConfig(device=dev, kernels=kern, iters=(0, it, 0), second_pass_iters=0, cuda_graphs=False)
                n[it] = count_ops(lambda cfg=cfg: fit_batch(body, inputs[:1], cfg))
            ops[kern] = ((n[11][0] - n[1][0]) / 10, (n[11][1] - n[1][1]) / 10)
            print(f"| {kern:<6} | {ops[kern][0]:8.0f} ATen ops | {ops[kern][1]:4.0f} motionkit ops |")
        if "fused" in ops:
            print(f"fused / torch ATen operations: {ops['fused'][0] / ops['torch'][0]:.1%} (target <= 5 %)")

        print(f"\n## {dev}: whole fit (shape init, stages A-C, second pass)")
        print(f"| {'kernels':<7} | {'problems':<8} | {'frames':>6} | {'seconds':>8} | {'frames/s':>9} | "
              f"{'PA-MPJPE mm':>11} | {'MPJPE mm':>8} |")  # fmt: skip
        print("|---------|----------|--------|----------|-----------|-------------|----------|")
        fits, speed = {}, {}
        for kern in paths:
            cfg = BodyFitConfig(device=dev, kernels=kern)
            fit_batch(body, [x for x in inputs[:1]], BodyFitConfig(device=dev, kernels=kern, iters=(2, 2, 2),
                                                                   second_pass_iters=0))  # warm-up  # fmt: skip
            # the torch path only on one take (it is launch-bound: batching does not change its cost per
            # iteration much, and on a GPU it is slow); the fused path on one take and on all K
            batches = ([inputs[0]], inputs) if K > 1 and kern == "fused" else ([inputs[0]],)
            for batch in batches:
                sync(dev)
                t0 = time.perf_counter()
                outs = fit_batch(body, batch, cfg)
                sync(dev)
                dt = time.perf_counter() - t0
                n = sum(len(x.keypoints) for x in batch)
                pairs = [(o.joints[:, coco], t) for o, t in zip(outs, truth[: len(outs)], strict=True)]
                pa = np.mean([np.nanmean(pa_mpjpe(x, t)) for x, t in pairs])
                mp = np.mean([np.nanmean(mpjpe(x, t)) for x, t in pairs])
                fits[(kern, len(batch))] = outs
                speed[(kern, len(batch))] = n / dt
                print(f"| {kern:<7} | {len(batch):<8} | {n:6d} | {dt:8.2f} | {n / dt:9.1f} | {pa:11.2f} | {mp:8.2f} |")
        if "fused" in paths:
            print(f"fused vs torch, 1 take: {speed[('fused', 1)] / speed[('torch', 1)]:.2f}x faster (target >= 2x)")
            a, b = fits[("fused", 1)][0], fits[("torch", 1)][0]
            d_pa = np.nanmean(pa_mpjpe(a.joints[:, coco], truth[0])) - np.nanmean(pa_mpjpe(b.joints[:, coco], truth[0]))
            print(f"PA-MPJPE fused - torch: {d_pa:+.3f} mm (target |.| <= 0.1); max joint difference "
                  f"{1000 * np.abs(a.joints - b.joints).max():.2f} mm")  # fmt: skip


if __name__ == "__main__":
    main()
