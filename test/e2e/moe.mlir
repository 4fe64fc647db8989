// REQUIRES: cpu-target
// Token routing with split sizes known only at run time, on CPU ranks over
// MPI, compared with the unsharded program on fresh random inputs:
// - examples/moe.mlir, the MoE layer (top-2 router, 4 experts), on 4 ranks
//   (one expert each) and on 2 (two each);
// - the routed matmul alone, whose only communication is the dispatch and
//   combine (all_to_all_v) and the exchange of the counts (all_to_all):
//   top-2 with i32 ids, top-1 with 14 tokens (uneven shards over 4 ranks),
//   ids outside [0, E) (taken modulo E), and a hidden-dim split with
//   replicated experts (Partial result, all_reduce). dtensor-run feeds random
//   integers as ids, so every rank sends uneven, data-dependent counts to
//   every other.
// RUN: timeout 120 dtensor-run %dtensor_src_root/examples/moe.mlir -n 4 | FileCheck %s
// RUN: sed 's/shape = \[4\]/shape = [2]/' %dtensor_src_root/examples/moe.mlir > %t.moe2.mlir
// RUN: timeout 120 dtensor-run %t.moe2.mlir -n 2 | FileCheck %s
// Scheduled for overlap: the exchanges become asynchronous (start_ forms).
// RUN: timeout 120 dtensor-run %dtensor_src_root/examples/moe.mlir -n 4 --overlap=default | FileCheck %s
// RUN: sed 's/NRANKS/4/g' %s > %t.4.mlir
// RUN: sed 's/NRANKS/2/g' %s > %t.2.mlir
// RUN: for f in top2_i32 uneven_tokens hidden_split; do \
// RUN:   timeout 120 dtensor-run %t.4.mlir -n 4 --entry $f | FileCheck %s || exit 1; \
// RUN:   timeout 120 dtensor-run %t.2.mlir -n 2 --entry $f | FileCheck %s || exit 1; \
// RUN: done
// CHECK: max relative error {{.*}} ok
// CHECK: PASS

// The comm report of the MoE layer: the counts (one all_to_all), tokens and
// expert ids out, results back (three all_to_all_v, their row counts
// dynamic: *), nothing else.
// RUN: dtensor-opt %dtensor_src_root/examples/moe.mlir --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=REPORT
// REPORT-LABEL: comm report for @moe
// REPORT-NOT: all_gather
// REPORT-NOT: all_reduce
// REPORT: all_to_all 1 0 32
// REPORT-NEXT: all_to_all_v 3 0 {{[0-9]+}}*
// REPORT-NEXT: total 4 0 {{[0-9]+}}*
// RUN: dtensor-opt %t.4.mlir --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=ALONE
// ALONE-LABEL: comm report for @top2_i32
// ALONE-NEXT: {{.*}}count
// ALONE-NEXT: all_to_all 1 0 32
// ALONE-NEXT: all_to_all_v 3 0 {{[0-9]+}}*
// ALONE-NEXT: total 4 0 {{[0-9]+}}*

dtensor.mesh @m shape = [NRANKS]

func.func private @top2_i32(
    %x: tensor<8x6xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>},
    %ids: tensor<8x2xi32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>},
    %w: tensor<4x6x5xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<8x2x5xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  %y = dtensor.routed_matmul %x, %ids, %w
      : tensor<8x6xf32>, tensor<8x2xi32>, tensor<4x6x5xf32> -> tensor<8x2x5xf32>
  return %y : tensor<8x2x5xf32>
}

func.func private @uneven_tokens(
    %x: tensor<14x4xf64> {dtensor.layout = #dtensor.layout<@m, [S(0)]>},
    %ids: tensor<14x1xi64> {dtensor.layout = #dtensor.layout<@m, [S(0)]>},
    %w: tensor<4x4x3xf64> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<14x1x3xf64> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  %y = dtensor.routed_matmul %x, %ids, %w
      : tensor<14x4xf64>, tensor<14x1xi64>, tensor<4x4x3xf64> -> tensor<14x1x3xf64>
  return %y : tensor<14x1x3xf64>
}

// Experts replicated, the hidden dim sharded: a partial routed matmul on
// every rank, then an all_reduce (no routing).
func.func private @hidden_split(
    %x: tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>},
    %ids: tensor<6x2xi64> {dtensor.layout = #dtensor.layout<@m, [R]>},
    %w: tensor<3x8x4xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<6x2x4xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %y = dtensor.routed_matmul %x, %ids, %w
      : tensor<6x8xf32>, tensor<6x2xi64>, tensor<3x8x4xf32> -> tensor<6x2x4xf32>
  return %y : tensor<6x2x4xf32>
}
