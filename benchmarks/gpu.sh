#!/usr/bin/env bash
# The headline benchmarks on one GPU, in one go (~8 minutes), into one file of tables.
#
#   pip install -e ".[cuda12,test]" && bash benchmarks/gpu.sh [out.md]
#
# For a session lent a device: each benchmark gets a time limit so the whole run stays inside
# the budget, and a benchmark that fails or runs out of time leaves its error in the file and
# the next one still runs. torch is the CUDA build when present (else CPU: ratios say so).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-benchmarks/gpu_results.md}"
run() {  # run LIMIT_SECONDS TITLE COMMAND...
  local limit="$1" title="$2"
  shift 2
  echo "## $title" >>"$out"
  echo '```' >>"$out"
  timeout "$limit" "$@" >>"$out" 2>&1 || echo "(exit $? after at most ${limit}s)" >>"$out"
  echo '```' >>"$out"
  tail -n 25 "$out"
}
{
  echo "# fjax headline benchmarks — $(date -u +%F) $(hostname)"
  python -c "import jax, torch; print('jax', jax.__version__, jax.devices(), '| torch', torch.__version__, 'cuda', torch.cuda.is_available())"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
} >"$out" 2>&1
run 90 "nn.Graph training step (graph_step.py)" python benchmarks/graph_step.py --compile-reps 2
run 90 "12-LSTM net, step and compile time (lstm.py)" python benchmarks/lstm.py --repeats 3
run 60 "autodiff: jacobian/hessian/hvp (autodiff.py)" python benchmarks/autodiff.py --budget 0.2
run 60 "eager per-op overhead (eager_overhead.py)" python benchmarks/eager_overhead.py --repeats 3 --iters 500
run 120 "PyTorch programs under mock_torch (programs.py)" python benchmarks/programs.py --repeats 3 --steps 5
run 60 "compile_from_torch: ResNet-50 and GPT (compile_from_torch.py)" python benchmarks/compile_from_torch.py --reps 3
echo "wrote $out"
