// Tests of --dtensor-autodiff: the joint forward + backward function, its
// signature, the backward ops and the layout requests the gradients get,
// and an error for every input it refuses. The derivative rules themselves
// are checked against finite differences in test/unit/AutodiffTest.cpp.
//
// RUN: split-file %s %t
// RUN: dtensor-opt %t/mlp.mlir --dtensor-autodiff | FileCheck %t/mlp.mlir
// RUN: dtensor-opt %t/mlp.mlir --dtensor-autodiff=wrt=1 | FileCheck %t/mlp.mlir --check-prefix=WRT
// RUN: dtensor-opt %t/mlp.mlir --dtensor-autodiff='functions=mlp suffix=_vjp' | FileCheck %t/mlp.mlir --check-prefix=NAMED
// RUN: dtensor-opt %t/mlp.mlir --dtensor-autodiff=grad-layouts=free | FileCheck %t/mlp.mlir --check-prefix=FREE
// RUN: not dtensor-opt %t/mlp.mlir --dtensor-autodiff=grad-layouts=partial 2>&1 | FileCheck %t/mlp.mlir --check-prefix=BAD-LAYOUTS
// RUN: dtensor-opt %t/cases.mlir --split-input-file --dtensor-autodiff | FileCheck %t/cases.mlir
// RUN: dtensor-opt %t/mixed.mlir --split-input-file --dtensor-autodiff --verify-each | FileCheck %t/mixed.mlir
// RUN: dtensor-opt %t/normalisations.mlir --split-input-file --dtensor-autodiff --verify-each | FileCheck %t/normalisations.mlir
// RUN: dtensor-opt %t/checkpoint.mlir --dtensor-autodiff=checkpoint=mlp | FileCheck %t/checkpoint.mlir
// RUN: dtensor-opt %t/checkpoint.mlir --dtensor-autodiff=checkpoint=mlp.act | FileCheck %t/checkpoint.mlir --check-prefix=ACT
// RUN: dtensor-opt %t/checkpoint.mlir --dtensor-autodiff=checkpoint=ml | FileCheck %t/checkpoint.mlir --check-prefix=NONE
// RUN: dtensor-opt %t/errors.mlir --split-input-file --dtensor-autodiff --verify-diagnostics
// RUN: dtensor-opt %t/options.mlir --split-input-file --dtensor-autodiff='functions=nope' --verify-diagnostics

//--- mlp.mlir

