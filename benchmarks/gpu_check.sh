#!/usr/bin/env bash
# One call on a lent GPU machine (the `device` tool; check its status first): the CUDA build, the CUDA
# parity tests, the GPU fit benchmark and the detection throughput, in under 5 minutes. Prints everything to record in
# benchmarks/README.md. Usage: bash benchmarks/gpu_check.sh   (from the repository root)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
if [ ! -x "$PY" ]; then  # a bare machine: use its Python and install motionkit without touching its torch
  PY=python3
  "$PY" -m pip install -q --no-deps -e . && "$PY" -m pip install -q roma smplx numba h5py click tqdm ninja pytest \
    opencv-python-headless 2>&1 | tail -1
fi
export MOTIONKIT_HOME=${MOTIONKIT_HOME:-$(mktemp -d)}
echo "== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
echo "== doctor"; "$PY" -m motionkit.cli doctor --cuda
echo "== build (cached by source hash)"; "$PY" -m motionkit.kernels cpu cuda
echo "== CUDA parity tests"
timeout 120 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/kernels tests/test_gpu.py 2>&1 | tail -15
echo "== GPU fit benchmark (20-s realistic takes; 1 take and 16 batched)"
timeout 170 "$PY" benchmarks/bench_fit.py --devices cuda --takes 16 --seconds 20
echo "== detection throughput (decode, RF-DETR Nano on 448p, keypoints on 576-px crops; random weights)"
timeout 60 "$PY" benchmarks/bench_detect.py --devices cuda --frames 60 --scale 1.0 --batch 32
