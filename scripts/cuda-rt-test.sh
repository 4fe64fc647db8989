#!/usr/bin/env bash
# Runs dtensor-cuda-rt-test with N ranks on ONE GPU (DTENSOR_SINGLE_GPU_TEST=1:
# every rank on device 0, NCCL over loopback), then the planted fault
# (--fault skip-collective) and checks that the watchdog ends it with its
# message within DTENSOR_NCCL_TIMEOUT, then two error paths on one rank (out
# of memory, a wrong context argument). Last line: "N passed, N failed";
# exit status 0 only if every check passed.
#
#   scripts/cuda-rt-test.sh [N]        (default 2; N >= 2)
#
# Environment: SINGLE_GPU (default 1; 0: one GPU per rank, rank r on device
# r, real NCCL over NVLink on a machine with N GPUs), BIN_DIR (default build/bin; libdtensor_runtime_cuda.so is found
# in BIN_DIR/../lib through the binary's RUNPATH), FAULT_TIMEOUT (seconds the
# watchdog gets in the fault run, default 10), LOG_DIR (default a temp dir).
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${BASH_VERSINFO[0]}" -lt 5 ] ||
   { [ "${BASH_VERSINFO[0]}" -eq 5 ] && [ "${BASH_VERSINFO[1]}" -lt 1 ]; }; then
  echo "cuda-rt-test: needs bash >= 5.1 (wait -n -p), this is $BASH_VERSION" >&2
  exit 2
fi

N=${1:-2}
if ! [[ "$N" =~ ^[0-9]+$ ]] || [ "$N" -lt 2 ]; then
  echo "usage: scripts/cuda-rt-test.sh N   (N >= 2 ranks)" >&2
  exit 2
fi
BIN=${BIN_DIR:-build/bin}/dtensor-cuda-rt-test
if [ ! -x "$BIN" ]; then
  echo "cuda-rt-test: $BIN not found (build the dtensor-cuda-rt-test target)" >&2
  exit 2
fi
if missing=$(ldd "$BIN" 2>&1 | grep "not found"); then
  echo "cuda-rt-test: $BIN cannot load its libraries:" >&2
  echo "$missing" >&2
  echo "(libdtensor_runtime_cuda.so belongs in $(dirname "$BIN")/../lib; NCCL and" \
       "cuBLASLt in the loader path or LD_LIBRARY_PATH)" >&2
  exit 2
fi
FAULT_TIMEOUT=${FAULT_TIMEOUT:-10}
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/dtensor-cuda-rt-test.XXXXXX)}
mkdir -p "$LOG_DIR"

passed=0
failed=0

# launch PHASE TIMEOUT ARGS...: starts N ranks, waits for all of them (a
# rank that fails gets the others killed after a 5 s grace period, like
# torchrun), leaves per-rank logs in $LOG_DIR/PHASE.R.log and the exit codes
# in RCS.
launch() {
  local phase=$1 limit=$2
  shift 2
  local port=$((20000 + RANDOM % 20000))
  local pids=()
  for ((r = 0; r < N; r++)); do
    DTENSOR_RANK=$r DTENSOR_WORLD_SIZE=$N DTENSOR_LOCAL_RANK=$r \
    DTENSOR_MASTER_ADDR=127.0.0.1 DTENSOR_MASTER_PORT=$port \
    DTENSOR_SINGLE_GPU_TEST=${SINGLE_GPU:-1} \
      timeout -k 5 "$limit" "$BIN" "$@" >"$LOG_DIR/$phase.$r.log" 2>&1 &
    pids+=($!)
  done
  RCS=()
  local remaining=$N killed=0
  declare -A done_rc=()
  while [ "$remaining" -gt 0 ]; do
    local pid rc running=()
    for p in "${pids[@]}"; do
      [ -n "${done_rc[$p]:-}" ] || running+=("$p")
    done
    pid=""
    wait -n -p pid "${running[@]}"
    rc=$?
    [ -z "${pid:-}" ] && break
    done_rc[$pid]=$rc
    remaining=$((remaining - 1))
    if [ "$rc" -ne 0 ] && [ "$killed" -eq 0 ] && [ "$remaining" -gt 0 ]; then
      killed=1
      sleep 5 # let the others print their own verdicts
      for p in "${pids[@]}"; do
        [ -n "${done_rc[$p]:-}" ] || kill "$p" 2>/dev/null
      done
    fi
  done
  for p in "${pids[@]}"; do
    RCS+=("${done_rc[$p]:-255}")
  done
}

