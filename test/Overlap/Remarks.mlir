// The remarks of the cost-gated and scheduling passes (one per candidate
// collective, one per function) name their location and say why, and never
// print the op: printing an op numbers the values of its whole function,
// which made a remark per collective quadratic in the function's size.
// RUN: dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --dtensor-spmd --dtensor-split-matmul-all-reduce --dtensor-sink-waits=report-memory=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=SPLIT --implicit-check-not="see current operation"
// RUN: dtensor-opt %dtensor_src_root/examples/sequence_parallel_mlp.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json --dtensor-spmd --dtensor-fuse-collective-matmul -o /dev/null 2>&1 | FileCheck %s --check-prefix=FUSE --implicit-check-not="see current operation"
// SPLIT: tp_mlp.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: not split:
// SPLIT: tp_mlp.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: dtensor-sink-waits: peak live memory
// FUSE-COUNT-2: sequence_parallel_mlp.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: not fused:
