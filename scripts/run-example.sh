#!/usr/bin/env bash
# The README's main job: set up, build, and run the compiler over the TP-MLP
# example, printing the result.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
bash scripts/setup.sh
cmake --build "$BUILD_DIR" --target dtensor-opt -- -j"${JOBS:-2}"
EXAMPLE=${1:-examples/tp_mlp.mlir}
echo "== dtensor-opt $EXAMPLE"
"$BUILD_DIR/bin/dtensor-opt" "$EXAMPLE"
