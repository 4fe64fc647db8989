#!/usr/bin/env bash
# Compiles the per-rank programs of bench/gpu_rank (gen_rank.py) for the
# CUDA target, here (no GPU needed), into OUT (default gpucarry/gpu-rank)
# with the runtime, for gpu_rank.py on the GPU machine:
#
#   bench/gpu_rank/build.sh [OUT]
#   (GPU machine) python3 bench/gpu_rank/gpu_rank.py OUT [--json r.json]
#
# TOKENS, TPS and BLOCKS (space-separated) choose the cases.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-gpucarry/gpu-rank}
BIN=${BIN_DIR:-build/bin}
LIB=${LIB_DIR:-build/lib}
mkdir -p "$OUT/src"
cp "$LIB/libdtensor_runtime_cuda.so" "$OUT/"
for T in ${TOKENS:-8192 4096}; do
  for TP in ${TPS:-2 4}; do
    for B in ${BLOCKS:-mlp sp_mlp attn layer}; do
      c=${B}_T${T}_TP${TP}
      python3 bench/gpu_rank/gen_rank.py --block "$B" --tokens "$T" --tp "$TP" \
        -o "$OUT/src/$c.mlir"
      "$BIN/dtensor-compile" "$OUT/src/$c.mlir" --target cuda -o "$OUT/$c.so" \
        ${COMPILE_FLAGS:-}
    done
  done
done
echo "gpu_rank: $(ls "$OUT"/*_T*.so | wc -l) artifacts in $OUT"
