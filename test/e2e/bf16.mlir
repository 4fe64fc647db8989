// REQUIRES: cpu-target
// bf16 programs on CPU ranks: the TP MLP and the sequence-parallel MLP with
// every tensor in bf16, on 4 and 2 ranks, against the unsharded bf16
// program. Collectives move bf16 and reduce it in f32 (MPI has no 16-bit
// floats); arithmetic is emulated in f32 and rounded back per op. The
// tolerance suits bf16's 8-bit mantissa (relative error ~ 2^-8 per op).
// RUN: sed 's/f32/bf16/g' %dtensor_src_root/examples/tp_mlp.mlir > %t.tp.mlir
// RUN: timeout 120 dtensor-run %t.tp.mlir -n 4 --tolerance 2e-2 | FileCheck %s
// RUN: sed 's/shape = \[4\]/shape = [2]/' %t.tp.mlir > %t.tp2.mlir
// RUN: timeout 120 dtensor-run %t.tp2.mlir -n 2 --tolerance 2e-2 | FileCheck %s
// RUN: dtensor-opt %dtensor_src_root/examples/sequence_parallel_mlp.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json | sed 's/f32/bf16/g' > %t.sp.mlir
// RUN: timeout 120 dtensor-run %t.sp.mlir -n 4 --tolerance 2e-2 | FileCheck %s
// RUN: sed 's/shape = \[4\]/shape = [2]/' %t.sp.mlir > %t.sp2.mlir
// RUN: timeout 120 dtensor-run %t.sp2.mlir -n 2 --tolerance 2e-2 | FileCheck %s
// The per-rank program really communicates bf16.
// RUN: dtensor-opt %t.sp.mlir --dtensor-spmd --dtensor-lower-to-runtime | FileCheck %s --check-prefix=ABI
// ABI-DAG: call @dtensor_rt_all_gather_bf16(
// ABI-DAG: call @dtensor_rt_reduce_scatter_bf16(
// CHECK: max relative error {{.*}} ok
// CHECK: PASS
