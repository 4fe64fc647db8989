#!/usr/bin/env bash
# Runs on the GPU machine what scripts/gpu-build.sh compiled: every example
# and e2e program (scripts/gpu-programs.txt) with 1, 2 and 4 ranks, each
# checked against its unsharded artifact on fresh random inputs (fp32
# relative error < 1e-5, bf16 < 1e-2, bf16acc < 1e-1); the TP MLP against PyTorch eager
# with the same weights and under torchrun and mpirun; the runtime's
# attention, on cuDNN and on its own kernel, against PyTorch's SDPA
# (scripts/gpu-attention-check.py); whole
# programs captured and replayed as one CUDA graph, collectives included
# (GRAPH_CASES, dtensor-launch --cuda-graph); and a planted fault (a rank that skips a
# collective), which must end with the watchdog's error naming the rank,
# group and collective, not a hang. Needs no MLIR or LLVM: only the folder
# gpu-build.sh wrote, CUDA's driver, NCCL, cuBLASLt (and PyTorch for the
# PyTorch check).
#
#   scripts/gpu-test.sh [DIR]       (default gpucarry/gpu-test)
#
# Environment: SINGLE_GPU (default 1: every rank on GPU 0, NCCL over
# loopback; 0: one GPU per rank), RANKS (default "1 2 4"), FAULT_TIMEOUT
# (the watchdog's seconds in the fault run, default 10). Ends with
# "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-gpucarry/gpu-test}
SINGLE_GPU=${SINGLE_GPU:-1}
RANKS=${RANKS:-1 2 4}
FAULT_TIMEOUT=${FAULT_TIMEOUT:-10}
GRAPH_CASES=${GRAPH_CASES:-tp_mlp.n2 tp_mlp_overlap.n2 tp_mlp_fused.n2 sequence_parallel.n2 tp_mlp.n4 tp_mlp_overlap.n4 transformer_6.n4}
LAUNCH="$DIR/dtensor-launch"
[ -x "$LAUNCH" ] || { echo "gpu-test: $LAUNCH missing (run scripts/gpu-build.sh)" >&2; exit 2; }
export NCCL_NVLS_ENABLE=0
single=()
[ "$SINGLE_GPU" = 1 ] && single=(--single-gpu)

passed=0 failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
pass() { echo "PASS $*"; passed=$((passed + 1)); }

echo "gpu-test: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)," \
     "SINGLE_GPU=$SINGLE_GPU, ranks: $RANKS"
while read -r c n dtype; do
  [[ " $RANKS " == *" $n "* ]] || continue
  if [ "$dtype" = COMPILE-FAILED ]; then
    fail "$c: did not compile ($DIR/$c.compile.log)"; continue
  fi
  tol=1e-5; [ "$dtype" = bf16 ] && tol=1e-2; [ "$dtype" = bf16acc ] && tol=1e-1
  out=$("$LAUNCH" "$DIR/$c.so" --reference "$DIR/$c.ref.so" --nproc "$n" \
          "${single[@]}" --tolerance "$tol" --timeout 300 2>&1)
  rc=$?
  worst=$(printf '%s\n' "$out" | grep -o 'max relative error [0-9.e+-]*' |
          awk '{print $4}' | sort -g | tail -1)
  if [ $rc -eq 0 ]; then
    pass "$c ($n ranks, $dtype): max relative error ${worst:-n/a}"
  else
    fail "$c ($n ranks, $dtype): exit $rc"; printf '%s\n' "$out" | tail -8 | sed 's/^/    /'
  fi
done < "$DIR/cases.txt"

# Whole programs captured as one CUDA graph, collectives included, and
# replayed (dtensor-launch --cuda-graph: the second replay's outputs are
# checked): sync, async and ring-fused collectives, and a transformer.
for c in $GRAPH_CASES; do
  n=${c##*.n}
  [[ " $RANKS " == *" $n "* ]] || continue
  [ -f "$DIR/$c.so" ] || { fail "$c under a CUDA graph: not built"; continue; }
  tol=1e-5; grep -q "^$c $n bf16acc" "$DIR/cases.txt" && tol=1e-1
  if out=$("$LAUNCH" "$DIR/$c.so" --reference "$DIR/$c.ref.so" --nproc "$n" \
             "${single[@]}" --tolerance "$tol" --timeout 300 --cuda-graph 2>&1); then
    pass "$c under a CUDA graph: max relative error $(printf '%s\n' "$out" |
      grep -o 'max relative error [0-9.e+-]*' | awk '{print $4}' | sort -g | tail -1)"
  else
    fail "$c under a CUDA graph"; printf '%s\n' "$out" | tail -8 | sed 's/^/    /'
  fi
