// REQUIRES: cpu-target
// bf16 programs on CPU ranks: the TP MLP and the sequence-parallel MLP with
// every tensor in bf16, on 4 and 2 ranks, against the unsharded bf16
// program. Collectives move bf16 and reduce it in f32 (MPI has no 16-bit
// floats); arithmetic is emulated in f32 and rounded back per op. The
// tolerance suits bf16's 8-bit mantissa: each op rounds to half an ulp
// (2^-9), and the sharded and unsharded programs round different partial
// sums, so the largest output differs by a few ulps of 2^-7 (the
// sequence-parallel MLP on 2 ranks: 0.9e-2 to 2.2e-2 over fresh seeds);
// a wrong shard or reduction errs by O(1).
// RUN: sed 's/f32/bf16/g' %dtensor_src_root/examples/tp_mlp.mlir > %t.tp.mlir
// RUN: timeout 120 dtensor-run %t.tp.mlir -n 4 --tolerance 4e-2 | FileCheck %s
// RUN: sed 's/shape = \[4\]/shape = [2]/' %t.tp.mlir > %t.tp2.mlir
// RUN: timeout 120 dtensor-run %t.tp2.mlir -n 2 --tolerance 4e-2 | FileCheck %s
// RUN: dtensor-opt %dtensor_src_root/examples/sequence_parallel_mlp.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json | sed 's/f32/bf16/g' > %t.sp.mlir
// RUN: timeout 120 dtensor-run %t.sp.mlir -n 4 --tolerance 4e-2 | FileCheck %s
// RUN: sed 's/shape = \[4\]/shape = [2]/' %t.sp.mlir > %t.sp2.mlir
// RUN: timeout 120 dtensor-run %t.sp2.mlir -n 2 --tolerance 4e-2 | FileCheck %s
// The per-rank program really communicates bf16.
// RUN: dtensor-opt %t.sp.mlir --dtensor-spmd --dtensor-lower-to-runtime | FileCheck %s --check-prefix=ABI
// ABI-DAG: call @dtensor_rt_all_gather_bf16(
// ABI-DAG: call @dtensor_rt_reduce_scatter_bf16(
// CHECK: max relative error {{.*}} ok
// CHECK: PASS
