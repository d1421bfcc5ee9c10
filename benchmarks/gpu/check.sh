#!/usr/bin/env bash
# The prepared check for a GPU machine (issue #14).  It runs
#   1. an environment report (Python, GPU, CuPy, cuda.bindings),
#   2. the gpu-marked tests: tests/backends/cuda/test_launch_gpu.py launches
#      the rendered kernels through CuPy, test_cuda_arrays_gpu.py checks GPU
#      arrays (eager ops, dlpack with CuPy/torch, jit, Module.cuda + TrainStep,
#      save/load, pinned memory, PRNG bit-identical to the CPU), and the gpu half
#      of tests/backends/cuda/test_cuda_programs.py runs whole jitted programs
#      (every primitive, 200 random fused graphs, cuBLAS products, convolutions,
#      control flow, grad of an MLP, library steps) through the CuPy runtime,
#      all against the numpy reference,
#   3. the main example (examples/train_digits.py, one epoch) on the GPU,
#   4. the benchmark table (benchmarks/gpu/bench_gpu.py: chain, sum, softmax,
#      layernorm, bf16 matmul, MLP and transformer train steps, tiny call) against
#      CuPy, JAX and PyTorch eager / torch.compile, and eager GPU ops (bench_eager.py),
#   5. the compile check (every kernel of the corpus compiled by NVRTC for sm_90),
#   6. the host emulation: the kernels' values (test_host_emulation.py) and the
#      same programs through the executable on the emulated runtime
#      (test_cuda_programs.py without the gpu mark),
#   7. executable timings against CuPy (benchmarks/gpu/executable_bench.py),
# and writes every log under $OUT, or the directory given as the argument.
# The machine has no network: ember is installed from this checkout with
# --no-deps, and optree (and cuda-bindings / nvidia-cuda-* when missing) from
# a wheel folder beside the checkout: $EMBER_WHEELS, else ../wheels, else
# benchmarks/gpu/wheels.  Designed to finish within 8 minutes on an H200.
#
#   usage: benchmarks/gpu/check.sh [OUT_DIR]
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT_DIR="${1:-${OUT:-$ROOT/gpu-check-out}}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT_DIR"
SUMMARY="$OUT_DIR/summary.txt"
: > "$SUMMARY"

note() { echo "$*" | tee -a "$SUMMARY"; }

WHEELS=""
for d in "${EMBER_WHEELS:-}" "$ROOT/../wheels" "$HERE/wheels"; do
  if [ -n "$d" ] && [ -d "$d" ]; then WHEELS="$(cd "$d" && pwd)"; break; fi
done

# --- install (no network) ---------------------------------------------------------
{
  for pkg in optree cuda-bindings nvidia-cuda-runtime nvidia-cuda-nvrtc; do
    if ! "$PY" -m pip show "$pkg" >/dev/null 2>&1; then
      if [ -n "$WHEELS" ]; then
        "$PY" -m pip install --no-index --find-links "$WHEELS" "$pkg" || echo "could not install $pkg from $WHEELS"
      else
        echo "no wheel folder: $pkg stays missing"
      fi
    fi
  done
  "$PY" -m pip install --no-deps --no-build-isolation -e "$ROOT"
} > "$OUT_DIR/install.txt" 2>&1
# the checkout comes first on the path either way (an older ember installed on
# the machine must not be the one tested)
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
note "install: ember $(cd / && "$PY" -c 'import ember, os; print(os.path.dirname(ember.__file__))' 2>&1 | tail -n 1)" \
     "at $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo 'no git') (pip log: install.txt)"

# --- 1. environment -----------------------------------------------------------------
{
  date -u
  "$PY" --version
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  else
    echo "nvidia-smi: none"
  fi
  "$PY" - <<'EOF'
try:
    import cupy
    print("cupy", cupy.__version__, "devices:", cupy.cuda.runtime.getDeviceCount())
except Exception as e:
    print("cupy: unavailable:", type(e).__name__, e)
try:
    from cuda.bindings import nvrtc
    print("nvrtc", nvrtc.nvrtcVersion()[1:])
except Exception as e:
    print("cuda.bindings: unavailable:", type(e).__name__, e)
EOF
} > "$OUT_DIR/environment.txt" 2>&1
note "environment: $(tr '\n' ' ' < "$OUT_DIR/environment.txt" | cut -c1-300)"

run_pytest() {  # name, pytest args...
  local name="$1"; shift
  (cd "$ROOT" && timeout 420 "$PY" -m pytest -q -p no:cacheprovider -rs "$@") > "$OUT_DIR/$name.txt" 2>&1
  local rc=$?
  note "$name: rc=$rc ($(tail -n 1 "$OUT_DIR/$name.txt"))"
  return 0
}

# --- 2. gpu-marked tests (they skip cleanly without a device); all live under
# tests/backends today (collecting the whole suite at once trips over test files
# that share a basename)
run_pytest gpu_tests -m gpu tests/backends --ignore=tests/backends/cuda/test_cuda_programs.py
# whole programs through the executable on the GPU (their modules compiled in batches)
run_pytest cuda_programs_gpu -m gpu tests/backends/cuda/test_cuda_programs.py

# --- 3. the main example on the GPU (the default device when one is present), one epoch
(cd "$ROOT" && EMBER_DEFAULT_DEVICE=cuda timeout 240 "$PY" examples/train_digits.py --epochs 1 \
   --out-dir "$OUT_DIR/digits") > "$OUT_DIR/example_digits.txt" 2>&1
note "example train_digits on cuda: rc=$? ($(tail -n 1 "$OUT_DIR/example_digits.txt" | cut -c1-200))"

# --- 4. the benchmark table against CuPy, JAX and PyTorch (eager, torch.compile) in one run
(cd "$ROOT" && timeout 300 "$PY" benchmarks/gpu/bench_gpu.py --torch-compile) > "$OUT_DIR/bench_gpu.txt" 2>&1
note "bench_gpu: rc=$? (table in bench_gpu.txt)"
(cd "$ROOT" && timeout 90 "$PY" benchmarks/gpu/bench_eager.py --quick) > "$OUT_DIR/bench_eager.txt" 2>&1
note "bench_eager: rc=$? ($(tail -n 1 "$OUT_DIR/bench_eager.txt" | cut -c1-200))"

# --- 5. the NVRTC compile check ---------------------------------------------------------
run_pytest compile_check tests/backends/cuda/test_nvrtc_compile.py tests/backends/cuda/test_render.py

# --- 6. the kernels' values on the host (g++ and one emulated thread; skips without g++),
# and whole programs through the executable on the emulated runtime
run_pytest host_emulation tests/backends/cuda/test_host_emulation.py
run_pytest cuda_programs_emulated -m "not gpu" tests/backends/cuda/test_cuda_programs.py

# --- 7. executable timings against CuPy (prints "no GPU" and exits 0 without one)
(cd "$ROOT" && timeout 150 "$PY" benchmarks/gpu/executable_bench.py) > "$OUT_DIR/executable_bench.txt" 2>&1
note "executable_bench: rc=$? ($(tail -n 1 "$OUT_DIR/executable_bench.txt"))"

note "logs: $OUT_DIR"
exit 0
