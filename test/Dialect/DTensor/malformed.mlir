// RUN: dtensor-opt %s -split-input-file -allow-unregistered-dialect -verify-diagnostics

// Malformed input: every case must produce a diagnostic, never a crash.

//===----------------------------------------------------------------------===//
// Malformed placements
//===----------------------------------------------------------------------===//

// Placement: `S` without a dimension.
// expected-error @+1 {{expected '('}}
func.func private @p() attributes {p = #dtensor.placement<S>}

// -----

// Placement: non-integer shard dimension.
// expected-error @+1 {{expected integer value}}
func.func private @p() attributes {p = #dtensor.placement<S(x)>}

// -----

// Placement: fractional shard dimension.
// expected-error @+1 {{expected integer value}}
func.func private @p() attributes {p = #dtensor.placement<S(1.5)>}

// -----

// Placement: shard dimension that does not fit in 64 bits.
// expected-error @+1 {{integer value too large}}
func.func private @p() attributes {p = #dtensor.placement<S(99999999999999999999)>}

// -----

// PL1: negative shard dimension.
// expected-error @+1 {{PL1] shard dimension must be non-negative, got -1}}
func.func private @p() attributes {p = #dtensor.placement<S(-1)>}

// -----

// Placement: unknown kind.
// expected-error @+1 {{expected a placement S(dim), R, P or P(op), got 'Q'}}
func.func private @p() attributes {p = #dtensor.placement<Q>}

// -----

// Placement: kinds are case-sensitive.
// expected-error @+1 {{expected a placement S(dim), R, P or P(op), got 's'}}
func.func private @p() attributes {p = #dtensor.placement<s(0)>}

// -----

// Placement: unknown reduction.
// expected-error @+1 {{unknown reduction 'mean'; expected sum, avg, product, min or max}}
func.func private @p() attributes {p = #dtensor.placement<P(mean)>}

// -----

// Placement: empty reduction.
// expected-error @+1 {{expected valid keyword}}
func.func private @p() attributes {p = #dtensor.placement<P()>}

// -----

// Placement: missing ')' after the reduction.
// expected-error @+1 {{expected ')'}}
func.func private @p() attributes {p = #dtensor.layout<@m, [P(sum, R)]>}

// -----

// Placement: `R` takes no argument.
// expected-error @+1 {{expected '>'}}
func.func private @p() attributes {p = #dtensor.placement<R(0)>}

// -----

// Placement: missing body.
// expected-error @+1 {{expected '<'}}
func.func private @p() attributes {p = #dtensor.placement}

// -----

// Placement: empty body.
// expected-error @+1 {{expected valid keyword}}
func.func private @p() attributes {p = #dtensor.placement<>}

// -----

// Placement: a standalone placement holds exactly one placement.
// expected-error @+1 {{expected '>'}}
func.func private @p() attributes {p = #dtensor.placement<S(0), R>}

// -----

// Placement: a string is not a placement.
// expected-error @+1 {{expected valid keyword}}
func.func private @p() attributes {p = #dtensor.placement<"S(0)">}

// -----

// Placement: unbalanced parenthesis.
// expected-error @+1 {{unbalanced '(' character in pretty dialect name}}
func.func private @p() attributes {p = #dtensor.placement<S(0>}

// -----

// Reduction kind: unknown value.
// expected-error @+2 {{expected ::mlir::dtensor::ReduceKind to be one of: sum, avg, product, min, max}}
// expected-error @+1 {{failed to parse DTensor_ReduceKindAttr parameter 'value'}}
func.func private @p() attributes {p = #dtensor<reduce mean>}

// -----

// Unknown attribute mnemonic.
// expected-error @+1 {{unknown attribute `shard` in dialect `dtensor`}}
func.func private @p() attributes {p = #dtensor.shard<0>}

//===----------------------------------------------------------------------===//
// Layout syntax errors
//===----------------------------------------------------------------------===//

// -----

// Layout: missing body.
// expected-error @+1 {{expected '<'}}
func.func private @l() attributes {l = #dtensor.layout}

// -----

// Layout: empty body.
// expected-error @+1 {{expected attribute value}}
func.func private @l() attributes {l = #dtensor.layout<>}

// -----

// Layout: missing mesh.
// expected-error @+1 {{expected attribute value}}
func.func private @l() attributes {l = #dtensor.layout<[S(0)]>}

// -----

// Layout: mesh without '@'.
// expected-error @+1 {{expected attribute value}}
func.func private @l() attributes {l = #dtensor.layout<tp, [S(0)]>}

// -----

// Layout: nested symbol reference as mesh.
// expected-error @+1 {{invalid kind of attribute specified}}
func.func private @l() attributes {l = #dtensor.layout<@a::@b, [S(0)]>}

// -----

// Layout: missing comma after the mesh.
// expected-error @+1 {{expected ','}}
func.func private @l() attributes {l = #dtensor.layout<@tp [S(0)]>}

// -----

// Layout: missing placement list.
// expected-error @+1 {{expected ','}}
func.func private @l() attributes {l = #dtensor.layout<@tp>}

// -----

// Layout: placements not in brackets.
// expected-error @+1 {{expected '['}}
func.func private @l() attributes {l = #dtensor.layout<@tp, S(0)>}

// -----

// Layout: missing comma between placements.
// expected-error @+1 {{expected ']'}}
func.func private @l() attributes {l = #dtensor.layout<@tp, [S(0) R]>}

// -----

// Layout: trailing comma in the placement list.
// expected-error @+1 {{expected valid keyword}}
func.func private @l() attributes {l = #dtensor.layout<@tp, [S(0),]>}

// -----

// Layout: trailing placement outside the list.
// expected-error @+1 {{expected '>'}}
func.func private @l() attributes {l = #dtensor.layout<@tp, [S(0)], R>}

// -----

// Layout: unterminated.
// expected-error @+1 {{unbalanced '<' character in pretty dialect name}}
func.func private @l() attributes {l = #dtensor.layout<@tp, [S(0)]}

// -----

// Layout: malformed placement inside a layout.
// expected-error @+1 {{unknown reduction 'mean'}}
func.func private @l() attributes {l = #dtensor.layout<@tp, [R, P(mean)]>}

// -----

// Layout: malformed placement inside an op's layout.
func.func @l(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{expected a placement S(dim), R, P or P(op), got 'Shard'}}
  %y = dtensor.annotate %x layout <@tp, [Shard(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Layout: missing comma in an op's layout.
func.func @l(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{expected ','}}
  %y = dtensor.annotate %x layout <@tp [S(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Layout: the qualified attribute also parses in an op, but then swallows
// the `: type` that follows as the attribute's type.
func.func @l(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{expected ':'}}
  %y = dtensor.redistribute %x to #dtensor.layout<@tp, [S(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Layout: missing `to` in a redistribute.
func.func @l(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{expected 'to'}}
  %y = dtensor.redistribute %x from <@tp, [S(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Layout: a placement where a layout is expected (generic form).
func.func @l(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{invalid properties {layout = #dtensor.placement<R>} for op dtensor.annotate}}
  %y = "dtensor.annotate"(%x) <{layout = #dtensor.placement<R>}> : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Layout: missing layout attribute (generic form).
func.func @l(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dtensor.annotate' op requires attribute 'layout'}}
  %y = "dtensor.annotate"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Layout: unranked tensors have no layout.
dtensor.mesh @tp shape = [4]
func.func @l(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{'dtensor.annotate' op operand #0 must be ranked tensor of any type values, but got 'tensor<*xf32>'}}
  %y = "dtensor.annotate"(%x) <{layout = #dtensor.layout<@tp, [R]>}> : (tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

//===----------------------------------------------------------------------===//
// Malformed meshes and collectives
//===----------------------------------------------------------------------===//

// -----

// Mesh: missing symbol name.
// expected-error @+1 {{expected valid '@'-identifier for symbol name}}
dtensor.mesh shape = [4]

// -----

// Mesh: shape is not a list.
// expected-error @+1 {{expected '['}}
dtensor.mesh @m shape = 4

// -----

// Mesh: names must be strings.
// expected-error @+1 {{attribute 'names' failed to satisfy constraint: string array attribute}}
dtensor.mesh @m shape = [4] names = [1]

// -----

// Mesh: device ids must be integers.
// expected-error @+2 {{expected integer value}}
// expected-error @+1 {{expected ']'}}
dtensor.mesh @m shape = [4] devices = ["a"]

// -----

// Mesh: missing shape (generic form).
// expected-error @+1 {{'dtensor.mesh' op requires attribute 'shape'}}
"dtensor.mesh"() <{sym_name = "m"}> : () -> ()

// -----

// expected-note @+1 {{see existing symbol definition here}}
dtensor.mesh @m shape = [4]
// Mesh: duplicate symbol.
// expected-error @+1 {{redefinition of symbol named 'm'}}
dtensor.mesh @m shape = [2]

// -----

dtensor.mesh @tp shape = [4]

// Collective: mesh without '@'.
func.func @c(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected attribute value}}
  %y = dtensor.all_reduce %x on tp axes = [0] reduce = sum : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Collective: nested symbol reference as mesh.
func.func @c(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{invalid kind of attribute specified}}
  %y = dtensor.all_reduce %x on @tp::@x axes = [0] reduce = sum : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Collective: unknown reduction.
func.func @c(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{expected ::mlir::dtensor::ReduceKind to be one of: sum, avg, product, min, max}}
  // expected-error @+1 {{failed to parse DTensor_ReduceKindAttr parameter 'value'}}
  %y = dtensor.all_reduce %x on @tp axes = [0] reduce = mean : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Collective: gather_dim does not fit in 64 bits.
func.func @c(%x: tensor<4x4xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{integer constant out of range for attribute}}
  %y = dtensor.all_gather %x on @tp axes = [0] gather_dim = 99999999999999999999 : tensor<4x4xf32> -> tensor<16x4xf32>
  return %y : tensor<16x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Collective: missing result type of an all_gather.
func.func @c(%x: tensor<4x4xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{expected '->'}}
  %y = dtensor.all_gather %x on @tp axes = [0] gather_dim = 0 : tensor<4x4xf32>
  return %y : tensor<16x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Collective: unranked operand.
func.func @c(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %y = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<*xf32>
  return %y : tensor<*xf32>
}

//===----------------------------------------------------------------------===//
// Unknown mesh references, in every op kind (LAYOUT1 / COLL1)
//===----------------------------------------------------------------------===//

// -----

func.func @unknown_annotate(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT1] @nope does not name a dtensor.mesh}}
  %y = dtensor.annotate %x layout <@nope, [S(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @unknown_redistribute_to(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT1] @nope does not name a dtensor.mesh}}
  %y = dtensor.redistribute %x to <@nope, [S(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @unknown_redistribute_from(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT1] @nope does not name a dtensor.mesh}}
  %y = dtensor.redistribute %x from <@nope, [R]> to <@nope, [S(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @unknown_from_local(%x: tensor<2xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT1] @nope does not name a dtensor.mesh}}
  %y = dtensor.from_local %x layout <@nope, [S(0)]> : tensor<2xf32> -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @unknown_to_local(%x: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{LAYOUT1] @nope does not name a dtensor.mesh}}
  %y = dtensor.to_local %x layout <@nope, [S(0)]> : tensor<8xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @unknown_coord() -> index {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %c = dtensor.coord @nope axes = [0] : index
  return %c : index
}

// -----

func.func @unknown_all_reduce(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %y = dtensor.all_reduce %x on @nope axes = [0] reduce = sum : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @unknown_all_gather(%x: tensor<4xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %y = dtensor.all_gather %x on @nope axes = [0] gather_dim = 0 : tensor<4xf32> -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

func.func @unknown_reduce_scatter(%x: tensor<16xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %y = dtensor.reduce_scatter %x on @nope axes = [0] scatter_dim = 0 reduce = sum : tensor<16xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @unknown_all_to_all(%x: tensor<2x16xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %y = dtensor.all_to_all %x on @nope axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

func.func @unknown_permute(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %y = dtensor.permute %x on @nope axes = [0] perm = [1, 0] : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @unknown_broadcast(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %y = dtensor.broadcast %x on @nope axes = [0] root = 0 : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @unknown_all_reduce_coalesced(%x: tensor<4xf32>, %z: tensor<2xf32>) {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %y:2 = dtensor.all_reduce_coalesced %x, %z on @nope axes = [0] reduce = sum : tensor<4xf32>, tensor<2xf32>
  return
}

// -----

func.func @unknown_all_gather_coalesced(%x: tensor<4xf32>) {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %y = dtensor.all_gather_coalesced %x on @nope axes = [0] gather_dims = [0] : tensor<4xf32> -> tensor<16xf32>
  return
}

// -----

func.func @unknown_reduce_scatter_coalesced(%x: tensor<16xf32>) {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %y = dtensor.reduce_scatter_coalesced %x on @nope axes = [0] scatter_dims = [0] reduce = sum : tensor<16xf32> -> tensor<4xf32>
  return
}

// -----

func.func @unknown_all_gather_matmul(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>) {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @nope axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
  return
}

// -----

func.func @unknown_matmul_reduce_scatter(%a: tensor<8x4xf32>, %b: tensor<4x32xf32>) {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %c = dtensor.matmul_reduce_scatter %a, %b on @nope axes = [0] scatter_dim = 0 reduce = sum
      : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<2x32xf32>
  return
}

// -----

// The collective inside an async_start is checked too.
func.func @unknown_in_async(%x: tensor<4xf32>) -> tensor<4xf32> {
  %f = dtensor.async_start {
    // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
    %r = dtensor.all_reduce %x on @nope axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return %y : tensor<4xf32>
}

// -----

// A mesh in a nested module is not visible outside it.
module @outer {
  module @inner {
    dtensor.mesh @tp shape = [4]
  }
  func.func @hidden() -> index {
    // expected-error @+1 {{COLL1] @tp does not name a dtensor.mesh}}
    %c = dtensor.coord @tp axes = [0] : index
    return %c : index
  }
}

// -----

// A mesh declared after its use is found (symbols are order-independent);
// the error comes from the layout, not the lookup.
func.func @later(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT2] expected 2 placements for mesh @later_mesh, got 1}}
  %y = dtensor.annotate %x layout <@later_mesh, [R]> : tensor<8xf32>
  return %y : tensor<8xf32>
}
dtensor.mesh @later_mesh shape = [2, 2]

//===----------------------------------------------------------------------===//
// Out-of-range dimensions
//===----------------------------------------------------------------------===//

// -----

dtensor.mesh @tp shape = [4]

// Shard dimension of a rank-0 tensor.
func.func @rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{LAYOUT3] placement S(0) is out of range for a rank-0 tensor}}
  %y = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<f32>
  return %y : tensor<f32>
}

// -----

dtensor.mesh @tp shape = [4]

// Huge shard dimension on to_local.
func.func @huge_shard(%x: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{LAYOUT3] placement S(9223372036854775807) is out of range for a rank-1 tensor}}
  %y = dtensor.to_local %x layout <@tp, [S(9223372036854775807)]> : tensor<8xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

dtensor.mesh @m shape = [2, 4]

// Shard dimension out of range on the second mesh dim of from_local.
func.func @shard_second(%x: tensor<1x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{LAYOUT3] placement S(2) is out of range for a rank-2 tensor}}
  %y = dtensor.from_local %x layout <@m, [S(0), S(2)]> : tensor<1x2xf32> -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Huge mesh axis.
func.func @huge_axis() -> index {
  // expected-error @+1 {{COLL2] mesh axis 9223372036854775807 is out of range for the rank-1 mesh @tp}}
  %c = dtensor.coord @tp axes = [9223372036854775807] : index
  return %c : index
}

// -----

dtensor.mesh @tp shape = [4]

// Huge gather_dim.
func.func @huge_gather_dim(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{AG1] gather_dim 9223372036854775807 is out of range for 'tensor<4x4xf32>'}}
  %y = dtensor.all_gather %x on @tp axes = [0] gather_dim = 9223372036854775807 : tensor<4x4xf32> -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Very negative scatter_dim.
func.func @negative_scatter_dim(%x: tensor<16xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{RS1] scatter_dim -9223372036854775808 is out of range for 'tensor<16xf32>'}}
  %y = dtensor.reduce_scatter %x on @tp axes = [0] scatter_dim = -9223372036854775808 reduce = sum : tensor<16xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Out-of-range gather dim of a coalesced gather.
func.func @coalesced_dim(%x: tensor<4xf32>) {
  // expected-error @+1 {{AG1] gather_dim 7 is out of range for 'tensor<4xf32>'}}
  %y = dtensor.all_gather_coalesced %x on @tp axes = [0] gather_dims = [7] : tensor<4xf32> -> tensor<16xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// Out-of-range gather dim of a fused gather.
func.func @fused_dim(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>) {
  // expected-error @+1 {{AGMM2] gather_dim 5 must be a non-contracted dimension of A (0..0)}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 5
      : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// Out-of-range scatter dim of a fused scatter on a rank-3 product.
func.func @fused_scatter_dim(%a: tensor<2x8x4xf32>, %b: tensor<4x32xf32>) {
  // expected-error @+1 {{MMRS2] scatter_dim 3 is out of range for the rank-3 product}}
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 3 reduce = sum
      : tensor<2x8x4xf32>, tensor<4x32xf32> -> tensor<2x8x32xf32>
  return
}

//===----------------------------------------------------------------------===//
// Futures, async_start and wait
//===----------------------------------------------------------------------===//

// -----

// Wait without start: the future is a block argument.
func.func @wait_block_arg(%f: !dtensor.future<tensor<4xf32>>) -> tensor<4xf32> {
  // expected-error @+1 {{WAIT1] the future must be a result of dtensor.async_start, directly or through scf.for, scf.while or scf.if}}
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return %y : tensor<4xf32>
}

// -----

// Wait without start: the future comes from a call.
func.func private @get() -> !dtensor.future<tensor<4xf32>>
func.func @wait_call() -> tensor<4xf32> {
  %f = call @get() : () -> !dtensor.future<tensor<4xf32>>
  // expected-error @+1 {{WAIT1] the future must be a result of dtensor.async_start, directly or through scf.for, scf.while or scf.if}}
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return %y : tensor<4xf32>
}

// -----

// Future type: value type is not a tensor.
// expected-error @+2 {{invalid kind of type specified: expected builtin.tensor, but found 'f32'}}
// expected-error @+1 {{failed to parse DTensor_FutureType parameter 'valueType'}}
func.func private @f(!dtensor.future<f32>)

// -----

// Future type: value type is unranked.
// expected-error @+2 {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
// expected-error @+1 {{failed to parse DTensor_FutureType parameter 'valueType'}}
func.func private @f(!dtensor.future<tensor<*xf32>>)

// -----

// Future type: value type is a memref.
// expected-error @+2 {{invalid kind of type specified: expected builtin.tensor, but found 'memref<4xf32>'}}
// expected-error @+1 {{failed to parse DTensor_FutureType parameter 'valueType'}}
func.func private @f(!dtensor.future<memref<4xf32>>)

// -----

// Future type: missing value type.
// expected-error @+1 {{expected '<'}}
func.func private @f(!dtensor.future)

// -----

// Future type: empty value type.
// expected-error @+2 {{expected non-function type}}
// expected-error @+1 {{failed to parse DTensor_FutureType parameter 'valueType'}}
func.func private @f(!dtensor.future<>)

// -----

// Unknown type mnemonic.
// expected-error @+1 {{unknown  type `promise` in dialect `dtensor`}}
func.func private @f(!dtensor.promise<tensor<4xf32>>)

// -----

// Wait on a tensor instead of a future.
func.func @wait_tensor(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected '<'}}
  %y = dtensor.wait %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Wait on a tensor instead of a future (generic form).
func.func @wait_tensor_generic(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dtensor.wait' op operand #0 must be the pending result of an asynchronous collective, but got 'tensor<4xf32>'}}
  %y = "dtensor.wait"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Wait with a future type that differs from the value's.
// expected-note @+1 {{prior use here}}
func.func @wait_mismatch(%f: !dtensor.future<tensor<4xf32>>) -> tensor<8xf32> {
  // expected-error @+1 {{use of value '%f' expects different type than prior uses: '!dtensor.future<tensor<8xf32>>' vs '!dtensor.future<tensor<4xf32>>'}}
  %y = dtensor.wait %f : !dtensor.future<tensor<8xf32>>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Wait with an unranked result type.
func.func @wait_unranked(%x: tensor<4xf32>) {
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  // expected-error @+1 {{'dtensor.wait' op result #0 must be ranked tensor of any type values, but got 'tensor<*xf32>'}}
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>> -> tensor<*xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// async_start whose result is a tensor instead of a future.
func.func @async_tensor_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dtensor.async_start' op result #0 must be variadic of the pending result of an asynchronous collective, but got 'tensor<4xf32>'}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : tensor<4xf32>
  return
}

// -----

// async_start with an empty body.
func.func @async_empty() {
  // expected-error @+1 {{'dtensor.async_start' op expects a non-empty block}}
  %f = dtensor.async_start {
  } : !dtensor.future<tensor<4xf32>>
  return
}

// -----

// async_start with no block at all (generic form).
func.func @async_no_block() {
  // expected-error @+1 {{'dtensor.async_start' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
  "dtensor.async_start"() ({}) : () -> ()
  return
}

// -----

dtensor.mesh @tp shape = [4]

// async_start with two blocks.
func.func @async_two_blocks(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dtensor.async_start' op expects region #0 to have 0 or 1 blocks}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  ^bb1:
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC1: two collectives.
func.func @async_two_collectives(%x: tensor<4xf32>, %z: tensor<4xf32>) {
  // expected-error @+1 {{ASYNC1] body must hold exactly one collective followed by dtensor.yield}}
  %f:2 = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    %s = dtensor.broadcast %z on @tp axes = [0] root = 0 : tensor<4xf32>
    dtensor.yield %r, %s : tensor<4xf32>, tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>, !dtensor.future<tensor<4xf32>>
  %a = dtensor.wait %f#0 : !dtensor.future<tensor<4xf32>>
  %b = dtensor.wait %f#1 : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC1: a non-collective op before the collective.
func.func @async_extra_op(%x: tensor<4xf32>) {
  // expected-error @+1 {{ASYNC1] body must hold exactly one collective followed by dtensor.yield}}
  %f = dtensor.async_start {
    %e = arith.addf %x, %x : tensor<4xf32>
    %r = dtensor.all_reduce %e on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC1: a non-collective dtensor op.
func.func @async_layout_op(%x: tensor<8xf32>) {
  // expected-error @+1 {{ASYNC1] body must hold exactly one collective followed by dtensor.yield}}
  %f = dtensor.async_start {
    %r = dtensor.redistribute %x to <@tp, [S(0)]> : tensor<8xf32>
    dtensor.yield %r : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<8xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// Not yielding: the body has no terminator.
func.func @async_no_yield(%x: tensor<4xf32>) {
  %f = dtensor.async_start {
    // expected-error @+1 {{block with no terminator}}
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// Not yielding: another dialect's terminator.
func.func @async_wrong_yield(%x: tensor<4xf32>) {
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    // expected-error @+1 {{'tensor.yield' op expects parent op to be one of 'tensor.generate, tensor.pad'}}
    tensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC1: not yielding, the terminator is an unregistered op.
func.func @async_unregistered_terminator(%x: tensor<4xf32>) {
  // expected-error @+1 {{ASYNC1] body must end with dtensor.yield}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    "test.terminator"(%r) : (tensor<4xf32>) -> ()
  } : !dtensor.future<tensor<4xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return
}

// -----

// dtensor.yield outside an async_start.
func.func @yield_outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dtensor.yield' op expects parent op 'dtensor.async_start'}}
  dtensor.yield %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{unknown target field 'arch' (expected chip, hardware_file or cost_table)}}
module attributes {dtensor.target = #dtensor.target<cuda, "h200", arch = "sm_90">} {}

// -----

// expected-error@+1 {{target field 'chip' given twice}}
module attributes {dtensor.target = #dtensor.target<cuda, "h200", chip = "sm_90", chip = "sm_80">} {}
