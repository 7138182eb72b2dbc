#!/usr/bin/env bash
# One call on a lent GPU machine (the `device` tool; check its status first): the CUDA build, the CUDA
# parity tests, the GPU fit benchmark, its profile and the detection throughput, in about 6 minutes. Prints everything to record in
# benchmarks/README.md. Usage: bash benchmarks/gpu_check.sh   (from the repository root)
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
if [ ! -x "$PY" ]; then  # a bare machine: its Python (with torch), motionkit from the tree, missing packages
  PY=python3          # from wheels carried in .whl/ (no registry can be reached there; see the README's GPU section)
  if ls .whl/*.whl >/dev/null 2>&1; then
    SITE=$(mktemp -d)
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
      2>&1 | tail -2
    export PYTHONPATH="$SITE"
  fi
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export MOTIONKIT_HOME=${MOTIONKIT_HOME:-$(mktemp -d)}
echo "== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
echo "== doctor"; "$PY" -m motionkit.cli doctor --cuda
echo "== build (cached by source hash)"; "$PY" -m motionkit.kernels cpu cuda
echo "== CUDA parity tests"
timeout 100 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/kernels tests/test_gpu.py 2>&1 | tail -15
echo "== end to end: motionkit fit --take demo on CUDA"
timeout 120 "$PY" -m motionkit.cli fit --take demo --fps 20 --device cuda --out "$MOTIONKIT_HOME/demo" 2>&1 | grep -v Warn | tail -12
echo "== GPU fit benchmark (20-s realistic takes; 1 take and 16 batched)"
timeout 170 "$PY" benchmarks/bench_fit.py --devices cuda --takes 16 --seconds 20
echo "== where the fit's time goes (per stage, graphs vs eager vs CPU, top kernels)"
timeout 120 "$PY" benchmarks/gpu_profile.py --device cuda --takes 16 2>&1 | grep -v "Warn\|val = self\|USDT"
echo "== detection throughput (decode, RF-DETR Nano on 448p, keypoints on 576-px crops; random weights)"
timeout 80 "$PY" benchmarks/bench_detect.py --devices cuda --frames 60 --scale 1.0 --batch 32
