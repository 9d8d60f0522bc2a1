#!/usr/bin/env bash
# The GPU session's one script: CUDA tests of the suite, then benchmarks/gpu/gpu_checks.py.
# Wheels for packages the GPU image lacks (tensordict, gymnasium, hydra...) are expected in .whl/ (see
# docs/benchmarks.md, "GPU checks"); results go to $OUT (or ./gpu-results).
set -uo pipefail
out="${OUT:-gpu-results}"
mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
python3 -c "import torch, tensordict; print('torch', torch.__version__, 'tensordict', tensordict.__version__, torch.cuda.is_available())"
echo "== CUDA tests in the suite"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/data/test_tensor_specs.py -k "cuda or device" \
  -o addopts="" 2>&1 | tail -5 | tee "$out/pytest_cuda.txt"
echo "== gpu_checks"
timeout "${GPU_CHECK_TIMEOUT:-420}" python3 benchmarks/gpu/gpu_checks.py --out "$out" 2>&1 | tee "$out/gpu_checks.log"
