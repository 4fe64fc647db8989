#!/usr/bin/env bash
# Compiles the global-view programs of bench/gpu_overlap (gen_overlap.py) for
# the CUDA target, here (no GPU needed), into OUT (default
# gpucarry/gpu-overlap) with the runtime, for gpu_overlap.py on the GPU
# machine:
#
#   bench/gpu_overlap/build.sh [OUT]
#   (GPU machine) torchrun --standalone --nproc-per-node N \
#       bench/gpu_overlap/gpu_overlap.py OUT --json r.json
#
# Every case twice: <case>.so with comm/compute fusion and the default
# overlap schedule (dtensor-compile --fuse --overlap default), and
# <case>.seq.so as partitioned (no fusion, no scheduling). In OUT/model, the
# compiler's modelled timeline of each (<case>.model.json and
# <case>.seq.model.json, Chrome traces, and their .txt summaries) and the
# comm report (<case>.comm.txt), for gpu_overlap.py --trace (the GPU machine
# has no MLIR to make them). NS (default "2 4") and ONLY
# (case names, space-separated; default: all of `gen_overlap.py --list`)
# choose the cases; HARDWARE (default h200) the cost model's preset.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-gpucarry/gpu-overlap}
BIN=${BIN_DIR:-build/bin}
LIB=${LIB_DIR:-build/lib}
HW=${HARDWARE:-h200}
mkdir -p "$OUT/src" "$OUT/model"
cp "$LIB/libdtensor_runtime_cuda.so" "$OUT/"
count=0
for N in ${NS:-2 4}; do
  while read -r name c t h f; do
    if [[ -n "${ONLY:-}" && " $ONLY " != *" $name "* ]]; then continue; fi
    src="$OUT/src/$name.mlir"
    python3 bench/gpu_overlap/gen_overlap.py --case "$c" --tokens "$t" \
      --hidden "$h" --ffn "$f" -n "$N" -o "$src"
    "$BIN/dtensor-compile" "$src" --target "cuda:$HW" --fuse --overlap default \
      -o "$OUT/$name.so"
    "$BIN/dtensor-compile" "$src" --target "cuda:$HW" -o "$OUT/$name.seq.so"
    # The modelled timeline of the fused, scheduled per-rank program (the
    # same pipeline as dtensor-compile --fuse --overlap default).
    "$BIN/dtensor-opt" "$src" -o /dev/null --target="cuda:$HW" \
      -mlir-print-op-on-diagnostic=false \
      --pass-pipeline="builtin.module(dtensor-pipeline{to=scheduled fuse=true fuse-force=true},dtensor-export-timeline{trace=$OUT/model/$name.model.json})" \
      > "$OUT/model/$name.model.txt" 2>&1
    # ... and of the program as partitioned (the .seq.so artifact).
    "$BIN/dtensor-opt" "$src" -o /dev/null --target="cuda:$HW" \
      -mlir-print-op-on-diagnostic=false \
      --pass-pipeline="builtin.module(dtensor-pipeline{to=per-rank},dtensor-export-timeline{trace=$OUT/model/$name.seq.model.json})" \
      > "$OUT/model/$name.seq.model.txt" 2>&1
    "$BIN/dtensor-opt" "$src" -o /dev/null --target="cuda:$HW" --dtensor-spmd \
      --dtensor-comm-report > "$OUT/model/$name.comm.txt"
    count=$((count + 1))
  done < <(python3 bench/gpu_overlap/gen_overlap.py --list -n "$N")
done
echo "gpu_overlap: $count cases ($((2 * count)) artifacts) in $OUT"