// The TP MLP: seed laid out as the result, gradients as their arguments,
// the backward of the matmuls as contractions over the forward's operands.
// CHECK-LABEL: func.func @mlp(
// CHECK-LABEL: func.func @mlp_grad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x16xf32>, %[[W1:[a-z0-9]+]]: tensor<16x32xf32>, %[[W2:[a-z0-9]+]]: tensor<32x16xf32>,
// CHECK-SAME: %[[DY:[a-z0-9]+]]: tensor<8x16xf32> {dtensor.cotangent = 0 : i64, dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-SAME: -> (tensor<8x16xf32>,
// CHECK-SAME: tensor<8x16xf32> {dtensor.grad_of = 0 : i64, dtensor.layout = #dtensor.layout<@tp, [R]>},
// CHECK-SAME: tensor<16x32xf32> {dtensor.grad_of = 1 : i64, dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
// CHECK-SAME: tensor<32x16xf32> {dtensor.grad_of = 2 : i64, dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-SAME: attributes {dtensor.forward_results = 1 : i64}
// CHECK: %[[XR:.*]] = dtensor.annotate %[[X]]
// CHECK: %[[W1C:.*]] = dtensor.annotate %[[W1]]
// CHECK: %[[W2R:.*]] = dtensor.annotate %[[W2]]
// CHECK: %[[H:.*]] = linalg.matmul ins(%[[XR]], %[[W1C]]
// CHECK: %[[A:.*]] = linalg.generic
// CHECK: %[[Y:.*]] = linalg.matmul ins(%[[A]], %[[W2R]]
// CHECK: %[[YR:.*]] = dtensor.annotate %[[Y]]
// The gradient flowing into the R request goes back to the layout its input
// has in the forward (P after the rowwise matmul), P becoming R.
// CHECK: %[[DYP:.*]] = dtensor.annotate %[[DY]] layout <@tp, [R]>
// dA = dY @ W2^T: a contraction over the output dim, reading neither A nor
// the forward's result.
// CHECK: %[[DA:.*]] = linalg.generic {indexing_maps = [#{{map[0-9]*}}, #{{map[0-9]*}}, #{{map[0-9]*}}], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[DYP]], %[[W2R]] :
// CHECK: arith.mulf
// CHECK: arith.addf
// dW2 = A^T @ dY.
// CHECK: %[[DW2:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[DYP]], %[[A]] :
// relu': dA where the pre-activation is positive.
// CHECK: %[[DH:.*]] = linalg.generic {{.*}} ins(%[[DA]], %[[H]] :
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: %[[DX:.*]] = linalg.generic {{.*}} ins(%[[DH]], %[[W1C]] :
// CHECK: %[[DW1:.*]] = linalg.generic {{.*}} ins(%[[DH]], %[[XR]] :
// The arguments' gradients are requested in their layouts.
// CHECK: %[[DW2R:.*]] = dtensor.annotate %[[DW2]] layout <@tp, [S(0)]>
// CHECK: %[[DW1C:.*]] = dtensor.annotate %[[DW1]] layout <@tp, [S(1)]>
// CHECK: %[[DXR:.*]] = dtensor.annotate %[[DX]] layout <@tp, [R]>
// CHECK: return %[[YR]], %[[DXR]], %[[DW1C]], %[[DW2R]]
// WRT-LABEL: func.func @mlp_grad(
// WRT-SAME: -> (tensor<8x16xf32>, tensor<16x32xf32> {dtensor.grad_of = 1 : i64, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// FREE-LABEL: func.func @mlp_grad(
// FREE-SAME: -> (tensor<8x16xf32>, tensor<8x16xf32> {dtensor.grad_of = 0 : i64}, tensor<16x32xf32> {dtensor.grad_of = 1 : i64}, tensor<32x16xf32> {dtensor.grad_of = 2 : i64})
// BAD-LAYOUTS: error: autodiff: unknown grad-layouts 'partial' (expected argument or free)
// NAMED-LABEL: func.func @mlp_vjp(
// NAMED-NOT: func.func

dtensor.mesh @tp shape = [4] names = ["tp"]

func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>,
               %w2: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %xr = dtensor.annotate %x layout <@tp, [R]> : tensor<8x16xf32>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(1)]> : tensor<16x32xf32>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(0)]> : tensor<32x16xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%xr, %w1c : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %a = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %w2r : tensor<8x32xf32>, tensor<32x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %yr = dtensor.annotate %y layout <@tp, [R]> : tensor<8x16xf32>
  return %yr : tensor<8x16xf32>
}

//--- cases.mlir

// DTensor's redistribute backward: the gradient of a value redistributed
// from a known layout is requested in that layout (a module boundary stays
// one), P becoming R; a Partial argument's gradient is R.
// CHECK-LABEL: func.func @chain_grad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}
// CHECK-SAME: %[[P:[a-z0-9]+]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>}
// CHECK-SAME: %[[DY:[a-z0-9]+]]: tensor<8x16xf32> {dtensor.cotangent = 0 : i64, dtensor.layout = #dtensor.layout<@tp, [S(1)]>}
// CHECK-SAME: {dtensor.grad_of = 0 : i64, dtensor.layout = #dtensor.layout<@tp, [S(0)]>}
// CHECK-SAME: {dtensor.grad_of = 1 : i64, dtensor.layout = #dtensor.layout<@tp, [R]>}
// CHECK: dtensor.annotate %[[X]] layout <@tp, [S(0)]> {dtensor.boundary}
// CHECK: dtensor.annotate %{{.*}} layout <@tp, [R]> {dtensor.boundary}
// The gradient flowing back into the R request's input goes to S(0).
// CHECK: %[[DP:.*]] = dtensor.annotate %[[DY]] layout <@tp, [R]>
// CHECK: %[[D0:.*]] = dtensor.annotate %[[DY]] layout <@tp, [S(0)]> {dtensor.boundary}
// CHECK: %[[D1:.*]] = dtensor.annotate %[[D0]] layout <@tp, [S(0)]>
// CHECK-NOT: dtensor.boundary
// CHECK: return %{{.*}}, %[[D1]], %[[DP]]
dtensor.mesh @tp shape = [4] names = ["tp"]

