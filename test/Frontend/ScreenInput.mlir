// RUN: dtensor-opt %s -split-input-file -verify-diagnostics -o /dev/null
// RUN: dtensor-opt %s -split-input-file --dtensor-spmd -verify-diagnostics -o /dev/null

// Input that reaches bugs of upstream MLIR 22 (stock mlir-opt crashes or
// emits invalid IR on it) or exceeds the resource limits gets a diagnostic
// from dtensor-screen-input, which dtensor-opt runs before the verifier
// (issue 11).

// tensor.concat's verifier segfaults on a negative dim.
func.func @concat_negative(%a: tensor<2x8xf32>, %b: tensor<2x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{concatenation dim -1 is out of range for the rank-2 result 'tensor<4x8xf32>'}}
  %c = tensor.concat dim(-1) %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

// An expand_shape whose output_shape contradicts its result type verifies
// upstream; bufferization then builds an invalid memref.expand_shape.
func.func @expand_contradicts(%x: tensor<12xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{output_shape entry 0 (3) contradicts the result type 'tensor<4x3xf32>'}}
  %e = tensor.expand_shape %x [[0, 1]] output_shape [3, 4] : tensor<12xf32> into tensor<4x3xf32>
  return %e : tensor<4x3xf32>
}

// -----

// A static output_shape entry for a dynamic result dim.
func.func @expand_static_for_dynamic(%x: tensor<?xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{output_shape entry 0 (3) contradicts the result type 'tensor<?x4xf32>'}}
  %e = tensor.expand_shape %x [[0, 1]] output_shape [3, 4] : tensor<?xf32> into tensor<?x4xf32>
  return %e : tensor<?x4xf32>
}

// -----

// A consistent expand_shape passes.
func.func @expand_ok(%x: tensor<12xf32>) -> tensor<3x4xf32> {
  %e = tensor.expand_shape %x [[0, 1]] output_shape [3, 4] : tensor<12xf32> into tensor<3x4xf32>
  return %e : tensor<3x4xf32>
}

// -----

// Resource limits: a dimension over 2^40 (here 2^62, whose chunk
// arithmetic overflowed)...
// expected-error @+1 {{dimension of 4611686018427387904 elements in 'tensor<4611686018427387904xf32>' exceeds the limit of 1099511627776 (2^40)}}
func.func @huge_dim(%x: tensor<4611686018427387904xf32>) -> tensor<4611686018427387904xf32> {
  return %x : tensor<4611686018427387904xf32>
}

// -----

// ... and an element count over 2^48, or one that wraps int64 (to 0 here,
// which made ranks segfault in host slicing).
func.func @huge_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tensor<1099511627776x1099511627776xf32>' has more than 281474976710656 (2^48) elements, the limit for a tensor}}
  %e = tensor.empty() : tensor<1099511627776x1099511627776xf32>
  return %x : tensor<4xf32>
}

// -----

// A collective over a huge dim never reaches the verifier's arithmetic.
dtensor.mesh @tp shape = [4]
// expected-error @+1 {{exceeds the limit of 1099511627776 (2^40)}}
func.func @ag_wraps(%x: tensor<4611686018427387904xf32>) -> tensor<0xf32> {
  %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = 0 : tensor<4611686018427387904xf32> -> tensor<0xf32>
  return %g : tensor<0xf32>
}

// -----

// tensor.pad (issue 26): upstream's verifier cannot check dynamic padding
// against a static result, and one-shot-bufferize then slices out of
// bounds. Padding that folds to constants (here 2 - dim(%a, 0) = -2) must
// be non-negative and add up to the static result.
func.func @pad_negative_dynamic(%a: tensor<4x8xf32>) -> tensor<2x8xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %d = tensor.dim %a, %c0 : tensor<4x8xf32>
  %h = arith.subi %c2, %d : index
  %cst = arith.constant 0.0 : f32
  // expected-error @+1 {{high padding of dimension 0 is -2, negative}}
  %p = tensor.pad %a low[0, 0] high[%h, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %cst : f32
  } : tensor<4x8xf32> to tensor<2x8xf32>
  return %p : tensor<2x8xf32>
}

// -----

// Padding that is not foldable, but a static result smaller than the
// static source: some padding must be negative.
func.func @pad_result_smaller(%a: tensor<4x8xf32>, %h: index) -> tensor<2x8xf32> {
  %cst = arith.constant 0.0 : f32
  // expected-error @+1 {{result dimension 0 of 2 elements is smaller than the source's 4: the padding would be negative}}
  %p = tensor.pad %a low[0, 0] high[%h, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %cst : f32
  } : tensor<4x8xf32> to tensor<2x8xf32>
  return %p : tensor<2x8xf32>
}

// -----

// Static negative low padding that the result type agrees with.
func.func @pad_static_negative(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %cst = arith.constant 0.0 : f32
  // expected-error @+1 {{low padding of dimension 0 is -1, negative}}
  %p = tensor.pad %a low[-1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %cst : f32
  } : tensor<4x8xf32> to tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}

// -----

// Foldable padding that contradicts the static result (4 + 1 + 2 != 9).
func.func @pad_contradicts(%a: tensor<4x8xf32>) -> tensor<9x8xf32> {
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f32
  // expected-error @+1 {{padding of dimension 0 gives 7 elements (4 + 1 low + 2 high), but the result type 'tensor<9x8xf32>' has 9}}
  %p = tensor.pad %a low[%c1, 0] high[2, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %cst : f32
  } : tensor<4x8xf32> to tensor<9x8xf32>
  return %p : tensor<9x8xf32>
}

// -----

// Padding wider than the static result around a dynamic source dim (the
// fuzzer's seed 11, iteration 1164): the source would have -1 rows, and
// one-shot-bufferize built a slice out of bounds. Padding exactly as wide
// as the result (an empty source) stays valid: FoldEmptyTensors.mlir.
func.func @pad_wider_than_result(%x: tensor<?x5xf32>, %v: f32) -> tensor<1x6xf32> {
  // expected-error @+1 {{padding of dimension 0 (2 low + 0 high) is wider than the result's 1 elements: the source would have a negative size}}
  %p = tensor.pad %x low[2, 0] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %v : f32
  } : tensor<?x5xf32> to tensor<1x6xf32>
  return %p : tensor<1x6xf32>
}

// -----

// Consistent pads pass: folded, dynamic and static.
func.func @pad_ok(%a: tensor<4x8xf32>, %b: tensor<?x8xf32>, %h: index) -> (tensor<6x8xf32>, tensor<?x9xf32>) {
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %d = tensor.dim %a, %c0 : tensor<4x8xf32>
  %k = arith.subi %c6, %d : index
  %cst = arith.constant 0.0 : f32
  %p = tensor.pad %a low[0, 0] high[%k, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %cst : f32
  } : tensor<4x8xf32> to tensor<6x8xf32>
  %q = tensor.pad %b low[%h, 1] high[0, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %cst : f32
  } : tensor<?x8xf32> to tensor<?x9xf32>
  return %p, %q : tensor<6x8xf32>, tensor<?x9xf32>
}
