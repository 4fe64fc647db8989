#!/usr/bin/env bash
# Long fuzzing run of the dtensor compiler at low priority (issues 11, 26).
#   scripts/fuzz.sh --minutes N --seed S [--out DIR] [--mode MODE]
#                   [--differential] [--artifact]
# --mode mutants (default) mutates the test corpus and the examples, runs
# every mutant through parse, screen, verify and every dtensor pipeline
# (verifier after each pass) and, with --differential, accepted mutants on
# 2 or 4 ranks under dtensor-run against the unsharded program.
# --mode transitions generates random layout transitions (meshes of up to 8
# processes, uneven and empty values, every placement) and runs each through
# the pipelines and under dtensor-run. --mode cuda runs the mutants through
# the CUDA target's lowering to LLVM (PTX kernels: no GPU, no ptxas) and,
# with --artifact, compiles accepted ones with dtensor-compile --target cuda.
# Crashers (program + JSON with the pipeline and the message) go to DIR
# (default fuzz-out/); exits 1 if any bug was found. See
# scripts/fuzz/dtensor_fuzz.py.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=10 seed=1 out=fuzz-out mode=mutants extra=()
usage="usage: $0 --minutes N --seed S [--out DIR] [--mode mutants|transitions|cuda] [--differential] [--artifact]"
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --differential|--artifact) extra+=("$1"); shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
case "$mode" in
  mutants|transitions|cuda) ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
BUILD_DIR=${BUILD_DIR:-build}
targets=(dtensor-fuzz-check)
case "$mode" in
  mutants|transitions) targets+=(dtensor-run) ;;
  cuda) targets+=(dtensor-compile) ;;
esac
cmake --build "$BUILD_DIR" --target "${targets[@]}" >/dev/null
# A private copy of the checker: a rebuild during the run must not swap it.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
cp "$BUILD_DIR/bin/dtensor-fuzz-check" "$bin/"
nice -n 19 python3 scripts/fuzz/dtensor_fuzz.py --mode "$mode" \
  --seed "$seed" --seconds "$((minutes * 60))" --out "$out" \
  --checker "$bin/dtensor-fuzz-check" \
  --runner "$BUILD_DIR/bin/dtensor-run" \
  --compiler "$BUILD_DIR/bin/dtensor-compile" "${extra[@]}"