done

# The TP MLP against PyTorch eager with the same weights (2 ranks).
if [[ " $RANKS " == *" 2 "* ]]; then
  if out=$(python3 scripts/gpu-torch-check.py "$DIR" "${single[@]}" 2>&1); then
    pass "tp_mlp vs PyTorch eager: $(printf '%s\n' "$out" | tail -1)"
  else
    fail "tp_mlp vs PyTorch eager"; printf '%s\n' "$out" | tail -8 | sed 's/^/    /'
  fi
fi

# The runtime's attention (cuDNN's and its own kernel) against PyTorch's
# SDPA (one rank); a cuDNN path that fell back to the kernel fails.
if python3 -c "import torch" 2> /dev/null; then
  if out=$(python3 scripts/gpu-attention-check.py "$DIR" 2>&1); then
    pass "attention (cudnn, kernel) vs PyTorch SDPA: $(printf '%s\n' "$out" | tail -1)"
  else
    fail "attention (cudnn, kernel) vs PyTorch SDPA"
    printf '%s\n' "$out" | grep -v '^PASS' | tail -16 | sed 's/^/    /'
  fi
else
  echo "SKIP attention vs PyTorch SDPA: no PyTorch"
fi

# The same artifact joining other launchers' ranks (their environment; the
# NCCL id over the runtime's TCP rendezvous): torchrun and mpirun.
joined() {
  local name=$1
  shift
  local work
  work=$(mktemp -d /tmp/dtensor-gpu-test.XXXXXX)
  if out=$(DTENSOR_SINGLE_GPU_TEST=$SINGLE_GPU "$@" "$LAUNCH" "$DIR/tp_mlp.n2.so" \
             --reference "$DIR/tp_mlp.n2.ref.so" --work-dir "$work" 2>&1) &&
     printf '%s\n' "$out" | grep -q '^PASS$'; then
    pass "tp_mlp.n2 under $name: $(printf '%s\n' "$out" | grep -o 'max relative error [0-9.e+-]*' | head -1)"
  else
    fail "tp_mlp.n2 under $name"; printf '%s\n' "$out" | tail -8 | sed 's/^/    /'
  fi
  rm -rf "$work"
}
if [[ " $RANKS " == *" 2 "* ]]; then
  if command -v torchrun > /dev/null; then
    joined torchrun timeout 300 torchrun --standalone --nproc-per-node 2 --no-python
  else
    echo "SKIP torchrun: not installed"
  fi
  if command -v mpirun > /dev/null; then
    root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    joined mpirun timeout 300 mpirun "${root[@]}" --oversubscribe -n 2 \
      -x DTENSOR_SINGLE_GPU_TEST -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH
  else
    echo "SKIP mpirun: not installed"
  fi
fi

# The planted fault: rank 1 skips its first collective; rank 0's watchdog
# must name it within the timeout, and the launcher end the job.
start=$(date +%s)
out=$(DTENSOR_RT_FAULT=skip-collective:1 DTENSOR_NCCL_TIMEOUT=$FAULT_TIMEOUT \
      "$LAUNCH" "$DIR/tp_mlp.n2.so" --nproc 2 "${single[@]}" --timeout 300 2>&1)
rc=$?
elapsed=$(( $(date +%s) - start ))
want="dtensor runtime: rank 0: [a-z_]*all_reduce_f32 on group \(mesh 0, axes \{0\}\) did not complete within $FAULT_TIMEOUT s"
if [ $rc -eq 2 ] && [ $elapsed -lt $((FAULT_TIMEOUT + 120)) ] &&
   printf '%s\n' "$out" | grep -qE "$want"; then
  pass "planted fault: exit 2 after ${elapsed} s: $want"
else
  fail "planted fault: exit $rc after ${elapsed} s, expected exit 2 with: $want"
  printf '%s\n' "$out" | tail -8 | sed 's/^/    /'
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