if [ "${SINGLE_GPU:-1}" = 1 ]; then where="one GPU"; else where="one GPU each"; fi
echo "== $N ranks on $where: collectives, matmuls, mgpu* (logs: $LOG_DIR)"
launch main 600
for ((r = 0; r < N; r++)); do
  log=$LOG_DIR/main.$r.log
  grep -E "FAIL|dtensor runtime:|dtensor-cuda-rt-test:" "$log" | sed "s/^/  /"
  summary=$(grep -E "^rank $r: [0-9]+ passed, [0-9]+ failed$" "$log" | tail -1)
  if [ -n "$summary" ]; then
    echo "$summary"
    p=$(echo "$summary" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
    f=$(echo "$summary" | sed -E 's/.*passed, ([0-9]+) failed/\1/')
    passed=$((passed + p))
    failed=$((failed + f))
  else
    echo "rank $r: no summary (exit status ${RCS[$r]}); last lines:"
    tail -5 "$log" | sed "s/^/  /"
    failed=$((failed + 1))
  fi
  if [ "${RCS[$r]}" -ne 0 ] && [ -n "$summary" ] && [ "$f" -eq 0 ]; then
    echo "rank $r: exit status ${RCS[$r]} despite 0 failed checks"
    failed=$((failed + 1))
  fi
done

echo "== planted fault: rank 1 skips an all_reduce (DTENSOR_NCCL_TIMEOUT=$FAULT_TIMEOUT)"
start=$(date +%s)
DTENSOR_NCCL_TIMEOUT=$FAULT_TIMEOUT launch fault $((FAULT_TIMEOUT + 120)) \
  --fault skip-collective
elapsed=$(($(date +%s) - start))
log=$LOG_DIR/fault.0.log
want="dtensor runtime: rank 0: all_reduce_f32 on group (mesh 0, axes {0}) did not complete within $FAULT_TIMEOUT s"
if grep -qF "$want" "$log" && [ "${RCS[0]}" -ne 0 ] &&
   [ "${RCS[0]}" -ne 124 ] && [ "$elapsed" -lt $((FAULT_TIMEOUT + 60)) ]; then
  echo "PASS fault: rank 0 exited ${RCS[0]} after ${elapsed} s with: $want"
  passed=$((passed + 1))
else
  echo "FAIL fault: expected rank 0 to exit non-zero within $((FAULT_TIMEOUT + 60)) s with"
  echo "  $want"
  echo "  got exit status ${RCS[0]} after ${elapsed} s; rank 0's log:"
  tail -20 "$log" | sed "s/^/  /"
  failed=$((failed + 1))
fi

# expect_error KIND MESSAGE: one rank with --fault KIND must exit non-zero
# (not 3: the program's own "the fault was not caught") with MESSAGE, a
# fixed string, in its output.
expect_error() {
  local kind=$1 want=$2 saved=$N
  N=1
  launch "$kind" 120 --fault "$kind"
  N=$saved
  if grep -qF "$want" "$LOG_DIR/$kind.0.log" && [ "${RCS[0]}" -ne 0 ] &&
     [ "${RCS[0]}" -ne 3 ] && [ "${RCS[0]}" -ne 124 ]; then
    echo "PASS fault $kind: exit ${RCS[0]} with: $want"
    passed=$((passed + 1))
  else
    echo "FAIL fault $kind: expected a non-zero exit with: $want"
    echo "  got exit status ${RCS[0]}; log:"
    tail -10 "$LOG_DIR/$kind.0.log" | sed "s/^/  /"
    failed=$((failed + 1))
  fi
}

echo "== error paths (1 rank)"
expect_error oom "dtensor runtime: rank 0: mgpuMemAlloc: cuMemAllocAsync of 1125899906842624 bytes failed:"
expect_error bad-context "dtensor runtime: rank 0: all_reduce_f32: context argument is not dtensor_rt_context() of this process"
expect_error bad-graph "dtensor runtime: rank 0: graph_describe: not a graph of dtensor_rt_graph_end (or destroyed)"
expect_error bad-activation "dtensor runtime: rank 0: matmul_act_f32: activation 7 is not 0 (none), 1 (ReLU) or 2 (GELU, tanh form)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
