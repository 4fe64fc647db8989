// RUN: split-file %s %t
// RUN: dtensor-opt %t/seed.mlir --dtensor-raise-comms | FileCheck %s --check-prefix=RAISE
// RUN: dtensor-opt %t/seed.mlir --pass-pipeline="builtin.module(dtensor-overlap{passes=sink-waits,raise-comms})" | FileCheck %s --check-prefix=BOTH
// RUN: dtensor-opt %t/raise.mlir --dtensor-raise-comms | FileCheck %s
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/budget.mlir --dtensor-raise-comms="report-memory=true" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/budget.mlir --dtensor-raise-comms="memory-budget=-1 report-memory=true" 2>&1 | FileCheck %s --check-prefix=NOBUDGET

//--- seed.mlir

// PyTorch's test_raise_comms and test_sink_waits_raise_comms
// (test_compute_comm_reordering.py) on the per-rank program
// c = relu(a); d = c @ c; ar = all_reduce(a); e = d + ar, with `d + ar` as
// one matmul accumulating into ar (Inductor's addmm). The input is the
// order Inductor's scheduler receives (the collective and its wait where
// they are issued; relu is materialized just before the addmm that reads
// it). The seed checks all_reduce, wait, relu, addmm for raise_comms alone
// (raising does not move waits) and all_reduce, relu, wait, addmm for
// sink_waits followed by raise_comms.

dtensor.mesh @m shape = [4]

#id = affine_map<(i, j) -> (i, j)>

// RAISE-LABEL: func.func @raise_comms
// RAISE:       dtensor.async_start
// RAISE-NEXT:    dtensor.all_reduce %arg0
// RAISE:       dtensor.wait
// RAISE:       arith.maximumf
// RAISE:       linalg.matmul

// BOTH-LABEL: func.func @raise_comms
// BOTH:       dtensor.async_start
// BOTH-NEXT:    dtensor.all_reduce %arg0
// BOTH:       arith.maximumf
// BOTH:       dtensor.wait
// BOTH:       linalg.matmul
func.func @raise_comms(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
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

//--- raise.mlir

// Starts move up to right after the producers of their operands (uses in
// their body included), never above the previous collective, synchronous
// or not, nor above a barrier. Waits stay.

dtensor.mesh @m shape = [4]
dtensor.mesh @m2 shape = [2, 2]

func.func private @opaque(tensor<8xf32>) -> tensor<8xf32>

// CHECK-LABEL: func.func @raise
// CHECK-NEXT:  %[[X:.*]] = arith.mulf %arg0, %arg0
// CHECK-NEXT:  %[[F1:.*]] = dtensor.async_start
// CHECK-NEXT:    dtensor.all_reduce %[[X]] on @m
// CHECK:       %[[F2:.*]] = dtensor.async_start
// CHECK-NEXT:    dtensor.all_reduce %arg1 on @m2 axes = [1]
// CHECK:       arith.addf %arg0, %arg0
// CHECK-NEXT:  arith.subf
// CHECK-NEXT:  dtensor.wait %[[F1]]
// CHECK-NEXT:  dtensor.wait %[[F2]]
// CHECK-NEXT:  %[[O:.*]] = call @opaque
// CHECK-NEXT:  %[[F3:.*]] = dtensor.async_start
// CHECK-NEXT:    dtensor.all_reduce %arg1 on @m2 axes = [0]
// CHECK:       arith.mulf %[[O]], %[[O]]
// CHECK-NEXT:  dtensor.all_reduce %{{.*}} on @m axes = [0] reduce = max
// CHECK-NEXT:  %[[F4:.*]] = dtensor.async_start
// CHECK-NEXT:    dtensor.all_reduce %arg0 on @m axes = [0] reduce = min
// CHECK:       arith.divf
// CHECK-NEXT:  dtensor.wait %[[F3]]
// CHECK-NEXT:  dtensor.wait %[[F4]]
func.func @raise(%a: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %x = arith.mulf %a, %a : tensor<8xf32>
  %y = arith.addf %a, %a : tensor<8xf32>
  %f1 = dtensor.async_start {
    %r = dtensor.all_reduce %x on @m axes = [0] reduce = sum : tensor<8xf32>
    dtensor.yield %r : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %z = arith.subf %y, %a : tensor<8xf32>
  // Its operand is an argument, but it stays after the first collective.
  %f2 = dtensor.async_start {
    %r = dtensor.all_reduce %b on @m2 axes = [1] reduce = sum : tensor<8xf32>
    dtensor.yield %r : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %w1 = dtensor.wait %f1 : !dtensor.future<tensor<8xf32>>
  %w2 = dtensor.wait %f2 : !dtensor.future<tensor<8xf32>>
  %o = func.call @opaque(%w1) : (tensor<8xf32>) -> tensor<8xf32>
  %u = arith.mulf %o, %o : tensor<8xf32>
  // Not above the call, a barrier.
  %f3 = dtensor.async_start {
    %r = dtensor.all_reduce %b on @m2 axes = [0] reduce = sum : tensor<8xf32>
    dtensor.yield %r : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %s = dtensor.all_reduce %u on @m axes = [0] reduce = max : tensor<8xf32>
  %v = arith.divf %s, %u : tensor<8xf32>
  // Not above the synchronous all_reduce.
  %f4 = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m axes = [0] reduce = min : tensor<8xf32>
    dtensor.yield %r : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %w3 = dtensor.wait %f3 : !dtensor.future<tensor<8xf32>>
  %w4 = dtensor.wait %f4 : !dtensor.future<tensor<8xf32>>
  return %z, %w2, %v, %w3, %w4, %w1
      : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

//--- budget.mlir

// The budget: raising the start of the all_gather (1 KiB in, 4 KiB out)
// above the 4 KiB temporary %t keeps its 4 KiB buffer alive next to %t:
// the peak grows from 13312 to 16384 bytes (23%), over the default budget
// of 20%, and the move is refused. Without a budget it is made.

dtensor.mesh @m shape = [4]

// BUDGET:       remark: dtensor-raise-comms: peak live memory 13312 -> 13312 bytes (budget 15974 bytes), 1 move(s) refused
// BUDGET-LABEL: func.func @budget(%arg0
// BUDGET:       linalg.generic
// BUDGET:       dtensor.async_start

// NOBUDGET:       remark: dtensor-raise-comms: peak live memory 13312 -> 16384 bytes (no budget), 0 move(s) refused
// NOBUDGET-LABEL: func.func @budget(%arg0
// NOBUDGET-NEXT:  dtensor.async_start
func.func @budget(%a: tensor<256xf32>, %b: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32>) {
  %e = tensor.empty() : tensor<1024xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%b : tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<1024xf32>
  %u = arith.addf %t, %b : tensor<1024xf32>
  %f = dtensor.async_start {
    %r = dtensor.all_gather %a on @m axes = [0] gather_dim = 0 : tensor<256xf32> -> tensor<1024xf32>
    dtensor.yield %r : tensor<1024xf32>
  } : !dtensor.future<tensor<1024xf32>>
  %w = dtensor.wait %f : !dtensor.future<tensor<1024xf32>>
  return %u, %w : tensor<1024xf32>, tensor<1024xf32>
}
