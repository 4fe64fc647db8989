#!/usr/bin/env bash
# Regenerates the timeline pictures of docs/timeline.md: the TP MLP and the
# attention example at Llama-3-8B sizes on 4 H200s, each as partitioned
# (*_spmd.svg) and as scheduled by the default dtensor-overlap pipeline
# (*_overlap.svg). Prints the modelled totals. test/docs/timelines.test
# fails while the checked-in pictures differ from what this makes.
#   OUT_DIR: where the pictures go (default docs/images)
#   DTENSOR_OPT: the dtensor-opt to use (default $BUILD_DIR/bin/dtensor-opt)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
OUT_DIR=${OUT_DIR:-docs/images}
opt=${DTENSOR_OPT:-$BUILD_DIR/bin/dtensor-opt}
mkdir -p "$OUT_DIR"

# name, program, passes before partitioning
timeline() {
  local name=$1 program=$2 prepare=$3
  "$opt" "$program" -o /dev/null -mlir-print-op-on-diagnostic=false \
    --pass-pipeline="builtin.module(${prepare}dtensor-spmd,dtensor-export-timeline{svg=$OUT_DIR/${name}_spmd.svg})"
  "$opt" "$program" -o /dev/null -mlir-print-op-on-diagnostic=false \
    --pass-pipeline="builtin.module(${prepare}dtensor-spmd,dtensor-overlap,dtensor-export-timeline{svg=$OUT_DIR/${name}_overlap.svg})"
}

timeline tp_mlp docs/images/tp_mlp_llama8b.mlir ""
timeline attention docs/images/attention_llama8b.mlir \
  "dtensor-apply-tp-plan{plan=examples/attention.plan.json},"
# The backward too: the TP MLP's joint forward + backward function
# (docs/autodiff.md), partitioned and scheduled.
timeline tp_mlp_backward docs/images/tp_mlp_llama8b.mlir \
  "dtensor-autodiff{functions=mlp},"
# FSDP + TP on a 2x2 mesh (examples/fsdp_tp_mlp.mlir at the same sizes):
# the backward's gradient reduce_scatters over dp.
timeline fsdp_tp_backward docs/images/fsdp_tp_mlp_llama8b.mlir \
  "dtensor-autodiff{functions=fsdp_tp_mlp},"
