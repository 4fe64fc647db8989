#!/usr/bin/env bash
# The README's main job: set up, build, compile the TP-MLP example for 4 CPU
# ranks, run it over MPI and check it against the unsharded program.
# Usage: scripts/run-example.sh [example.mlir] [dtensor-run options...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
bash scripts/setup.sh
cmake --build "$BUILD_DIR" --target dtensor-opt dtensor-run -- -j"${JOBS:-2}"
EXAMPLE=${1:-examples/tp_mlp.mlir}
shift || true
echo "== the per-rank program (dtensor-opt $EXAMPLE --dtensor-spmd)"
"$BUILD_DIR/bin/dtensor-opt" "$EXAMPLE" --dtensor-spmd
echo "== dtensor-run $EXAMPLE -n 4"
"$BUILD_DIR/bin/dtensor-run" "$EXAMPLE" -n 4 --repeat 10 "$@"
