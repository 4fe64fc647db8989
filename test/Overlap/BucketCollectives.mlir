// RUN: split-file %s %t
// RUN: dtensor-opt %t/merge.mlir --dtensor-bucket-collectives=memory-budget=-1 | FileCheck %s
// RUN: dtensor-opt %t/merge.mlir --dtensor-bucket-collectives="bucket-cap-bytes=60 memory-budget=-1" | FileCheck %s --check-prefix=CAP
// RUN: dtensor-opt %t/merge.mlir --dtensor-set-target="cost-table=%t/no-gain.json" --dtensor-bucket-collectives="memory-budget=-1" | FileCheck %s --check-prefix=NOGAIN
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/budget.mlir --dtensor-bucket-collectives=report-memory=true 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/budget.mlir --dtensor-bucket-collectives="memory-budget=-1 report-memory=true" 2>&1 | FileCheck %s --check-prefix=NOBUDGET

//--- no-gain.json
{"dtensor.all_reduce": 1, "dtensor.all_gather": 1, "dtensor.reduce_scatter": 1, "default": 5}

//--- merge.mlir

dtensor.mesh @m shape = [4]
dtensor.mesh @m2 shape = [2, 2]
dtensor.mesh @one shape = [1]

// Adjacent all_reduces of one group, reduction and element type become one
// coalesced op; the next one joins the bucket too. A different reduction
// starts a new bucket.
// CHECK-LABEL: func.func @all_reduce
// CHECK-NEXT:  %[[R:.*]]:3 = dtensor.all_reduce_coalesced %arg0, %arg1, %arg2 on @m axes = [0] reduce = sum : tensor<8xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:  %[[M:.*]] = dtensor.all_reduce %arg2 on @m axes = [0] reduce = max
// CHECK-NEXT:  return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[M]]
// CAP-LABEL: func.func @all_reduce
// CAP-NEXT:  dtensor.all_reduce_coalesced %arg0, %arg1 on
// CAP-NEXT:  dtensor.all_reduce %arg2 on @m axes = [0] reduce = sum
// CAP-NEXT:  dtensor.all_reduce %arg2 on @m axes = [0] reduce = max
// NOGAIN-LABEL: func.func @all_reduce
// NOGAIN-NOT:   coalesced
// NOGAIN:       return
func.func @all_reduce(%a: tensor<8xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>)
    -> (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %r1 = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<8xf32>
  %r2 = dtensor.all_reduce %b on @m axes = [0] reduce = sum : tensor<4xf32>
  %r3 = dtensor.all_reduce %c on @m axes = [0] reduce = sum : tensor<4xf32>
  %r4 = dtensor.all_reduce %c on @m axes = [0] reduce = max : tensor<4xf32>
  return %r1, %r2, %r3, %r4 : tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Gathers and scatters keep a dim per tensor.
// CHECK-LABEL: func.func @gather_scatter
// CHECK-NEXT:  dtensor.all_gather_coalesced %arg0, %arg1 on @m axes = [0] gather_dims = [0, 1] : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<8x4xf32>, tensor<4x8xf32>
// CHECK-NEXT:  dtensor.reduce_scatter_coalesced %arg2, %arg3 on @m axes = [0] scatter_dims = [0, 1] reduce = avg : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<2x4xf32>, tensor<4x2xf32>
// CHECK-NEXT:  return
func.func @gather_scatter(%a: tensor<2x4xf32>, %b: tensor<4x2xf32>, %c: tensor<8x4xf32>, %d: tensor<4x8xf32>)
    -> (tensor<8x4xf32>, tensor<4x8xf32>, tensor<2x4xf32>, tensor<4x2xf32>) {
  %g1 = dtensor.all_gather %a on @m axes = [0] gather_dim = 0 : tensor<2x4xf32> -> tensor<8x4xf32>
  %g2 = dtensor.all_gather %b on @m axes = [0] gather_dim = 1 : tensor<4x2xf32> -> tensor<4x8xf32>
  %s1 = dtensor.reduce_scatter %c on @m axes = [0] scatter_dim = 0 reduce = avg : tensor<8x4xf32> -> tensor<2x4xf32>
  %s2 = dtensor.reduce_scatter %d on @m axes = [0] scatter_dim = 1 reduce = avg : tensor<4x8xf32> -> tensor<4x2xf32>
  return %g1, %g2, %s1, %s2 : tensor<8x4xf32>, tensor<4x8xf32>, tensor<2x4xf32>, tensor<4x2xf32>
}

// Only neighbours in issue order of one group and element type merge.
// CHECK-LABEL: func.func @not_mergeable
// CHECK-NOT:   coalesced
// CHECK:       return
func.func @not_mergeable(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<4xi32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) {
  %r1 = dtensor.all_reduce %a on @m2 axes = [0] reduce = sum : tensor<4xf32>
  %r2 = dtensor.all_reduce %b on @m2 axes = [1] reduce = sum : tensor<4xf32>
  %r3 = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<4xf32>
  %p = dtensor.permute %a on @m axes = [0] perm = [1, 2, 3, 0] : tensor<4xf32>
  %r4 = dtensor.all_reduce %b on @m axes = [0] reduce = sum : tensor<4xf32>
  %r5 = dtensor.all_reduce %i on @m axes = [0] reduce = sum : tensor<4xi32>
  // One rank: both cost nothing, one launch is not faster.
  %o1 = dtensor.all_reduce %a on @one axes = [0] reduce = sum : tensor<4xf32>
  %o2 = dtensor.all_reduce %b on @one axes = [0] reduce = sum : tensor<4xf32>
  return %r1, %r2, %r3, %r4, %r5, %o1, %o2
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xf32>
}

// The second operand is computed in between: the bucket goes where the
// second collective was, as nothing in between uses the first's result.
// CHECK-LABEL: func.func @at_second
// CHECK-NEXT:  %[[Y:.*]] = arith.mulf %arg1, %arg1
// CHECK-NEXT:  %[[R:.*]]:2 = dtensor.all_reduce_coalesced %arg0, %[[Y]]
// CHECK-NEXT:  arith.addf %[[R]]#0, %[[R]]#1
func.func @at_second(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r1 = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<4xf32>
  %y = arith.mulf %b, %b : tensor<4xf32>
  %r2 = dtensor.all_reduce %y on @m axes = [0] reduce = sum : tensor<4xf32>
  %z = arith.addf %r1, %r2 : tensor<4xf32>
  return %z : tensor<4xf32>
}

// The second depends on the first: no place for a bucket.
// CHECK-LABEL: func.func @dependent
// CHECK-NOT:   coalesced
// CHECK:       return
func.func @dependent(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r1 = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<4xf32>
  %y = arith.mulf %r1, %r1 : tensor<4xf32>
  %r2 = dtensor.all_reduce %y on @m axes = [0] reduce = sum : tensor<4xf32>
  return %r2 : tensor<4xf32>
}

// Async collectives merge into one start with a future per tensor; the
// waits stay where they are. Sync and async ones do not merge.
// CHECK-LABEL: func.func @async
// CHECK-NEXT:  %[[F:.*]]:2 = dtensor.async_start {
// CHECK-NEXT:    %[[R:.*]]:2 = dtensor.all_reduce_coalesced %arg0, %arg1
// CHECK-NEXT:    dtensor.yield %[[R]]#0, %[[R]]#1
// CHECK-NEXT:  } : !dtensor.future<tensor<4xf32>>, !dtensor.future<tensor<8xf32>>
// CHECK-NEXT:  arith.mulf
// CHECK-NEXT:  dtensor.wait %[[F]]#1
// CHECK-NEXT:  dtensor.wait %[[F]]#0
// CHECK-NEXT:  dtensor.all_reduce %arg0
// CHECK-NEXT:  return
func.func @async(%a: tensor<4xf32>, %b: tensor<8xf32>)
    -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %f1 = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %f2 = dtensor.async_start {
    %r = dtensor.all_reduce %b on @m axes = [0] reduce = sum : tensor<8xf32>
    dtensor.yield %r : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %x = arith.mulf %a, %a : tensor<4xf32>
  %w2 = dtensor.wait %f2 : !dtensor.future<tensor<8xf32>>
  %w1 = dtensor.wait %f1 : !dtensor.future<tensor<4xf32>>
  %s = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<4xf32>
  return %w1, %w2, %x, %s : tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>
}

//--- budget.mlir

// The bucket can only go where the second reduce_scatter is: the 4 KiB
// input of the first stays alive across the computation of the second's
// input, and the peak grows from 9280 to 12352 bytes (33%), over the
// default budget of 20%: the merge is refused. Without a budget it is
// made.

dtensor.mesh @m shape = [4]

// BUDGET: remark: dtensor-bucket-collectives: peak live memory 9280 -> 9280 bytes (budget 11136 bytes), 1 move(s) refused
// BUDGET-NOT: coalesced

// NOBUDGET: remark: dtensor-bucket-collectives: peak live memory 9280 -> 12352 bytes (no budget), 0 move(s) refused
// NOBUDGET: dtensor.reduce_scatter_coalesced
func.func @budget(%a: tensor<1024xf32>, %v: tensor<16xf32>) -> (tensor<256xf32>, tensor<256xf32>) {
  %x = arith.mulf %a, %a : tensor<1024xf32>
  %s1 = dtensor.reduce_scatter %x on @m axes = [0] scatter_dim = 0 reduce = sum
      : tensor<1024xf32> -> tensor<256xf32>
  %e = tensor.empty() : tensor<1024xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i floordiv 64)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%v : tensor<16xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  } -> tensor<1024xf32>
  %s2 = dtensor.reduce_scatter %y on @m axes = [0] scatter_dim = 0 reduce = sum
      : tensor<1024xf32> -> tensor<256xf32>
  return %s1, %s2 : tensor<256xf32>, tensor<256xf32>
}
