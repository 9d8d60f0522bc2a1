#!/usr/bin/env bash
# Runs benchmark files against tdrl and TorchRL back to back, then prints the side-by-side table.
#   usage: benchmarks/run_compare.sh [PYTEST ARGS...]      e.g.  benchmarks/run_compare.sh benchmarks/test_envs_benchmark.py
# TDRL_PYTHON (default: python) runs tdrl; TORCHRL_PYTHON (default: the venv built by
# ../shared/tools/anchor-venv.sh) runs TorchRL 0.14.1. Results land in $OUT_DIR (default: bench-results/).
set -euo pipefail
cd "$(dirname "$0")/.."
tdrl_py="${TDRL_PYTHON:-python}"
torchrl_py="${TORCHRL_PYTHON:-$HOME/.cache/torchrl-anchor-venv/bin/python}"
out="${OUT_DIR:-bench-results}"
mkdir -p "$out"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(benchmarks/)
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
"$tdrl_py" -m pytest "${args[@]}" -q --benchmark-json "$out/tdrl.json" --backend tdrl || true
"$torchrl_py" -m pytest "${args[@]}" -q --benchmark-json "$out/torchrl.json" --backend torchrl || true
"$tdrl_py" benchmarks/compare.py "$out/tdrl.json" "$out/torchrl.json"