func.func @chain(%x: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>},
                 %p: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>})
    -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> {dtensor.boundary} : tensor<8x16xf32>
  %b = dtensor.annotate %a layout <@tp, [R]> {dtensor.boundary} : tensor<8x16xf32>
  %q = dtensor.redistribute %p to <@tp, [S(1)]> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %s = linalg.add ins(%b, %q : tensor<8x16xf32>, tensor<8x16xf32>)
      outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}

// -----

// Parameters are differentiated, other inputs not; a value used twice gets
// the sum of its cotangents; an integer result gets no seed.
// CHECK-LABEL: func.func @params_grad(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<4xf32>, %{{[a-z0-9]+}}: tensor<4xf32> {dtensor.param = "w"}, %{{[a-z0-9]+}}: tensor<4xi32>,
// CHECK-SAME: %[[DY:[a-z0-9]+]]: tensor<4xf32> {dtensor.cotangent = 0 : i64})
// CHECK-SAME: -> (tensor<4xf32>, tensor<4xi32>, tensor<4xf32> {dtensor.grad_of = 1 : i64})
// CHECK: %[[G1:.*]] = linalg.generic
// CHECK: %[[G2:.*]] = linalg.generic
// CHECK: %[[SUM:.*]] = linalg.add ins(%[[G1]], %[[G2]]
// CHECK: return %{{.*}}, %{{.*}}, %[[SUM]]
func.func @params(%x: tensor<4xf32>, %w: tensor<4xf32> {dtensor.param = "w"},
                  %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %y = arith.mulf %w, %w : tensor<4xf32>
  return %y, %i : tensor<4xf32>, tensor<4xi32>
}

// -----

// Slices become pads, pads slices, concatenations slices, reshapes the
// inverse reshape.
// CHECK-LABEL: func.func @shapes_grad(
// CHECK-SAME: %[[DY:[a-z0-9]+]]: tensor<3x12xf32> {dtensor.cotangent = 0 : i64}
// CHECK: %[[C:.*]] = tensor.expand_shape %[[DY]] {{\[\[}}0], [1, 2]] output_shape [3, 2, 6]
// CHECK: %[[P:.*]] = tensor.collapse_shape %[[C]] {{\[\[}}0, 1], [2]]
// CHECK: %[[S:.*]] = tensor.extract_slice %[[P]][1, 0] [4, 3] [1, 1]
// CHECK: %[[D:.*]] = tensor.pad %[[S]] low[1, 2] high[1, 1]
// CHECK: tensor.extract_slice %[[D]][0, 0] [4, 6] [1, 1]
// CHECK: tensor.extract_slice %[[D]][4, 0] [2, 6] [1, 1]
func.func @shapes(%x: tensor<4x6xf32>, %y: tensor<2x6xf32>) -> tensor<3x12xf32> {
  %c = tensor.concat dim(0) %x, %y : (tensor<4x6xf32>, tensor<2x6xf32>)
      -> tensor<6x6xf32>
  %s = tensor.extract_slice %c[1, 2] [4, 3] [1, 1]
      : tensor<6x6xf32> to tensor<4x3xf32>
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %s low[1, 0] high[1, 3] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x3xf32> to tensor<6x6xf32>
  %e = tensor.expand_shape %p [[0, 1], [2]] output_shape [3, 2, 6]
      : tensor<6x6xf32> into tensor<3x2x6xf32>
  %r = tensor.collapse_shape %e [[0], [1, 2]]
      : tensor<3x2x6xf32> into tensor<3x12xf32>
  return %r : tensor<3x12xf32>
}

// -----

// An embedding lookup's table gradient is the scatter-add of the rows of
// the cotangent: a sum over the tokens of dy where the id equals the row,
// the ids compared with a replicated constant 0..V-1.
// CHECK-LABEL: func.func @embed_grad(
// CHECK-SAME: %[[IDS:[a-z0-9]+]]: tensor<3x1xindex>, %[[T:[a-z0-9]+]]: tensor<5x4xf32> {dtensor.param = "tok"}, %[[DY:[a-z0-9]+]]: tensor<3x4xf32>
// CHECK: %[[IOTA:.*]] = arith.constant dense<[0, 1, 2, 3, 4]> : tensor<5xindex>
// CHECK: %[[IR:.*]] = dtensor.annotate %[[IOTA]] layout <@tp, [R]>
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#{{map[0-9]*}}, #{{map[0-9]*}}, #{{map[0-9]*}}, #{{map[0-9]*}}], iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[IDS]], %[[IR]], %[[DY]] :
// CHECK: arith.cmpi eq
// CHECK: arith.select
// CHECK: arith.addf
dtensor.mesh @tp shape = [2]
func.func @embed(%ids: tensor<3x1xindex>, %t: tensor<5x4xf32> {dtensor.param = "tok"})
    -> tensor<3x4xf32> {
  %ts = dtensor.annotate %t layout <@tp, [S(0)]> : tensor<5x4xf32>
  %g = tensor.gather %ts[%ids] gather_dims([0]) unique
      : (tensor<5x4xf32>, tensor<3x1xindex>) -> tensor<3x4xf32>
  return %g : tensor<3x4xf32>
}

