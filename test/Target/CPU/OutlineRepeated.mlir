// Repeated layers outlined into one function called once per layer.
//
// RUN: split-file --leading-lines %s %t
// RUN: dtensor-opt %t/inflight.mlir --dtensor-outline-repeated=min-ops=4 | FileCheck %t/inflight.mlir
// RUN: dtensor-opt %t/inflight.mlir --dtensor-outline-repeated='min-ops=4 min-repeats=5' | FileCheck %t/inflight.mlir --check-prefix=FEW
// RUN: dtensor-opt %t/inflight.mlir --dtensor-outline-repeated | FileCheck %t/inflight.mlir --check-prefix=SHORT
// RUN: dtensor-opt %t/differ.mlir --dtensor-outline-repeated=min-ops=4 | FileCheck %t/differ.mlir
// RUN: dtensor-opt %t/annot.mlir --dtensor-outline-repeated=min-ops=4 | FileCheck %t/annot.mlir
// RUN: dtensor-opt %t/futures.mlir --dtensor-outline-repeated=min-ops=2 | FileCheck %t/futures.mlir
// RUN: dtensor-opt %t/single.mlir --dtensor-outline-repeated | FileCheck %t/single.mlir

//--- inflight.mlir
// Each layer waits for the weight its predecessor started fetching, starts
// fetching the next layer's, and computes while that runs: the collective
// of layer i + 1 overlaps the compute of layer i. The cut between pieces
// crosses the fetch in flight; its handle leaves one call and enters the
// next, and the ops keep their order.
func.func private @start(tensor<8xf32>) -> i64
func.func private @wait(i64) -> tensor<8xf32>
func.func @layers(%x0: tensor<8xf32>, %w0: tensor<8xf32>, %w1: tensor<8xf32>,
    %w2: tensor<8xf32>, %w3: tensor<8xf32>, %w4: tensor<8xf32>) -> tensor<8xf32> {
  %h0 = func.call @start(%w0) : (tensor<8xf32>) -> i64
  %g0 = func.call @wait(%h0) : (i64) -> tensor<8xf32>
  %h1 = func.call @start(%w1) : (tensor<8xf32>) -> i64
  %e0 = tensor.empty() : tensor<8xf32>
  %m0 = linalg.mul ins(%x0, %g0 : tensor<8xf32>, tensor<8xf32>) outs(%e0 : tensor<8xf32>) -> tensor<8xf32>
  %x1 = linalg.add ins(%m0, %x0 : tensor<8xf32>, tensor<8xf32>) outs(%e0 : tensor<8xf32>) -> tensor<8xf32>
  %g1 = func.call @wait(%h1) : (i64) -> tensor<8xf32>
  %h2 = func.call @start(%w2) : (tensor<8xf32>) -> i64
  %e1 = tensor.empty() : tensor<8xf32>
  %m1 = linalg.mul ins(%x1, %g1 : tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %x2 = linalg.add ins(%m1, %x1 : tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %g2 = func.call @wait(%h2) : (i64) -> tensor<8xf32>
  %h3 = func.call @start(%w3) : (tensor<8xf32>) -> i64
  %e2 = tensor.empty() : tensor<8xf32>
  %m2 = linalg.mul ins(%x2, %g2 : tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) -> tensor<8xf32>
  %x3 = linalg.add ins(%m2, %x2 : tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) -> tensor<8xf32>
  %g3 = func.call @wait(%h3) : (i64) -> tensor<8xf32>
  %h4 = func.call @start(%w4) : (tensor<8xf32>) -> i64
  %e3 = tensor.empty() : tensor<8xf32>
  %m3 = linalg.mul ins(%x3, %g3 : tensor<8xf32>, tensor<8xf32>) outs(%e3 : tensor<8xf32>) -> tensor<8xf32>
  %x4 = linalg.add ins(%m3, %x3 : tensor<8xf32>, tensor<8xf32>) outs(%e3 : tensor<8xf32>) -> tensor<8xf32>
  %g4 = func.call @wait(%h4) : (i64) -> tensor<8xf32>
  %y = linalg.sub ins(%x4, %g4 : tensor<8xf32>, tensor<8xf32>) outs(%e3 : tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// CHECK-LABEL: func.func private @layers_repeated(
// CHECK-SAME: %[[H:.*]]: i64, %[[W:.*]]: tensor<8xf32>, %[[X:.*]]: tensor<8xf32>) -> (i64, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %[[G:.*]] = call @wait(%[[H]])
// CHECK-NEXT: %[[NEXT:.*]] = call @start(%[[W]])
// CHECK-NEXT: %[[E:.*]] = tensor.empty()
// CHECK-NEXT: %[[M:.*]] = linalg.mul ins(%[[X]], %[[G]] :
// CHECK-NEXT: %[[A:.*]] = linalg.add ins(%[[M]], %[[X]] :
// CHECK-NEXT: return %[[NEXT]], %[[E]], %[[A]]
// CHECK-LABEL: func.func @layers(
// CHECK-SAME: %[[X0:[^:]*]]: tensor<8xf32>, %[[W0:[^:]*]]: tensor<8xf32>, %[[W1:[^:]*]]: tensor<8xf32>, %[[W2:[^:]*]]: tensor<8xf32>, %[[W3:[^:]*]]: tensor<8xf32>, %[[W4:[^:]*]]: tensor<8xf32>)
// CHECK-NEXT: %[[H0:.*]] = call @start(%[[W0]])
// CHECK-NEXT: %[[L0:.*]]:3 = call @layers_repeated(%[[H0]], %[[W1]], %[[X0]])
// CHECK-NEXT: %[[L1:.*]]:3 = call @layers_repeated(%[[L0]]#0, %[[W2]], %[[L0]]#2)
// CHECK-NEXT: %[[L2:.*]]:3 = call @layers_repeated(%[[L1]]#0, %[[W3]], %[[L1]]#2)
// CHECK-NEXT: %[[L3:.*]]:3 = call @layers_repeated(%[[L2]]#0, %[[W4]], %[[L2]]#2)
// CHECK-NEXT: %[[G4:.*]] = call @wait(%[[L3]]#0)
// CHECK-NEXT: linalg.sub ins(%[[L3]]#2, %[[G4]] : {{.*}}) outs(%[[L3]]#1 :

// Four pieces are fewer than five; pieces of 5 ops are shorter than 16
// (only the repeated linalg ops become calls then).
// FEW-NOT: @layers_repeated
// SHORT-LABEL: func.func @layers(
// SHORT-COUNT-5: call @start(

//--- differ.mlir
// Layer 2 subtracts: the run of identical layers ends there and layer 2
// stays in the body (its linalg ops, repeated elsewhere, become calls of
// one function per kind).
func.func private @start(tensor<8xf32>) -> i64
func.func private @wait(i64) -> tensor<8xf32>
func.func @layers(%x0: tensor<8xf32>, %w0: tensor<8xf32>, %w1: tensor<8xf32>,
    %w2: tensor<8xf32>, %w3: tensor<8xf32>, %w4: tensor<8xf32>) -> tensor<8xf32> {
  %h0 = func.call @start(%w0) : (tensor<8xf32>) -> i64
  %g0 = func.call @wait(%h0) : (i64) -> tensor<8xf32>
  %h1 = func.call @start(%w1) : (tensor<8xf32>) -> i64
  %e0 = tensor.empty() : tensor<8xf32>
  %m0 = linalg.mul ins(%x0, %g0 : tensor<8xf32>, tensor<8xf32>) outs(%e0 : tensor<8xf32>) -> tensor<8xf32>
  %x1 = linalg.add ins(%m0, %x0 : tensor<8xf32>, tensor<8xf32>) outs(%e0 : tensor<8xf32>) -> tensor<8xf32>
  %g1 = func.call @wait(%h1) : (i64) -> tensor<8xf32>
  %h2 = func.call @start(%w2) : (tensor<8xf32>) -> i64
  %e1 = tensor.empty() : tensor<8xf32>
  %m1 = linalg.mul ins(%x1, %g1 : tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %x2 = linalg.add ins(%m1, %x1 : tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %g2 = func.call @wait(%h2) : (i64) -> tensor<8xf32>
  %h3 = func.call @start(%w3) : (tensor<8xf32>) -> i64
  %e2 = tensor.empty() : tensor<8xf32>
  %m2 = linalg.mul ins(%x2, %g2 : tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) -> tensor<8xf32>
  %x3 = linalg.sub ins(%m2, %x2 : tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) -> tensor<8xf32>
  %g3 = func.call @wait(%h3) : (i64) -> tensor<8xf32>
  %h4 = func.call @start(%w4) : (tensor<8xf32>) -> i64
  %e3 = tensor.empty() : tensor<8xf32>
  %m3 = linalg.mul ins(%x3, %g3 : tensor<8xf32>, tensor<8xf32>) outs(%e3 : tensor<8xf32>) -> tensor<8xf32>
  %x4 = linalg.add ins(%m3, %x3 : tensor<8xf32>, tensor<8xf32>) outs(%e3 : tensor<8xf32>) -> tensor<8xf32>
  %g4 = func.call @wait(%h4) : (i64) -> tensor<8xf32>
  %y = linalg.sub ins(%x4, %g4 : tensor<8xf32>, tensor<8xf32>) outs(%e3 : tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// CHECK-LABEL: func.func private @layers_repeated(
// CHECK: linalg.add
// CHECK-LABEL: func.func @layers(
// CHECK-COUNT-2: call @layers_repeated(
// CHECK-NOT: call @layers_repeated(
// CHECK: call @wait
// CHECK: call @start
// CHECK: call @layers_repeated_{{[0-9]+}}(
// CHECK: call @layers_repeated_{{[0-9]+}}(

//--- annot.mlir
// Layers that differ only in their dtensor.module tags are identical; the
// function carries no tag (it stands for every layer). The constant is
// cloned into the function rather than passed.
func.func private @start(tensor<8xf32>) -> i64
func.func private @wait(i64) -> tensor<8xf32>
func.func @layers(%x0: tensor<8xf32>, %w0: tensor<8xf32>, %w1: tensor<8xf32>,
    %w2: tensor<8xf32>, %w3: tensor<8xf32>, %w4: tensor<8xf32>) -> tensor<8xf32> {
  %c = arith.constant dense<2.0> : tensor<8xf32>
  %h0 = func.call @start(%w0) : (tensor<8xf32>) -> i64
  %g0 = func.call @wait(%h0) : (i64) -> tensor<8xf32>
  %h1 = func.call @start(%w1) : (tensor<8xf32>) -> i64
  %e0 = tensor.empty() : tensor<8xf32>
  %m0 = linalg.mul {dtensor.module = "layers.0"} ins(%x0, %g0 : tensor<8xf32>, tensor<8xf32>) outs(%e0 : tensor<8xf32>) -> tensor<8xf32>
  %x1 = linalg.add {dtensor.module = "layers.0"} ins(%m0, %c : tensor<8xf32>, tensor<8xf32>) outs(%e0 : tensor<8xf32>) -> tensor<8xf32>
  %g1 = func.call @wait(%h1) : (i64) -> tensor<8xf32>
  %h2 = func.call @start(%w2) : (tensor<8xf32>) -> i64
  %e1 = tensor.empty() : tensor<8xf32>
  %m1 = linalg.mul {dtensor.module = "layers.1"} ins(%x1, %g1 : tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %x2 = linalg.add {dtensor.module = "layers.1"} ins(%m1, %c : tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %g2 = func.call @wait(%h2) : (i64) -> tensor<8xf32>
  %h3 = func.call @start(%w3) : (tensor<8xf32>) -> i64
  %e2 = tensor.empty() : tensor<8xf32>
  %m2 = linalg.mul {dtensor.module = "layers.2"} ins(%x2, %g2 : tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) -> tensor<8xf32>
  %x3 = linalg.add {dtensor.module = "layers.2"} ins(%m2, %c : tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) -> tensor<8xf32>
  %g3 = func.call @wait(%h3) : (i64) -> tensor<8xf32>
  %h4 = func.call @start(%w4) : (tensor<8xf32>) -> i64
  %e3 = tensor.empty() : tensor<8xf32>
  %m3 = linalg.mul {dtensor.module = "layers.3"} ins(%x3, %g3 : tensor<8xf32>, tensor<8xf32>) outs(%e3 : tensor<8xf32>) -> tensor<8xf32>
  %x4 = linalg.add {dtensor.module = "layers.3"} ins(%m3, %c : tensor<8xf32>, tensor<8xf32>) outs(%e3 : tensor<8xf32>) -> tensor<8xf32>
  %g4 = func.call @wait(%h4) : (i64) -> tensor<8xf32>
  %y = linalg.sub ins(%x4, %g4 : tensor<8xf32>, tensor<8xf32>) outs(%e3 : tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// CHECK-LABEL: func.func private @layers_repeated(
// CHECK-SAME: %{{.*}}: i64, %{{.*}}: tensor<8xf32>, %{{.*}}: tensor<8xf32>) ->
// CHECK-NOT: dtensor.module
// CHECK: arith.constant dense<2.000000e+00>
// CHECK-NOT: dtensor.module
// CHECK: return
// CHECK-LABEL: func.func @layers(
// CHECK-COUNT-4: call @layers_repeated(

//--- futures.mlir
// A future is consumed where it is made: a cut that a future in flight
// crosses is not taken, and here every cut is crossed by one.
dtensor.mesh @m shape = [2]
func.func @futures(%x: tensor<4xf32>) -> tensor<4xf32> {
  %f0 = dtensor.async_start {
    %r = dtensor.all_reduce %x on @m axes = [0] reduce = sum : tensor<4xf32> -> tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %e = tensor.empty() : tensor<4xf32>
  %a0 = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %f1 = dtensor.async_start {
    %r = dtensor.all_reduce %a0 on @m axes = [0] reduce = sum : tensor<4xf32> -> tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %r0 = dtensor.wait %f0 : !dtensor.future<tensor<4xf32>>
  %a1 = linalg.add ins(%r0, %r0 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %f2 = dtensor.async_start {
    %r = dtensor.all_reduce %a1 on @m axes = [0] reduce = sum : tensor<4xf32> -> tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %r1 = dtensor.wait %f1 : !dtensor.future<tensor<4xf32>>
  %a2 = linalg.add ins(%r1, %r1 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %f3 = dtensor.async_start {
    %r = dtensor.all_reduce %a2 on @m axes = [0] reduce = sum : tensor<4xf32> -> tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %r2 = dtensor.wait %f2 : !dtensor.future<tensor<4xf32>>
  %a3 = linalg.add ins(%r2, %r2 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %f4 = dtensor.async_start {
    %r = dtensor.all_reduce %a3 on @m axes = [0] reduce = sum : tensor<4xf32> -> tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %r3 = dtensor.wait %f3 : !dtensor.future<tensor<4xf32>>
  %a4 = linalg.add ins(%r3, %r3 : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r4 = dtensor.wait %f4 : !dtensor.future<tensor<4xf32>>
  return %r4 : tensor<4xf32>
}
// No function takes or returns a future; the collectives stay in the body.
// CHECK-NOT: !dtensor.future<tensor<4xf32>>) ->
// CHECK-NOT: -> !dtensor.future
// CHECK-LABEL: func.func @futures(
// CHECK-COUNT-5: dtensor.async_start

//--- single.mlir
// Ops with loop bodies that repeat outside any run: one function per kind,
// the zero init cloned in.
func.func @single(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %e = tensor.empty() : tensor<8x4xf32>
  %t0 = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, 0]
  %s = linalg.add ins(%t0, %c : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %t1 = linalg.transpose ins(%b : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, 0]
  return %t0, %s, %t1 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
// CHECK-LABEL: func.func private @single_repeated(
// CHECK-SAME: %[[IN:.*]]: tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<8x4xf32>
// CHECK-NEXT: %[[T:.*]] = linalg.transpose ins(%[[IN]] : tensor<4x8xf32>) outs(%[[E]] : tensor<8x4xf32>)
// CHECK-NEXT: return %[[T]]
// CHECK-LABEL: func.func @single(
// CHECK-SAME: %[[A:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<4x8xf32>
// CHECK: %[[T0:.*]] = call @single_repeated(%[[A]])
// CHECK: linalg.add ins(%[[T0]],
// CHECK: %[[T1:.*]] = call @single_repeated(%[[B]])
