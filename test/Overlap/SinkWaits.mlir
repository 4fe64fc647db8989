// RUN: dtensor-opt %s --dtensor-sink-waits --split-input-file | FileCheck %s
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %s --dtensor-sink-waits="report-memory=true" --split-input-file 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %s --dtensor-sink-waits="memory-budget=-1 report-memory=true" --split-input-file 2>&1 | FileCheck %s --check-prefix=NOBUDGET

// PyTorch's test_sink_waits (test_compute_comm_reordering.py) on the
// per-rank program: ar = all_reduce(a); c = relu(a); d = c @ c; e = d + ar,
// with `d + ar` as one matmul accumulating into ar (Inductor's addmm). The
// input is the order Inductor's scheduler receives: the wait right after
// the collective. The seed checks all_reduce, relu, wait in this order.

dtensor.mesh @m shape = [4]

#id = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @sink_waits
// CHECK:       dtensor.async_start
// CHECK-NEXT:    dtensor.all_reduce %arg0
// CHECK:       arith.maximumf
// CHECK:       dtensor.wait
// CHECK-NEXT:  linalg.matmul
// CHECK-NEXT:  return
func.func @sink_waits(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<4x4xf32>
    dtensor.yield %r : tensor<4x4xf32>
  } : !dtensor.future<tensor<4x4xf32>>
  %ar = dtensor.wait %f : !dtensor.future<tensor<4x4xf32>>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %d = linalg.matmul ins(%c, %c : tensor<4x4xf32>, tensor<4x4xf32>)
                     outs(%ar : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %d : tensor<4x4xf32>
}

// -----

// Several waits: each goes right before its own first consumer; waits
// before the same consumer keep their order; a wait whose result is only
// used after a barrier (the call) stops before the barrier, and so does
// the wait of an unused result. Starts do not move.

dtensor.mesh @m shape = [4]

func.func private @opaque(tensor<8xf32>) -> tensor<8xf32>

// CHECK-LABEL: func.func @several
// CHECK:       %[[F1:.*]] = dtensor.async_start
// CHECK:       %[[F2:.*]] = dtensor.async_start
// CHECK:       %[[F3:.*]] = dtensor.async_start
// CHECK:       %[[F4:.*]] = dtensor.async_start
// CHECK:       %[[X:.*]] = arith.mulf %arg1, %arg1
// CHECK-NEXT:  %[[W2:.*]] = dtensor.wait %[[F2]]
// CHECK-NEXT:  %[[W1:.*]] = dtensor.wait %[[F1]]
// CHECK-NEXT:  arith.addf %[[W1]], %[[W2]]
// CHECK-NEXT:  arith.mulf
// CHECK-NEXT:  %[[W3:.*]] = dtensor.wait %[[F3]]
// CHECK-NEXT:  dtensor.wait %[[F4]]
// CHECK-NEXT:  call @opaque
// CHECK-NEXT:  arith.subf
// CHECK-NEXT:  arith.addf %{{.*}}, %[[W3]]
// CHECK-NEXT:  return
func.func @several(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %f1 = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<8xf32>
    dtensor.yield %r : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %f2 = dtensor.async_start {
    %r = dtensor.all_reduce %b on @m axes = [0] reduce = sum : tensor<8xf32>
    dtensor.yield %r : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %w2 = dtensor.wait %f2 : !dtensor.future<tensor<8xf32>>
  %w1 = dtensor.wait %f1 : !dtensor.future<tensor<8xf32>>
  %f3 = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m axes = [0] reduce = max : tensor<8xf32>
    dtensor.yield %r : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %w3 = dtensor.wait %f3 : !dtensor.future<tensor<8xf32>>
  %f4 = dtensor.async_start {
    %r = dtensor.all_reduce %b on @m axes = [0] reduce = max : tensor<8xf32>
    dtensor.yield %r : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %w4 = dtensor.wait %f4 : !dtensor.future<tensor<8xf32>>
  %x = arith.mulf %b, %b : tensor<8xf32>
  %s = arith.addf %w1, %w2 : tensor<8xf32>
  %t = arith.mulf %s, %x : tensor<8xf32>
  %o = func.call @opaque(%t) : (tensor<8xf32>) -> tensor<8xf32>
  %u = arith.subf %o, %x : tensor<8xf32>
  %v = arith.addf %u, %w3 : tensor<8xf32>
  return %v : tensor<8xf32>
}

// -----

// The budget. The wait of the 4 KiB all_reduce has no consumer: sinking it
// to the end keeps the collective's buffer alive next to the temporaries
// %e and %t, and the peak grows from 12288 to 16384 bytes (33%). The
// default budget (20%) refuses the move; without a budget it is made.

dtensor.mesh @m shape = [4]

// CHECK-LABEL: func.func @budget
// CHECK:       dtensor.async_start
// CHECK:       } : !dtensor.future
// CHECK-NEXT:  dtensor.wait
// CHECK-NEXT:  tensor.empty

// BUDGET:       remark: dtensor-sink-waits: peak live memory 12288 -> 12288 bytes (budget 14745 bytes), 1 move(s) refused
// BUDGET-LABEL: func.func @budget(%arg0
// BUDGET:       } : !dtensor.future
// BUDGET-NEXT:  dtensor.wait

// NOBUDGET:       remark: dtensor-sink-waits: peak live memory 12288 -> 16384 bytes (no budget), 0 move(s) refused
// NOBUDGET-LABEL: func.func @budget(%arg0
// NOBUDGET:       arith.addf
// NOBUDGET-NEXT:  dtensor.wait
// NOBUDGET-NEXT:  return
func.func @budget(%a: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<1024xf32>
    dtensor.yield %r : tensor<1024xf32>
  } : !dtensor.future<tensor<1024xf32>>
  %w = dtensor.wait %f : !dtensor.future<tensor<1024xf32>>
  %e = tensor.empty() : tensor<1024xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%b : tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<1024xf32>
  %u = arith.addf %t, %b : tensor<1024xf32>
  return %u : tensor<1024xf32>
}