// -----

// Softmax: dx = y * (dy - sum(dy * y)) over its dimension.
// CHECK-LABEL: func.func @softmax_grad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x6xf32>, %[[DY:[a-z0-9]+]]: tensor<4x6xf32>
// CHECK: %[[Y:.*]] = linalg.softmax dimension(1)
// CHECK: %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[DY]], %[[Y]] :
// CHECK: %[[DX:.*]] = linalg.generic {{.*}} ins(%[[Y]], %[[DY]], %[[S]] :
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: return %[[Y]], %[[DX]]
func.func @softmax(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %y = linalg.softmax dimension(1) ins(%x : tensor<4x6xf32>)
      outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// to_local's gradient is viewed with `dtensor.grad_layout` where given
// (PyTorch's grad_placements); from_local's goes back through R.
// CHECK-LABEL: func.func @locals_grad(
// CHECK: %[[G:.*]] = dtensor.from_local %{{.*}} layout <@tp, [P(sum)]> : tensor<8x16xf32> -> tensor<8x16xf32>
// CHECK: %[[A:.*]] = dtensor.annotate %{{.*}} layout <@tp, [R]>
// CHECK: dtensor.to_local %[[A]] layout <@tp, [R]> : tensor<8x16xf32> -> tensor<8x16xf32>
dtensor.mesh @tp shape = [4] names = ["tp"]
func.func @locals(%g: tensor<8x16xf32>, %l: tensor<8x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %a = dtensor.to_local %g layout <@tp, [R]>
      {dtensor.grad_layout = #dtensor.layout<@tp, [P(sum)]>}
      : tensor<8x16xf32> -> tensor<8x16xf32>
  %b = dtensor.from_local %l layout <@tp, [P(sum)]>
      : tensor<8x16xf32> -> tensor<8x16xf32>
  return %a, %b : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

#ic = affine_map<(i, c) -> (i, c)>
#i = affine_map<(i, c) -> (i)>
#c = affine_map<(i, c) -> (c)>
dtensor.mesh @tp shape = [2]

// y[i] = sum_c w[c] * (a[i] - x[i, c]): the gradient of a is
// sum_c dy[i] * w[c]; the (a - x) cloned for the product rule's zero term
// is dead and erased, so x (sharded by columns) is no operand of it and
// pins nothing (issue 27).
// CHECK-LABEL: func.func @dead_operand_grad
// CHECK-SAME: (%[[W:[a-z0-9]+]]: tensor<8xf32>, %{{[a-z0-9]+}}: tensor<4xf32>, %{{[a-z0-9]+}}: tensor<4x8xf32>, %[[DY:[a-z0-9]+]]: tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[DY]], %[[W]] : tensor<4xf32>, tensor<8xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
func.func @dead_operand(%w: tensor<8xf32>, %a: tensor<4xf32>, %x: tensor<4x8xf32>) -> tensor<4xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#c, #i, #ic, #i], iterator_types = ["parallel", "reduction"]}
      ins(%w, %a, %xs : tensor<8xf32>, tensor<4xf32>, tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%wc: f32, %ai: f32, %xic: f32, %acc: f32):
    %d = arith.subf %ai, %xic : f32
    %p = arith.mulf %wc, %d : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

//--- checkpoint.mlir

// Activation checkpointing of module `mlp` (its submodules included): the
// backward recomputes the up projection and the relu right before it first
// needs them and reads only the recomputed values; the forward's copies
// feed the forward alone.
// CHECK-LABEL: func.func @mlp_grad(
// CHECK-SAME: %[[DY:[a-z0-9]+]]: tensor<8x16xf32> {dtensor.cotangent
// CHECK: %[[XR:.*]] = dtensor.annotate %{{.*}} layout <@tp, [R]>
// CHECK: %[[W1C:.*]] = dtensor.annotate %{{.*}} layout <@tp, [S(1)]>
// CHECK: %[[H:.*]] = linalg.matmul {dtensor.module = "mlp.up"} ins(%[[XR]], %[[W1C]]
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%[[H]] : {{.*}} attrs = {dtensor.module = "mlp.act"}
// CHECK: %[[Y:.*]] = linalg.matmul ins(%[[A]],
// CHECK: %[[DYR:.*]] = dtensor.annotate %[[DY]]
// CHECK: %[[DA:.*]] = linalg.generic {{.*}} ins(%[[DYR]],
// CHECK: %[[H2:.*]] = linalg.matmul {dtensor.module = "mlp.up", dtensor.recomputed} ins(%[[XR]], %[[W1C]]
// CHECK: %[[A2:.*]] = linalg.generic {{.*}} ins(%[[H2]] : {{.*}} attrs = {dtensor.module = "mlp.act", dtensor.recomputed}
// CHECK: linalg.generic {{.*}} ins(%[[DYR]], %[[A2]] :
// CHECK: linalg.generic {{.*}} ins(%[[DA]], %[[H2]] :
// CHECK-NOT: ins(%[[H]]
// CHECK-NOT: ins(%[[A]]
// CHECK: return
// Only the relu: the recomputed relu reads the saved up projection.
// ACT-LABEL: func.func @mlp_grad(
// ACT: %[[H:.*]] = linalg.matmul {dtensor.module = "mlp.up"}
// ACT-NOT: linalg.matmul {{.*}}dtensor.recomputed
// ACT: linalg.generic {{.*}} ins(%[[H]] : {{.*}} attrs = {dtensor.module = "mlp.act", dtensor.recomputed}
// A prefix of a module name that is not a module boundary names nothing.
// NONE-NOT: dtensor.recomputed
dtensor.mesh @tp shape = [4] names = ["tp"]
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>,
               %w2: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %xr = dtensor.annotate %x layout <@tp, [R]> : tensor<8x16xf32>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(1)]> : tensor<16x32xf32>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(0)]> : tensor<32x16xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%xr, %w1c : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f1 : tensor<8x32xf32>) {dtensor.module = "mlp.up"} -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %a = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>) attrs = {dtensor.module = "mlp.act"} {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %w2r : tensor<8x32xf32>, tensor<32x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %yr = dtensor.annotate %y layout <@tp, [R]> : tensor<8x16xf32>
  return %yr : tensor<8x16xf32>
}

