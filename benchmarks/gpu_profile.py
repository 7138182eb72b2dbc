"""Where the fused fit's time goes on one device: milliseconds per Adam iteration of each stage (CUDA
graphs on CUDA), the whole fit, the fit with graphs vs without and vs the CPU, and the kernels that take
the most device time in 10 eager stage-C iterations (torch profiler), for one 20-s realistic take and
for K copies of it batched.

Usage: ``python benchmarks/gpu_profile.py [--device cuda] [--takes 16] [--quick]`` (part of ``gpu_check.sh``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_fit import realistic_fit_inputs  # this folder is on the path when a script here runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--takes", type=int, default=16, help="copies of the take in the batched rows")
    ap.add_argument("--quick", action="store_true", help="only the times (no comparison of fits, no profiler)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mk_gpu_profile_"))
    os.environ.setdefault("MOTIONKIT_HOME", str(tmp / "home"))
    import torch
    from torch.profiler import ProfilerActivity, profile

    from motionkit.body.fitting import BodyFitConfig, fit_batch, fit_body_model

    dev = args.device
    inp = realistic_fit_inputs(tmp, 1, 20.0)[0][0]
    body = fit_body_model()

    def timed(inputs, **kw) -> float:
        cfg = BodyFitConfig(device=dev, kernels="fused", **kw)
        if dev == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        fit_batch(body, inputs, cfg)
        if dev == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t

    print(f"# fused fit on {dev} ({torch.cuda.get_device_name(0) if dev == 'cuda' else 'CPU'}), 20-s realistic take")
    timed([inp], iters=(2, 2, 2), second_pass_iters=0)  # warm-up
    for n in sorted({1, args.takes}):
        base = timed([inp] * n, iters=(0, 0, 0), second_pass_iters=0)
        per_stage = []
        for name, iters in (("A", (100, 0, 0)), ("B", (0, 100, 0)), ("C", (0, 0, 100))):
            per_stage.append(f"{name} {10 * (timed([inp] * n, iters=iters, second_pass_iters=0) - base):.2f}")
        print(f"{n} take(s): ms per iteration {', '.join(per_stage)}; setup {base:.2f} s; "
              f"whole fit_batch {timed([inp] * n):.2f} s")  # fmt: skip
    if args.quick:
        return

    fits = {
        "graphs": fit_batch(body, [inp], BodyFitConfig(device=dev, kernels="fused"))[0],
        "eager": fit_batch(body, [inp], BodyFitConfig(device=dev, kernels="fused", cuda_graphs=False))[0],
        "cpu": fit_batch(body, [inp], BodyFitConfig(device="cpu", kernels="fused"))[0],
    }
    for name in ("eager", "cpu"):
        d = 1000 * np.linalg.norm(fits["graphs"].joints - fits[name].joints, axis=-1)
        print(f"joints, {dev} vs {name}: median {np.median(d):.4f} mm, p95 {np.percentile(d, 95):.3f}, "
              f"max {d.max():.2f}")  # fmt: skip

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    key = "self_device_time_total" if dev == "cuda" else "self_cpu_time_total"
    for n in sorted({1, args.takes}):
        cfg = BodyFitConfig(device=dev, kernels="fused", iters=(0, 0, 10), second_pass_iters=0, cuda_graphs=False)
        with profile(activities=acts) as prof:
            fit_batch(body, [inp] * n, cfg)
        print(f"\n## stage C, 10 eager iterations (and the fit's setup), {n} take(s)")
        print(prof.key_averages().table(sort_by=key, row_limit=20, max_name_column_width=60))


if __name__ == "__main__":
    main()
