// REQUIRES: cpu-target
// Every reduce kind end to end (issue 15): global programs whose reductions
// (linalg.reduce and linalg.generic with the matching combiner) over a
// sharded dim leave P(sum|avg|product|min|max) values, all-reduced to R by
// collectives of f32, bf16, i32 and i64, checked against the unsharded
// program on 2 and 4 CPU ranks with fresh random inputs.
// RUN: sed 's/NRANKS/2/g' %s > %t.2.mlir
// RUN: sed 's/NRANKS/4/g' %s > %t.4.mlir
// RUN: dtensor-opt %t.4.mlir --dtensor-spmd | FileCheck %s --check-prefix=IR
// RUN: for f in sum_i32 avg_f32 product_f32 min_i64 max_bf16; do \
// RUN:   timeout 120 dtensor-run %t.2.mlir -n 2 --entry $f | FileCheck %s || exit 1; \
// RUN:   timeout 120 dtensor-run %t.4.mlir -n 4 --entry $f | FileCheck %s || exit 1; \
// RUN: done
// CHECK: max relative error {{.*}} ok
// CHECK: PASS

dtensor.mesh @m shape = [NRANKS]

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// IR-LABEL: func.func private @sum_i32
// IR: dtensor.all_reduce {{.*}} reduce = sum{{.*}} : tensor<32xi32>
func.func private @sum_i32(%x: tensor<32x64xi32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<32xi32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %init = arith.constant dense<0> : tensor<32xi32>
  %r = linalg.reduce ins(%x : tensor<32x64xi32>) outs(%init : tensor<32xi32>) dimensions = [1]
    (%a: i32, %b: i32) {
      %s = arith.addi %a, %b : i32
      linalg.yield %s : i32
    }
  %p = dtensor.annotate %r layout <@m, [P(sum)]> : tensor<32xi32>
  return %p : tensor<32xi32>
}

// The row mean: a sum reduction of x / 64 (P(sum)), asked for as P(avg) at
// a module boundary (each rank rescales its part), all-reduced by avg.
// IR-LABEL: func.func private @avg_f32
// IR: dtensor.all_reduce {{.*}} reduce = avg{{.*}} : tensor<32xf32>
func.func private @avg_f32(%x: tensor<32x64xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<32xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %init = arith.constant dense<0.0> : tensor<32xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<32x64xf32>) outs(%init : tensor<32xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %n = arith.constant 64.0 : f32
    %q = arith.divf %a, %n : f32
    %s = arith.addf %q, %acc : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  %p = dtensor.annotate %r layout <@m, [P(avg)]> {dtensor.boundary} : tensor<32xf32>
  return %p : tensor<32xf32>
}

// IR-LABEL: func.func private @product_f32
// IR: dtensor.all_reduce {{.*}} reduce = product{{.*}} : tensor<32xf32>
func.func private @product_f32(%x: tensor<32x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<32xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %init = arith.constant dense<1.0> : tensor<32xf32>
  %r = linalg.reduce ins(%x : tensor<32x8xf32>) outs(%init : tensor<32xf32>) dimensions = [1]
    (%a: f32, %b: f32) {
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    }
  %p = dtensor.annotate %r layout <@m, [P(product)]> : tensor<32xf32>
  return %p : tensor<32xf32>
}

// IR-LABEL: func.func private @min_i64
// IR: dtensor.all_reduce {{.*}} reduce = min{{.*}} : tensor<32xi64>
func.func private @min_i64(%x: tensor<32x64xi64> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<32xi64> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %init = arith.constant dense<9223372036854775807> : tensor<32xi64>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<32x64xi64>) outs(%init : tensor<32xi64>) {
  ^bb0(%a: i64, %acc: i64):
    %m = arith.minsi %a, %acc : i64
    linalg.yield %m : i64
  } -> tensor<32xi64>
  %p = dtensor.annotate %r layout <@m, [P(min)]> : tensor<32xi64>
  return %p : tensor<32xi64>
}

// IR-LABEL: func.func private @max_bf16
// IR: dtensor.all_reduce {{.*}} reduce = max{{.*}} : tensor<32xbf16>
func.func private @max_bf16(%x: tensor<32x64xbf16> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<32xbf16> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %init = arith.constant dense<-3.0e38> : tensor<32xbf16>
  %r = linalg.reduce ins(%x : tensor<32x64xbf16>) outs(%init : tensor<32xbf16>) dimensions = [1]
    (%a: bf16, %b: bf16) {
      %m = arith.maximumf %a, %b : bf16
      linalg.yield %m : bf16
    }
  %p = dtensor.annotate %r layout <@m, [P(max)]> : tensor<32xbf16>
  return %p : tensor<32xbf16>
}