//--- errors.mlir

dtensor.mesh @tp shape = [4] names = ["tp"]
// A gather along a dim other than the rows of a 2-D table.
func.func @gather(%t: tensor<16x4xf32>, %i: tensor<3x1xindex>) -> tensor<3x16xf32> {
  // expected-error @below {{autodiff: cannot differentiate a 'tensor.gather' other than an embedding lookup (2-D table, gather_dims([0]), indices ...x1, rank-reduced result)}}
  %g = tensor.gather %t[%i] gather_dims([1]) unique : (tensor<16x4xf32>, tensor<3x1xindex>) -> tensor<3x16xf32>
  return %g : tensor<3x16xf32>
}

// -----

func.func @erf(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    // expected-error @below {{autodiff: cannot differentiate 'math.erf'}}
    %r = math.erf %in : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @erf_tensor(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{autodiff: cannot differentiate 'math.erf'}}
  %y = math.erf %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A reduction combined by a division has no rule: refused.
func.func @divide_reduction(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %c = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%c : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @below {{autodiff: cannot differentiate 'linalg.generic': a reduction combined with 'arith.divf' (sums, max, min and products are supported)}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.divf %acc, %in : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A max-reduction whose init needs a gradient (the gradient of an init
// tied with the maximum is not defined here): refused.
func.func @amax_init(%x: tensor<4x8xf32>, %i: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{autodiff: cannot differentiate 'linalg.generic': the init of a max, min or product reduction depends on a differentiated argument}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%i : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %acc, %in : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A summand that reads the accumulator is not a sum.
func.func @acc_in_summand(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %c = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%c : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @below {{autodiff: cannot differentiate 'linalg.generic': its summand reads the accumulator}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %p = arith.mulf %in, %acc : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// An operand indexed by something other than loop dims (a convolution's
// window) has no rule.
func.func @window(%x: tensor<10xf32>, %w: tensor<3xf32>) -> tensor<8xf32> {
  %c = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%c : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  // expected-error @below {{autodiff: cannot differentiate 'linalg.generic': operand 0 is not indexed by a projected permutation}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i + k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : tensor<10xf32>, tensor<3xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Control flow has no rule.
func.func @loop(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  // expected-error @below {{autodiff: cannot differentiate 'scf.for'}}
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %x) -> tensor<4xf32> {
    %b = arith.addf %a, %a : tensor<4xf32>
    scf.yield %b : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// A value taken out of a tensor as a scalar and captured by a body.
func.func @captured(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @below {{autodiff: cannot differentiate through a captured scalar that depends on a differentiated argument}}
  %s = tensor.extract %x[%c0] : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.mulf %in, %s : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4] names = ["tp"]
func.func @grad_layout(%g: tensor<8x16xf32>) -> tensor<2x16xf32> {
  // expected-error @below {{autodiff: the gradient layout #dtensor.layout<@tp, [P(sum)]> gives another local shape than #dtensor.layout<@tp, [S(0)]>}}
  %a = dtensor.to_local %g layout <@tp, [S(0)]>
      {dtensor.grad_layout = #dtensor.layout<@tp, [P(sum)]>}
      : tensor<8x16xf32> -> tensor<2x16xf32>
  return %a : tensor<2x16xf32>
}

// -----

// expected-error @below {{autodiff: @exists_grad already exists}}
func.func @exists(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @exists_grad(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @below {{autodiff: argument 0 is marked differentiable but is not a floating-point tensor}}
func.func @int_param(%x: tensor<4xi32> {dtensor.param = "p"}) -> tensor<4xi32> {
  return %x : tensor<4xi32>
}

// -----

// expected-error @below {{autodiff: dynamic shapes are not supported}}
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

// -----

// A dynamic intermediate between static arguments and results.
func.func @dynamic_inside(%x: tensor<4xf32>) -> tensor<4xf32> {
  %d = tensor.cast %x : tensor<4xf32> to tensor<?xf32>
  // expected-error @below {{autodiff: dynamic shapes are not supported}}
  %s = tensor.cast %d : tensor<?xf32> to tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// An unused dynamic argument is not differentiated unless asked for.
func.func @dynamic_unused(%x: tensor<4xf32> {dtensor.param = "x"}, %y: tensor<?xf32>) -> tensor<4xf32> {
  // expected-error @below {{autodiff: cannot differentiate 'tensor.cast'}}
  %s = tensor.cast %x : tensor<4xf32> to tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Scalars computed from a tensor have no rule.
func.func @scalar(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %s = tensor.extract %x[%c0] : tensor<4xf32>
  %t = arith.mulf %s, %s : f32
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{autodiff: cannot differentiate with respect to a scalar operand of 'linalg.fill'}}
  %f = linalg.fill ins(%t : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %f : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [2]
// expected-error @below {{autodiff: @propagated has propagated layouts: differentiate the global view before dtensor-propagate-layouts}}
func.func @propagated(%x: tensor<4xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>}) -> tensor<4xf32> {
  %y = arith.addf %x, %x {dtensor.layouts = [#dtensor.layout<@tp, [R]>]} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @below {{autodiff: functions with more than one block are not supported}}
func.func @blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^bb1
^bb1:
  return %x : tensor<4xf32>
}

//--- options.mlir

// expected-error @below {{autodiff: no function @nope with a body}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

//--- mixed.mlir

// Mixed precision (issue 27): bf16 storage, f32 statistics and sums.

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// The RMSNorm's sum of squares of bf16 rows in f32: the gradient of the
// rows is formed in f32 and stored as bf16.
// CHECK-LABEL: func.func @sum_of_squares_grad
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK: ^bb0(%[[DY:.*]]: f32, %[[A:.*]]: bf16, %{{.*}}: bf16):
// CHECK: %[[AF:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK: arith.mulf
// CHECK: %[[G:.*]] = arith.mulf %[[DY]], %{{.*}} : f32
// CHECK: %[[T:.*]] = arith.truncf %[[G]] : f32 to bf16
// CHECK: linalg.yield %[[T]] : bf16
func.func @sum_of_squares(%x: tensor<4x8xbf16>) -> tensor<4xf32> {
  %zf = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xbf16>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: bf16, %acc: f32):
    %af = arith.extf %a : bf16 to f32
    %sq = arith.mulf %af, %af : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %ss : tensor<4xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>

// Computed in f32, stored truncated: differentiated before the truncf, the
// bf16 cotangent extended to f32, one rounding at the end.
// CHECK-LABEL: func.func @scale_grad
// CHECK: ^bb0(%[[DY:.*]]: bf16, %{{.*}}: bf16):
// CHECK: %[[DYF:.*]] = arith.extf %[[DY]] : bf16 to f32
// CHECK: %[[G:.*]] = arith.mulf %[[DYF]], %{{.*}} : f32
// CHECK: %[[T:.*]] = arith.truncf %[[G]] : f32 to bf16
// CHECK: linalg.yield %[[T]] : bf16
func.func @scale(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %e = tensor.empty() : tensor<4x8xbf16>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xbf16>) outs(%e : tensor<4x8xbf16>) {
  ^bb0(%a: bf16, %out: bf16):
    %c = arith.constant 3.0 : f32
    %af = arith.extf %a : bf16 to f32
    %s = arith.mulf %af, %c : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

// A bf16 matmul accumulating in f32: each operand's gradient is summed in
// f32 and stored as bf16.
// CHECK-LABEL: func.func @mixed_matmul_grad
// CHECK: %[[DA:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[DA]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @mixed_matmul(%a: tensor<4x8xbf16>, %b: tensor<8x6xbf16>) -> tensor<4x6xf32> {
  %zf = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %f = linalg.fill ins(%zf : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xbf16>, tensor<8x6xbf16>) outs(%f : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %m : tensor<4x6xf32>
}

// -----

// The q of a fused qkv (a rank-reducing slice): the cotangent gets its
// unit dim back and is padded into place.
// CHECK-LABEL: func.func @split_q_grad
// CHECK: %[[U:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2], [3]] output_shape [4, 1, 2, 8] : tensor<4x2x8xbf16> into tensor<4x1x2x8xbf16>
// CHECK: tensor.pad %[[U]] low[0, 1, 0, 0] high[0, 1, 0, 0]
// CHECK: tensor<4x1x2x8xbf16> to tensor<4x3x2x8xbf16>
func.func @split_q(%qkv: tensor<4x3x2x8xbf16>) -> tensor<4x2x8xbf16> {
  %q = tensor.extract_slice %qkv[0, 1, 0, 0] [4, 1, 2, 8] [1, 1, 1, 1] : tensor<4x3x2x8xbf16> to tensor<4x2x8xbf16>
  return %q : tensor<4x2x8xbf16>
}

//--- normalisations.mlir

// The normalisations' closed forms (docs/autodiff.md, "Normalisations";
// finite differences in test/unit/AutodiffTest.cpp, communication in
// test/Compiler/loss-parallel.mlir).

#x = affine_map<(n, v) -> (n, v)>
#r = affine_map<(n, v) -> (n)>
#n = affine_map<(n) -> (n)>

// logsumexp(x) - x[t] with logsumexp = m + log(sum exp(x - m)): the max m
// is a stabilising shift and gets no gradient (no tie count, no sum of its
// cotangents); x's gradient is the pick's one-hot cotangent plus
// exp(x - m) / sum times the row's cotangent, all elementwise.
// CHECK-LABEL: func.func @lse_grad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x6xf32>, %[[T:[a-z0-9]+]]: tensor<4xi64>, %[[DY:[a-z0-9]+]]: tensor<4xf32>
// CHECK: %[[M:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<4x6xf32>)
// CHECK: arith.maximumf
// CHECK: %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]], %[[M]] : tensor<4x6xf32>, tensor<4xf32>)
// CHECK: %[[PICK:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]], %[[T]] : tensor<4x6xf32>, tensor<4xi64>)
// CHECK: %[[LOSS:.*]] = linalg.generic
// The backward: no reduction over the classes, no comparison with the max.
// CHECK-NOT: "reduction"
// CHECK-NOT: arith.cmpf
// CHECK: return %[[LOSS]], %{{.*}} : tensor<4xf32>, tensor<4x6xf32>
func.func @lse(%x: tensor<4x6xf32>, %t: tensor<4xi64>) -> tensor<4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf32>) outs(%fm : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x6xf32>, tensor<4xf32>) outs(%fs : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %p = math.exp %d : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %pick = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x, %t : tensor<4x6xf32>, tensor<4xi64>) outs(%fs : tensor<4xf32>) {
  ^bb0(%a: f32, %ti: i64, %acc: f32):
    %v = linalg.index 1 : index
    %tx = arith.index_cast %ti : i64 to index
    %hit = arith.cmpi eq, %v, %tx : index
    %p = arith.select %hit, %a, %zero : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %loss = linalg.generic {indexing_maps = [#n, #n, #n, #n], iterator_types = ["parallel"]}
      ins(%m, %s, %pick : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %p: f32, %o: f32):
    %l = math.log %b : f32
    %lse = arith.addf %a, %l : f32
    %d = arith.subf %lse, %p : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  return %loss : tensor<4xf32>
}

// -----

#x = affine_map<(n, v) -> (n, v)>
#r = affine_map<(n, v) -> (n)>

// log_softmax then the pick of the target: the pick's cotangent is one-hot
// along the classes, and the log_softmax's rule sums it over them; that
// sum is the cotangent at the target (0 for a target outside 0..5), read
// from the one-hot generic's operands, with no loop over the classes.
// CHECK-LABEL: func.func @nll_grad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x6xf32>, %[[T:[a-z0-9]+]]: tensor<4xi64>, %[[DY:[a-z0-9]+]]: tensor<4xf32>
// CHECK: %[[M:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<4x6xf32>)
// CHECK: %[[SH:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[M]] : tensor<4x6xf32>, tensor<4xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[SH]] : tensor<4x6xf32>)
// CHECK: %[[HOT:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[DY]], %[[T]] : tensor<4xf32>, tensor<4xi64>)
// CHECK: linalg.index 1
// CHECK: %[[AT:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[SUM]], %[[DY]], %[[T]] : tensor<4xf32>, tensor<4xf32>, tensor<4xi64>)
// CHECK: ^bb0(%{{.*}}: f32, %[[G:.*]]: f32, %[[TI:.*]]: i64, %[[ACC:.*]]: f32):
// CHECK: %[[POS:.*]] = arith.index_cast %[[TI]] : i64 to index
// CHECK: %[[VAL:.*]] = arith.mulf %[[G]], %{{.*}} : f32
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK: %[[GE:.*]] = arith.cmpi sge, %[[POS]], %[[C0]] : index
// CHECK: %[[LT:.*]] = arith.cmpi slt, %[[POS]], %[[C6]] : index
// CHECK: %[[IN:.*]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK: arith.select %[[IN]], %[[VAL]], %{{.*}} : f32
// CHECK-NOT: "reduction"
// CHECK: return
func.func @nll(%x: tensor<4x6xf32>, %t: tensor<4xi64>) -> tensor<4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf32>) outs(%fm : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %ex = tensor.empty() : tensor<4x6xf32>
  %sh = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<4x6xf32>, tensor<4xf32>) outs(%ex : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x6xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%sh : tensor<4x6xf32>) outs(%fs : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %p = math.exp %a : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %lp = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%sh, %s : tensor<4x6xf32>, tensor<4xf32>) outs(%ex : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %l = math.log %b : f32
    %d = arith.subf %a, %l : f32
    linalg.yield %d : f32
  } -> tensor<4x6xf32>
  %pick = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%lp, %t : tensor<4x6xf32>, tensor<4xi64>) outs(%fs : tensor<4xf32>) {
  ^bb0(%a: f32, %ti: i64, %acc: f32):
    %v = linalg.index 1 : index
    %tx = arith.index_cast %ti : i64 to index
    %hit = arith.cmpi eq, %v, %tx : index
    %p = arith.select %hit, %a, %zero : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %pick : tensor<4xf32>
}

// -----

#x = affine_map<(n, v) -> (n, v)>
#r = affine_map<(n, v) -> (n)>
#n = affine_map<(n) -> (n)>

// Not a stabilising shift: m - log(sum exp(x - m)) is 2m - logsumexp(x),
// so the max keeps its gradient (the tie count and the sums over the
// classes of m's cotangents).
// CHECK-LABEL: func.func @twice_grad(
// CHECK: arith.maximumf
// CHECK: arith.cmpf oeq
// CHECK: return
func.func @twice(%x: tensor<4x6xf32>) -> tensor<4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf32>) outs(%fm : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x6xf32>, tensor<4xf32>) outs(%fs : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %p = math.exp %d : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#n, #n, #n], iterator_types = ["parallel"]}
      ins(%m, %s : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %l = math.log %b : f32
    %d = arith.subf %a, %l : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}
