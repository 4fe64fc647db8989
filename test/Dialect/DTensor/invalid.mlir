// RUN: dtensor-opt %s -split-input-file -verify-diagnostics

// One expected-error test per documented constraint id and message variant.

//===----------------------------------------------------------------------===//
// dtensor.mesh
//===----------------------------------------------------------------------===//

// MESH1: empty shape.
// expected-error @+1 {{MESH1] a mesh needs at least one dimension}}
dtensor.mesh @m shape = []

// -----

// MESH1: zero size.
// expected-error @+1 {{MESH1] mesh dimension 1 has non-positive size 0}}
dtensor.mesh @m shape = [2, 0]

// -----

// MESH1: negative size.
// expected-error @+1 {{MESH1] mesh dimension 0 has non-positive size -4}}
dtensor.mesh @m shape = [-4]

// -----

// MESH2: wrong number of names.
// expected-error @+1 {{MESH2] expected 2 dimension names, got 1}}
dtensor.mesh @m shape = [2, 4] names = ["dp"]

// -----

// MESH2: empty name.
// expected-error @+1 {{MESH2] dimension names must be non-empty}}
dtensor.mesh @m shape = [2, 4] names = ["dp", ""]

// -----

// MESH2: duplicate name.
// expected-error @+1 {{MESH2] duplicate dimension name 'tp'}}
dtensor.mesh @m shape = [2, 4] names = ["tp", "tp"]

// -----

// MESH3: wrong number of devices.
// expected-error @+1 {{MESH3] expected 8 device ids, got 4}}
dtensor.mesh @m shape = [2, 4] devices = [0, 1, 2, 3]

// -----

// MESH3: negative device id.
// expected-error @+1 {{MESH3] device id -1 is negative}}
dtensor.mesh @m shape = [2] devices = [0, -1]

// -----

// MESH3: duplicate device id.
// expected-error @+1 {{MESH3] device id 1 appears twice}}
dtensor.mesh @m shape = [3] devices = [1, 0, 1]

//===----------------------------------------------------------------------===//
// COLL1 / COLL2 (dtensor.coord and every collective)
//===----------------------------------------------------------------------===//

// -----

// COLL1: unknown mesh in dtensor.coord.
func.func @coll1_coord() -> index {
  // expected-error @+1 {{COLL1] @nope does not name a dtensor.mesh}}
  %c = dtensor.coord @nope axes = [0] : index
  return %c : index
}

// -----

// COLL1: the symbol names something other than a mesh.
func.func @not_a_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{COLL1] @not_a_mesh does not name a dtensor.mesh}}
  %r = dtensor.all_reduce %x on @not_a_mesh axes = [0] reduce = sum : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// COLL2: empty axes.
func.func @coll2_empty(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{COLL2] needs at least one mesh axis}}
  %r = dtensor.all_reduce %x on @tp axes = [] reduce = sum : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// COLL2: axis beyond the mesh rank.
func.func @coll2_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{COLL2] mesh axis 1 is out of range for the rank-1 mesh @tp}}
  %r = dtensor.all_reduce %x on @tp axes = [1] reduce = sum : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// COLL2: negative axis.
func.func @coll2_negative() -> index {
  // expected-error @+1 {{COLL2] mesh axis -1 is out of range for the rank-1 mesh @tp}}
  %c = dtensor.coord @tp axes = [-1] : index
  return %c : index
}

// -----

dtensor.mesh @m shape = [2, 4]

// COLL2: decreasing axes.
func.func @coll2_order(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{COLL2] mesh axes must be strictly increasing}}
  %r = dtensor.all_reduce %x on @m axes = [1, 0] reduce = sum : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

dtensor.mesh @m shape = [2, 4]

// COLL2: repeated axis.
func.func @coll2_repeat() -> index {
  // expected-error @+1 {{COLL2] mesh axes must be strictly increasing}}
  %c = dtensor.coord @m axes = [0, 0] : index
  return %c : index
}

//===----------------------------------------------------------------------===//
// Placements and layouts
//===----------------------------------------------------------------------===//

// -----

// PL1: negative shard dimension in a standalone placement.
// expected-error @+1 {{PL1] shard dimension must be non-negative, got -1}}
func.func private @pl1() attributes {p = #dtensor.placement<S(-1)>}

// -----

dtensor.mesh @tp shape = [4]

// PL1: negative shard dimension inside a layout.
func.func @pl1_layout(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{PL1] shard dimension must be non-negative, got -2}}
  %y = dtensor.annotate %x layout <@tp, [S(-2)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT1: unknown mesh.
func.func @layout1(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT1] @nope does not name a dtensor.mesh}}
  %y = dtensor.annotate %x layout <@nope, [S(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @m shape = [2, 4]

// LAYOUT2: too few placements.
func.func @layout2_few(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT2] expected 2 placements for mesh @m, got 1}}
  %y = dtensor.annotate %x layout <@m, [S(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT2: too many placements.
func.func @layout2_many(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT2] expected 1 placements for mesh @tp, got 2}}
  %y = dtensor.redistribute %x to <@tp, [S(0), R]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT2: no placements.
func.func @layout2_none(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT2] expected 1 placements for mesh @tp, got 0}}
  %y = dtensor.annotate %x layout <@tp, []> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT3: shard dimension beyond the tensor rank.
func.func @layout3(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{LAYOUT3] placement S(2) is out of range for a rank-2 tensor}}
  %y = dtensor.annotate %x layout <@tp, [S(2)]> : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// LAYOUT4: mixed Partial reductions in a standalone layout.
// expected-error @+1 {{LAYOUT4] mixed Partial reductions P(sum) and P(max) in one layout}}
func.func private @layout4(tensor<8xf32> {dtensor.layout = #dtensor.layout<@m, [P, P(max)]>})

// -----

dtensor.mesh @m shape = [2, 4]

// LAYOUT4: mixed Partial reductions in an op's layout.
func.func @layout4_op(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT4] mixed Partial reductions P(avg) and P(sum) in one layout}}
  %y = dtensor.annotate %x layout <@m, [P(avg), P(sum)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

//===----------------------------------------------------------------------===//
// dtensor.annotate / dtensor.redistribute
//===----------------------------------------------------------------------===//

// -----

dtensor.mesh @tp shape = [4]

// ANN1: result type differs from the operand type.
func.func @ann1(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ANN1] result type 'tensor<4xf32>' differs from operand type 'tensor<8xf32>'}}
  %y = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// RD1: result type differs from the operand type.
func.func @rd1(%x: tensor<8xf32>) -> tensor<8xf16> {
  // expected-error @+1 {{RD1] result type 'tensor<8xf16>' differs from operand type 'tensor<8xf32>'}}
  %y = dtensor.redistribute %x to <@tp, [R]> : tensor<8xf32> -> tensor<8xf16>
  return %y : tensor<8xf16>
}

// -----

dtensor.mesh @a shape = [4]
dtensor.mesh @b shape = [4]

// RD2: different meshes.
func.func @rd2(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{RD2] cannot redistribute from mesh @a to mesh @b}}
  %y = dtensor.redistribute %x from <@a, [S(0)]> to <@b, [S(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @m shape = [2, 4]

// RD3: a shard cannot become Partial.
func.func @rd3(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{RD3] mesh dimension 1: S(1) cannot become a Partial placement}}
  %y = dtensor.redistribute %x from <@m, [R, S(1)]> to <@m, [R, P(sum)]> : tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// RD4: a replicated value cannot become P(product).
func.func @rd4(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{RD4] mesh dimension 0: R cannot become P(product)}}
  %y = dtensor.redistribute %x from <@tp, [R]> to <@tp, [P(product)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// RD5: Partial reduction changes.
func.func @rd5(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{RD5] mesh dimension 0: P(sum) cannot become P(max)}}
  %y = dtensor.redistribute %x from <@tp, [P]> to <@tp, [P(max)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// RD5: P(avg) -> P(sum) divides each part by the group size: not integers
// (P(sum) -> P(avg) multiplies, which is exact).
func.func @rd5_int(%x: tensor<8xi32>) -> tensor<8xi32> {
  %ok = dtensor.redistribute %x from <@tp, [P]> to <@tp, [P(avg)]> : tensor<8xi32>
  // expected-error @+1 {{RD5] mesh dimension 0: P(avg) cannot become P(sum)}}
  %y = dtensor.redistribute %ok from <@tp, [P(avg)]> to <@tp, [P]> : tensor<8xi32>
  return %y : tensor<8xi32>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT1 on the `from` layout of a redistribute.
func.func @rd_from_layout1(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT1] @nope does not name a dtensor.mesh}}
  %y = dtensor.redistribute %x from <@nope, [R]> to <@nope, [S(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT5: a dynamic dimension cannot be sharded (issue 11: partition did
// chunk arithmetic on the dynamic-size sentinel).
func.func @layout5(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{LAYOUT5] placement S(0) shards a dynamic dimension of 'tensor<?x8xf32>'; only static dimensions can be sharded}}
  %y = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT5: the dynamic dim may be replicated, a static dim sharded.
func.func @layout5_ok(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT6: complex numbers have no max (issue 11: failed only at CPU
// lowering).
func.func @layout6_complex(%x: tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>> {
  // expected-error @+1 {{LAYOUT6] placement P(max) is not defined on 'complex<f32>' elements}}
  %y = dtensor.annotate %x layout <@tp, [P(max)]> : tensor<8xcomplex<f32>>
  return %y : tensor<8xcomplex<f32>>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT6: i1 has no sum.
func.func @layout6_i1(%x: tensor<8xi1>) -> tensor<8xi1> {
  // expected-error @+1 {{LAYOUT6] placement P(sum) is not defined on 'i1' elements}}
  %y = dtensor.redistribute %x from <@tp, [R]> to <@tp, [P(sum)]> : tensor<8xi1>
  return %y : tensor<8xi1>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT6: P(max) on i1 (a logical or) and P(sum) on complex are defined.
func.func @layout6_ok(%x: tensor<8xi1>, %z: tensor<8xcomplex<f32>>) -> (tensor<8xi1>, tensor<8xcomplex<f32>>) {
  %y = dtensor.annotate %x layout <@tp, [P(max)]> : tensor<8xi1>
  %w = dtensor.annotate %z layout <@tp, [P(sum)]> : tensor<8xcomplex<f32>>
  return %y, %w : tensor<8xi1>, tensor<8xcomplex<f32>>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT3 on the `to` layout of a redistribute.
func.func @rd_to_layout3(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT3] placement S(1) is out of range for a rank-1 tensor}}
  %y = dtensor.redistribute %x from <@tp, [R]> to <@tp, [S(1)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

//===----------------------------------------------------------------------===//
// dtensor.from_local / dtensor.to_local
//===----------------------------------------------------------------------===//

// -----

dtensor.mesh @tp shape = [4]

// LOCAL1: element types differ.
func.func @local1_elt(%l: tensor<2x16xf16>) -> tensor<8x16xf32> {
  // expected-error @+1 {{LOCAL1] local type 'tensor<2x16xf16>' and global type 'tensor<8x16xf32>' differ in element type or rank}}
  %g = dtensor.from_local %l layout <@tp, [S(0)]> : tensor<2x16xf16> -> tensor<8x16xf32>
  return %g : tensor<8x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LOCAL1: ranks differ.
func.func @local1_rank(%g: tensor<8x16xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{LOCAL1] local type 'tensor<32xf32>' and global type 'tensor<8x16xf32>' differ in element type or rank}}
  %l = dtensor.to_local %g layout <@tp, [S(0)]> : tensor<8x16xf32> -> tensor<32xf32>
  return %l : tensor<32xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LOCAL1: dynamic global type (from_local).
func.func @local1_dynamic_from(%l: tensor<2x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{LOCAL1] global type 'tensor<?x16xf32>' must be static}}
  %g = dtensor.from_local %l layout <@tp, [S(0)]> : tensor<2x16xf32> -> tensor<?x16xf32>
  return %g : tensor<?x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LOCAL1: dynamic global type (to_local).
func.func @local1_dynamic_to(%g: tensor<8x?xf32>) -> tensor<2x?xf32> {
  // expected-error @+1 {{LOCAL1] global type 'tensor<8x?xf32>' must be static}}
  %l = dtensor.to_local %g layout <@tp, [S(0)]> : tensor<8x?xf32> -> tensor<2x?xf32>
  return %l : tensor<2x?xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LOCAL2: uneven shards need a dynamic local size (from_local).
func.func @local2_uneven_from(%l: tensor<2x16xf32>) -> tensor<6x16xf32> {
  // expected-error @+1 {{LOCAL2] dimension 0 of 6 elements is sharded unevenly, so its local size must be dynamic ('?'), got 2}}
  %g = dtensor.from_local %l layout <@tp, [S(0)]> : tensor<2x16xf32> -> tensor<6x16xf32>
  return %g : tensor<6x16xf32>
}

// -----

dtensor.mesh @m shape = [2, 4]

// LOCAL2: uneven nested split (9 / 2 / 4) needs a dynamic local size.
func.func @local2_uneven_to(%g: tensor<4x9xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{LOCAL2] dimension 1 of 9 elements is sharded unevenly, so its local size must be dynamic ('?'), got 1}}
  %l = dtensor.to_local %g layout <@m, [S(1), S(1)]> : tensor<4x9xf32> -> tensor<4x1xf32>
  return %l : tensor<4x1xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LOCAL2: wrong even chunk size (from_local).
func.func @local2_size_from(%l: tensor<4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{LOCAL2] dimension 0 has local size 4 but every process holds 2}}
  %g = dtensor.from_local %l layout <@tp, [S(0)]> : tensor<4x16xf32> -> tensor<8x16xf32>
  return %g : tensor<8x16xf32>
}

// -----

dtensor.mesh @m shape = [2, 4]

// LOCAL2: a replicated dimension keeps its size (to_local).
func.func @local2_size_to(%g: tensor<8x16xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{LOCAL2] dimension 1 has local size 4 but every process holds 16}}
  %l = dtensor.to_local %g layout <@m, [S(0), R]> : tensor<8x16xf32> -> tensor<4x4xf32>
  return %l : tensor<4x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// LAYOUT3 on from_local.
func.func @local_layout3(%l: tensor<2xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{LAYOUT3] placement S(1) is out of range for a rank-1 tensor}}
  %g = dtensor.from_local %l layout <@tp, [S(1)]> : tensor<2xf32> -> tensor<8xf32>
  return %g : tensor<8xf32>
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// -----

dtensor.mesh @tp shape = [4]

// AR1: all_reduce result type differs.
func.func @ar1(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{AR1] result type 'tensor<8xf32>' differs from operand type 'tensor<4xf32>'}}
  %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// AR1: all_reduce_coalesced result type differs.
func.func @ar1_coalesced(%x: tensor<4xf32>, %y: tensor<2xi32>) {
  // expected-error @+1 {{AR1] result type 'tensor<2xf32>' differs from operand type 'tensor<2xi32>'}}
  %r:2 = dtensor.all_reduce_coalesced %x, %y on @tp axes = [0] reduce = sum
      : tensor<4xf32>, tensor<2xi32> -> tensor<4xf32>, tensor<2xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AG1: gather_dim out of range.
func.func @ag1(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{AG1] gather_dim 2 is out of range for 'tensor<4x4xf32>'}}
  %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = 2 : tensor<4x4xf32> -> tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// AG1: negative gather_dim.
func.func @ag1_negative(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{AG1] gather_dim -1 is out of range for 'tensor<4x4xf32>'}}
  %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = -1 : tensor<4x4xf32> -> tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// AG2: element type differs.
func.func @ag2_type(%x: tensor<4x4xf32>) -> tensor<16x4xf16> {
  // expected-error @+1 {{AG2] operand 'tensor<4x4xf32>' and result 'tensor<16x4xf16>' differ in element type or rank}}
  %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = 0 : tensor<4x4xf32> -> tensor<16x4xf16>
  return %g : tensor<16x4xf16>
}

// -----

dtensor.mesh @tp shape = [4]

// AG2: rank differs.
func.func @ag2_rank(%x: tensor<4x4xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{AG2] operand 'tensor<4x4xf32>' and result 'tensor<64xf32>' differ in element type or rank}}
  %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = 0 : tensor<4x4xf32> -> tensor<64xf32>
  return %g : tensor<64xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// AG2: a non-gathered dimension changes.
func.func @ag2_dim(%x: tensor<4x4xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{AG2] operand 'tensor<4x4xf32>' and result 'tensor<16x8xf32>' differ in dimension 1}}
  %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = 0 : tensor<4x4xf32> -> tensor<16x8xf32>
  return %g : tensor<16x8xf32>
}

// -----

dtensor.mesh @m shape = [2, 4]

// AG3: the gathered size is not group size x operand size.
func.func @ag3(%x: tensor<4x4xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{AG3] expected result size 32 along dimension 0 (4 x group size 8), got 16}}
  %g = dtensor.all_gather %x on @m axes = [0, 1] gather_dim = 0 : tensor<4x4xf32> -> tensor<16x4xf32>
  return %g : tensor<16x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// RS1: scatter_dim out of range.
func.func @rs1(%x: tensor<16xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{RS1] scatter_dim 1 is out of range for 'tensor<16xf32>'}}
  %s = dtensor.reduce_scatter %x on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<16xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// RS2: element type or rank differs.
func.func @rs2_type(%x: tensor<16x8xf32>) -> tensor<4x8xi32> {
  // expected-error @+1 {{RS2] operand 'tensor<16x8xf32>' and result 'tensor<4x8xi32>' differ in element type or rank}}
  %s = dtensor.reduce_scatter %x on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<16x8xf32> -> tensor<4x8xi32>
  return %s : tensor<4x8xi32>
}

// -----

dtensor.mesh @tp shape = [4]

// RS2: a non-scattered dimension changes.
func.func @rs2_dim(%x: tensor<16x8xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{RS2] operand 'tensor<16x8xf32>' and result 'tensor<4x2xf32>' differ in dimension 1}}
  %s = dtensor.reduce_scatter %x on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<16x8xf32> -> tensor<4x2xf32>
  return %s : tensor<4x2xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// RS3: the operand size is not group size x result size.
func.func @rs3(%x: tensor<16x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{RS3] operand size 16 along dimension 0 must be the group size 4 times the result size 8}}
  %s = dtensor.reduce_scatter %x on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<16x8xf32> -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2A1: split_dim out of range.
func.func @a2a1_split(%x: tensor<2x16xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{A2A1] split_dim 2 is out of range for 'tensor<2x16xf32>'}}
  %t = dtensor.all_to_all %x on @tp axes = [0] split_dim = 2 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
  return %t : tensor<8x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2A1: concat_dim out of range.
func.func @a2a1_concat(%x: tensor<2x16xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{A2A1] concat_dim -1 is out of range for 'tensor<2x16xf32>'}}
  %t = dtensor.all_to_all %x on @tp axes = [0] split_dim = 1 concat_dim = -1 : tensor<2x16xf32> -> tensor<8x4xf32>
  return %t : tensor<8x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2A2: element type or rank differs.
func.func @a2a2_type(%x: tensor<2x16xf32>) -> tensor<8x4x1xf32> {
  // expected-error @+1 {{A2A2] operand 'tensor<2x16xf32>' and result 'tensor<8x4x1xf32>' differ in element type or rank}}
  %t = dtensor.all_to_all %x on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4x1xf32>
  return %t : tensor<8x4x1xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2A2: a dimension other than split_dim and concat_dim changes.
func.func @a2a2_dim(%x: tensor<2x16x3xf32>) -> tensor<8x4x6xf32> {
  // expected-error @+1 {{A2A2] operand 'tensor<2x16x3xf32>' and result 'tensor<8x4x6xf32>' differ in dimension 2}}
  %t = dtensor.all_to_all %x on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16x3xf32> -> tensor<8x4x6xf32>
  return %t : tensor<8x4x6xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2A3: split_dim == concat_dim must keep the size.
func.func @a2a3_same(%x: tensor<2x16xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{A2A3] with split_dim == concat_dim the size along dimension 1 must not change}}
  %t = dtensor.all_to_all %x on @tp axes = [0] split_dim = 1 concat_dim = 1 : tensor<2x16xf32> -> tensor<2x4xf32>
  return %t : tensor<2x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2A3: the split dimension is not divided by the group size.
func.func @a2a3_split(%x: tensor<2x16xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{A2A3] operand size 16 along dimension 1 must be the group size 4 times the result size 8}}
  %t = dtensor.all_to_all %x on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x8xf32>
  return %t : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2A3: the concat dimension is not multiplied by the group size.
func.func @a2a3_concat(%x: tensor<2x16xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{A2A3] expected result size 8 along dimension 0 (2 x group size 4), got 4}}
  %t = dtensor.all_to_all %x on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<4x4xf32>
  return %t : tensor<4x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2AV1: rank-0 operand.
func.func @a2av1_rank0(%x: tensor<f32>, %s: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{A2AV1] operand 'tensor<f32>' has rank 0}}
  %t = dtensor.all_to_all_v %x, %s, %s on @tp axes = [0] : tensor<f32>, tensor<4xi64>, tensor<4xi64> -> tensor<f32>
  return %t : tensor<f32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2AV1: a dimension other than 0 changes.
func.func @a2av1_dim(%x: tensor<6x8xf32>, %s: tensor<4xi64>) -> tensor<?x4xf32> {
  // expected-error @+1 {{A2AV1] operand 'tensor<6x8xf32>' and result 'tensor<?x4xf32>' differ in dimension 1}}
  %t = dtensor.all_to_all_v %x, %s, %s on @tp axes = [0] : tensor<6x8xf32>, tensor<4xi64>, tensor<4xi64> -> tensor<?x4xf32>
  return %t : tensor<?x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2AV1: element type differs.
func.func @a2av1_type(%x: tensor<6x8xf32>, %s: tensor<4xi64>) -> tensor<?x8xf64> {
  // expected-error @+1 {{A2AV1] operand 'tensor<6x8xf32>' and result 'tensor<?x8xf64>' differ in element type or rank}}
  %t = dtensor.all_to_all_v %x, %s, %s on @tp axes = [0] : tensor<6x8xf32>, tensor<4xi64>, tensor<4xi64> -> tensor<?x8xf64>
  return %t : tensor<?x8xf64>
}

// -----

dtensor.mesh @tp shape = [4]

// A2AV2: a static result size along dim 0.
func.func @a2av2(%x: tensor<6x8xf32>, %s: tensor<4xi64>) -> tensor<6x8xf32> {
  // expected-error @+1 {{A2AV2] result size along dimension 0 must be dynamic (it is the sum of recv_sizes), got 'tensor<6x8xf32>'}}
  %t = dtensor.all_to_all_v %x, %s, %s on @tp axes = [0] : tensor<6x8xf32>, tensor<4xi64>, tensor<4xi64> -> tensor<6x8xf32>
  return %t : tensor<6x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2AV3: one size per group member.
func.func @a2av3_count(%x: tensor<6x8xf32>, %s: tensor<4xi64>, %r: tensor<2xi64>) -> tensor<?x8xf32> {
  // expected-error @+1 {{A2AV3] recv_sizes must be tensor<4xi64> (one size per group member), got 'tensor<2xi64>'}}
  %t = dtensor.all_to_all_v %x, %s, %r on @tp axes = [0] : tensor<6x8xf32>, tensor<4xi64>, tensor<2xi64> -> tensor<?x8xf32>
  return %t : tensor<?x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2AV3: sizes are i64.
func.func @a2av3_type(%x: tensor<6x8xf32>, %s: tensor<4xi32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{A2AV3] send_sizes must be tensor<4xi64> (one size per group member), got 'tensor<4xi32>'}}
  %t = dtensor.all_to_all_v %x, %s, %s on @tp axes = [0] : tensor<6x8xf32>, tensor<4xi32>, tensor<4xi32> -> tensor<?x8xf32>
  return %t : tensor<?x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A2AV3: sizes of a dynamic count.
func.func @a2av3_dynamic(%x: tensor<6x8xf32>, %s: tensor<?xi64>) -> tensor<?x8xf32> {
  // expected-error @+1 {{A2AV3] send_sizes must be tensor<4xi64> (one size per group member), got 'tensor<?xi64>'}}
  %t = dtensor.all_to_all_v %x, %s, %s on @tp axes = [0] : tensor<6x8xf32>, tensor<?xi64>, tensor<?xi64> -> tensor<?x8xf32>
  return %t : tensor<?x8xf32>
}

// -----

// RM1: ranks.
func.func @rm1_rank(%x: tensor<16xf32>, %ids: tensor<16x1xi64>, %w: tensor<4x8x8xf32>) -> tensor<16x1x8xf32> {
  // expected-error @+1 {{RM1] expected x: T x H, ids: T x K of signless integers, w: E x H x F and result T x K x F, got 'tensor<16xf32>', 'tensor<16x1xi64>', 'tensor<4x8x8xf32>' -> 'tensor<16x1x8xf32>'}}
  %y = dtensor.routed_matmul %x, %ids, %w : tensor<16xf32>, tensor<16x1xi64>, tensor<4x8x8xf32> -> tensor<16x1x8xf32>
  return %y : tensor<16x1x8xf32>
}

// -----

// RM1: ids of floats.
func.func @rm1_ids(%x: tensor<16x8xf32>, %ids: tensor<16x1xf32>, %w: tensor<4x8x8xf32>) -> tensor<16x1x8xf32> {
  // expected-error @+1 {{RM1] expected x: T x H, ids: T x K of signless integers}}
  %y = dtensor.routed_matmul %x, %ids, %w : tensor<16x8xf32>, tensor<16x1xf32>, tensor<4x8x8xf32> -> tensor<16x1x8xf32>
  return %y : tensor<16x1x8xf32>
}

// -----

// RM2: element types.
func.func @rm2(%x: tensor<16x8xf32>, %ids: tensor<16x1xi64>, %w: tensor<4x8x8xf16>) -> tensor<16x1x8xf32> {
  // expected-error @+1 {{RM2] x, w and the result must have one element type, got 'f32', 'f16' and 'f32'}}
  %y = dtensor.routed_matmul %x, %ids, %w : tensor<16x8xf32>, tensor<16x1xi64>, tensor<4x8x8xf16> -> tensor<16x1x8xf32>
  return %y : tensor<16x1x8xf32>
}

// -----

// RM3: hidden sizes differ.
func.func @rm3_h(%x: tensor<16x8xf32>, %ids: tensor<16x1xi64>, %w: tensor<4x6x8xf32>) -> tensor<16x1x8xf32> {
  // expected-error @+1 {{RM3] sizes of H (x dim 1, w dim 1) differ: 8 vs 6}}
  %y = dtensor.routed_matmul %x, %ids, %w : tensor<16x8xf32>, tensor<16x1xi64>, tensor<4x6x8xf32> -> tensor<16x1x8xf32>
  return %y : tensor<16x1x8xf32>
}

// -----

// RM3: token counts differ.
func.func @rm3_t(%x: tensor<16x8xf32>, %ids: tensor<12x1xi64>, %w: tensor<4x8x8xf32>) -> tensor<16x1x8xf32> {
  // expected-error @+1 {{RM3] sizes of T (x dim 0, ids dim 0) differ: 16 vs 12}}
  %y = dtensor.routed_matmul %x, %ids, %w : tensor<16x8xf32>, tensor<12x1xi64>, tensor<4x8x8xf32> -> tensor<16x1x8xf32>
  return %y : tensor<16x1x8xf32>
}

// -----

// RM4: a dynamic number of experts.
func.func @rm4(%x: tensor<16x8xf32>, %ids: tensor<16x2xi32>, %w: tensor<?x8x8xf32>) -> tensor<16x2x8xf32> {
  // expected-error @+1 {{RM4] the number of experts (w dim 0) must be static and positive, got 'tensor<?x8x8xf32>'}}
  %y = dtensor.routed_matmul %x, %ids, %w : tensor<16x8xf32>, tensor<16x2xi32>, tensor<?x8x8xf32> -> tensor<16x2x8xf32>
  return %y : tensor<16x2x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// PERM1: result type differs.
func.func @perm1(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{PERM1] result type 'tensor<4xf64>' differs from operand type 'tensor<4xf32>'}}
  %p = dtensor.permute %x on @tp axes = [0] perm = [1, 2, 3, 0] : tensor<4xf32> -> tensor<4xf64>
  return %p : tensor<4xf64>
}

// -----

dtensor.mesh @tp shape = [4]

// PERM2: wrong number of entries.
func.func @perm2_size(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{PERM2] perm has 3 entries for a group of 4}}
  %p = dtensor.permute %x on @tp axes = [0] perm = [1, 2, 0] : tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// PERM2: repeated target.
func.func @perm2_repeat(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{PERM2] perm is not a permutation of 0..3}}
  %p = dtensor.permute %x on @tp axes = [0] perm = [1, 1, 2, 3] : tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// PERM2: target out of range.
func.func @perm2_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{PERM2] perm is not a permutation of 0..3}}
  %p = dtensor.permute %x on @tp axes = [0] perm = [1, 2, 3, 4] : tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// PERM2: negative target.
func.func @perm2_negative(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{PERM2] perm is not a permutation of 0..3}}
  %p = dtensor.permute %x on @tp axes = [0] perm = [-1, 0, 1, 2] : tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// BC1: result type differs.
func.func @bc1(%x: tensor<4xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{BC1] result type 'tensor<?xf32>' differs from operand type 'tensor<4xf32>'}}
  %b = dtensor.broadcast %x on @tp axes = [0] root = 0 : tensor<4xf32> -> tensor<?xf32>
  return %b : tensor<?xf32>
}

// -----

dtensor.mesh @m shape = [2, 4]

// BC2: root beyond the group.
func.func @bc2(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{BC2] root 2 is not in the group of 2}}
  %b = dtensor.broadcast %x on @m axes = [0] root = 2 : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// BC2: negative root.
func.func @bc2_negative(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{BC2] root -1 is not in the group of 4}}
  %b = dtensor.broadcast %x on @tp axes = [0] root = -1 : tensor<4xf32>
  return %b : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Coalesced collectives
//===----------------------------------------------------------------------===//

// -----

dtensor.mesh @tp shape = [4]

// COAL1: no operand (all_reduce_coalesced, generic form).
func.func @coal1_empty() {
  // expected-error @+1 {{COAL1] needs at least one operand}}
  "dtensor.all_reduce_coalesced"() <{mesh = @tp, mesh_axes = array<i64: 0>, reduce = #dtensor<reduce sum>}> : () -> ()
  return
}

// -----

dtensor.mesh @tp shape = [4]

// COAL1: no operand (all_gather_coalesced, generic form).
func.func @coal1_empty_gather() {
  // expected-error @+1 {{COAL1] needs at least one operand}}
  "dtensor.all_gather_coalesced"() <{mesh = @tp, mesh_axes = array<i64: 0>, gather_dims = array<i64>}> : () -> ()
  return
}

// -----

dtensor.mesh @tp shape = [4]

// COAL1: fewer results than operands.
func.func @coal1_results(%x: tensor<4xf32>, %y: tensor<8xf32>) {
  // expected-error @+1 {{COAL1] expected 2 results, got 1}}
  %r = dtensor.all_reduce_coalesced %x, %y on @tp axes = [0] reduce = sum
      : tensor<4xf32>, tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// COAL1: more results than operands (reduce_scatter_coalesced).
func.func @coal1_results_rs(%x: tensor<8xf32>) {
  // expected-error @+1 {{COAL1] expected 1 results, got 2}}
  %r:2 = dtensor.reduce_scatter_coalesced %x on @tp axes = [0] scatter_dims = [0] reduce = sum
      : tensor<8xf32> -> tensor<2xf32>, tensor<2xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// COAL1: gather_dims entries do not match the operands.
func.func @coal1_gather_dims(%a: tensor<2x4xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{COAL1] expected 2 dimension entries, got 1}}
  %r:2 = dtensor.all_gather_coalesced %a, %b on @tp axes = [0] gather_dims = [0]
      : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<8x4xf32>, tensor<16x2xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// COAL1: scatter_dims entries do not match the operands.
func.func @coal1_scatter_dims(%a: tensor<8xf32>) {
  // expected-error @+1 {{COAL1] expected 1 dimension entries, got 2}}
  %r = dtensor.reduce_scatter_coalesced %a on @tp axes = [0] scatter_dims = [0, 0] reduce = sum
      : tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AG1 on the second operand of all_gather_coalesced.
func.func @coal_ag1(%a: tensor<2x4xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{AG1] gather_dim 2 is out of range for 'tensor<4x2xf32>'}}
  %r:2 = dtensor.all_gather_coalesced %a, %b on @tp axes = [0] gather_dims = [0, 2]
      : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<8x4xf32>, tensor<4x8xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AG2 in all_gather_coalesced.
func.func @coal_ag2(%a: tensor<2x4xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{AG2] operand 'tensor<4x2xf32>' and result 'tensor<4x8xf16>' differ in element type or rank}}
  %r:2 = dtensor.all_gather_coalesced %a, %b on @tp axes = [0] gather_dims = [0, 1]
      : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<8x4xf32>, tensor<4x8xf16>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AG3 in all_gather_coalesced.
func.func @coal_ag3(%a: tensor<2x4xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{AG3] expected result size 8 along dimension 0 (2 x group size 4), got 4}}
  %r:2 = dtensor.all_gather_coalesced %a, %b on @tp axes = [0] gather_dims = [0, 1]
      : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<4x4xf32>, tensor<4x8xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// RS1 in reduce_scatter_coalesced.
func.func @coal_rs1(%a: tensor<8xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{RS1] scatter_dim 1 is out of range for 'tensor<8xf32>'}}
  %r:2 = dtensor.reduce_scatter_coalesced %a, %b on @tp axes = [0] scatter_dims = [1, 0] reduce = sum
      : tensor<8xf32>, tensor<4x2xf32> -> tensor<2xf32>, tensor<1x2xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// RS2 in reduce_scatter_coalesced.
func.func @coal_rs2(%a: tensor<8xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{RS2] operand 'tensor<4x2xf32>' and result 'tensor<1x4xf32>' differ in dimension 1}}
  %r:2 = dtensor.reduce_scatter_coalesced %a, %b on @tp axes = [0] scatter_dims = [0, 0] reduce = sum
      : tensor<8xf32>, tensor<4x2xf32> -> tensor<2xf32>, tensor<1x4xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// RS3 in reduce_scatter_coalesced.
func.func @coal_rs3(%a: tensor<8xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{RS3] operand size 4 along dimension 0 must be the group size 4 times the result size 2}}
  %r:2 = dtensor.reduce_scatter_coalesced %a, %b on @tp axes = [0] scatter_dims = [0, 0] reduce = sum
      : tensor<8xf32>, tensor<4x2xf32> -> tensor<2xf32>, tensor<2x2xf32>
  return
}

//===----------------------------------------------------------------------===//
// dtensor.all_gather_matmul
//===----------------------------------------------------------------------===//

// -----

dtensor.mesh @tp shape = [4]

// AGMM1: A of rank 1.
func.func @agmm1_rank(%a: tensor<16xf32>, %b: tensor<16x32xf32>) {
  // expected-error @+1 {{AGMM1] A must have rank 2 or 3, got 'tensor<16xf32>'}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
      : tensor<16xf32>, tensor<16x32xf32> -> tensor<64xf32>, tensor<32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AGMM1: A of rank 4.
func.func @agmm1_rank4(%a: tensor<1x2x2x16xf32>, %b: tensor<16x32xf32>) {
  // expected-error @+1 {{AGMM1] A must have rank 2 or 3, got 'tensor<1x2x2x16xf32>'}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
      : tensor<1x2x2x16xf32>, tensor<16x32xf32> -> tensor<4x2x2x16xf32>, tensor<4x2x2x32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AGMM1: no B operand (generic form).
func.func @agmm1_no_b(%a: tensor<2x16xf32>) {
  // expected-error @+1 {{AGMM1] needs at least one B operand}}
  %g = "dtensor.all_gather_matmul"(%a) <{mesh = @tp, mesh_axes = array<i64: 0>, gather_dim = 0 : i64}>
      : (tensor<2x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AGMM1: B of rank 3.
func.func @agmm1_b_rank(%a: tensor<2x16xf32>, %b: tensor<16x32x1xf32>) {
  // expected-error @+1 {{AGMM1] B must be a rank-2 tensor of 'f32', got 'tensor<16x32x1xf32>'}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<16x32x1xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AGMM1: the second B has another element type.
func.func @agmm1_b_type(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>, %b2: tensor<16x8xbf16>) {
  // expected-error @+1 {{AGMM1] B must be a rank-2 tensor of 'f32', got 'tensor<16x8xbf16>'}}
  %g, %c:2 = dtensor.all_gather_matmul %a, %b, %b2 on @tp axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<16x32xf32>, tensor<16x8xbf16> -> tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x8xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AGMM1: contracted sizes disagree.
func.func @agmm1_contract(%a: tensor<2x16xf32>, %b: tensor<8x32xf32>) {
  // expected-error @+1 {{AGMM1] A 'tensor<2x16xf32>' and B 'tensor<8x32xf32>' disagree on the contracted size}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<8x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AGMM2: gather_dim is the contracted dimension.
func.func @agmm2_last(%a: tensor<3x2x16xf32>, %b: tensor<16x32xf32>) {
  // expected-error @+1 {{AGMM2] gather_dim 2 must be a non-contracted dimension of A (0..1)}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 2
      : tensor<3x2x16xf32>, tensor<16x32xf32> -> tensor<3x2x64xf32>, tensor<3x2x32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AGMM2: negative gather_dim.
func.func @agmm2_negative(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>) {
  // expected-error @+1 {{AGMM2] gather_dim -1 must be a non-contracted dimension of A (0..0)}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = -1
      : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AGMM3: gathered A has the wrong size.
func.func @agmm3(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>) {
  // expected-error @+1 {{AGMM3] gathered A must be 'tensor<8x16xf32>', got 'tensor<2x16xf32>'}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<2x16xf32>, tensor<8x32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AGMM3: gathered A has the wrong element type.
func.func @agmm3_type(%a: tensor<3x2x16xf32>, %b: tensor<16x32xf32>) {
  // expected-error @+1 {{AGMM3] gathered A must be 'tensor<3x8x16xf32>', got 'tensor<3x8x16xf16>'}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 1
      : tensor<3x2x16xf32>, tensor<16x32xf32> -> tensor<3x8x16xf16>, tensor<3x8x32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AGMM4: fewer matmul results than Bs.
func.func @agmm4_count(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>, %b2: tensor<16x8xf32>) {
  // expected-error @+1 {{AGMM4] expected 2 matmul results, got 1}}
  %g, %c = dtensor.all_gather_matmul %a, %b, %b2 on @tp axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<16x32xf32>, tensor<16x8xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// AGMM4: a matmul result has the wrong shape.
func.func @agmm4_shape(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>, %b2: tensor<16x8xf32>) {
  // expected-error @+1 {{AGMM4] matmul result must be 'tensor<8x8xf32>', got 'tensor<8x32xf32>'}}
  %g, %c:2 = dtensor.all_gather_matmul %a, %b, %b2 on @tp axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<16x32xf32>, tensor<16x8xf32> -> tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x32xf32>
  return
}

//===----------------------------------------------------------------------===//
// dtensor.matmul_reduce_scatter
//===----------------------------------------------------------------------===//

// -----

dtensor.mesh @tp shape = [4]

// MMRS1: A of rank 1.
func.func @mmrs1_rank(%a: tensor<4xf32>, %b: tensor<4x32xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{MMRS1] A must have rank 2 or 3, got 'tensor<4xf32>'}}
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0 reduce = sum
      : tensor<4xf32>, tensor<4x32xf32> -> tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// MMRS1: B of rank 1.
func.func @mmrs1_b_rank(%a: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{MMRS1] B must be a rank-2 tensor of 'f32', got 'tensor<4xf32>'}}
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0 reduce = sum
      : tensor<8x4xf32>, tensor<4xf32> -> tensor<2x32xf32>
  return %c : tensor<2x32xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// MMRS1: B has another element type.
func.func @mmrs1_b_type(%a: tensor<8x4xf32>, %b: tensor<4x32xf16>) -> tensor<2x32xf32> {
  // expected-error @+1 {{MMRS1] B must be a rank-2 tensor of 'f32', got 'tensor<4x32xf16>'}}
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0 reduce = sum
      : tensor<8x4xf32>, tensor<4x32xf16> -> tensor<2x32xf32>
  return %c : tensor<2x32xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// MMRS1: contracted sizes disagree.
func.func @mmrs1_contract(%a: tensor<2x8x4xf32>, %b: tensor<8x32xf32>) -> tensor<2x2x32xf32> {
  // expected-error @+1 {{MMRS1] A 'tensor<2x8x4xf32>' and B 'tensor<8x32xf32>' disagree on the contracted size}}
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 1 reduce = sum
      : tensor<2x8x4xf32>, tensor<8x32xf32> -> tensor<2x2x32xf32>
  return %c : tensor<2x2x32xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// MMRS2: scatter_dim out of range.
func.func @mmrs2(%a: tensor<8x4xf32>, %b: tensor<4x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{MMRS2] scatter_dim 2 is out of range for the rank-2 product}}
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 2 reduce = sum
      : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<8x32xf32>
  return %c : tensor<8x32xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// MMRS2: negative scatter_dim.
func.func @mmrs2_negative(%a: tensor<8x4xf32>, %b: tensor<4x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{MMRS2] scatter_dim -1 is out of range for the rank-2 product}}
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = -1 reduce = sum
      : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<8x32xf32>
  return %c : tensor<8x32xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// MMRS3: the product size is not divisible by the group size.
func.func @mmrs3_divisible(%a: tensor<6x4xf32>, %b: tensor<4x32xf32>) -> tensor<1x32xf32> {
  // expected-error @+1 {{MMRS3] product size 6 along dimension 0 is not divisible by the group size 4}}
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0 reduce = sum
      : tensor<6x4xf32>, tensor<4x32xf32> -> tensor<1x32xf32>
  return %c : tensor<1x32xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// MMRS3: the result has the wrong shape.
func.func @mmrs3_shape(%a: tensor<8x4xf32>, %b: tensor<4x32xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{MMRS3] result must be 'tensor<2x32xf32>', got 'tensor<8x8xf32>'}}
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0 reduce = sum
      : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// MMRS4: reduction other than sum or avg.
func.func @mmrs4(%a: tensor<8x4xf32>, %b: tensor<4x32xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{MMRS4] reduce must be sum or avg, got max}}
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0 reduce = max
      : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<2x32xf32>
  return %c : tensor<2x32xf32>
}

//===----------------------------------------------------------------------===//
// dtensor.async_start / dtensor.wait
//===----------------------------------------------------------------------===//

// -----

dtensor.mesh @tp shape = [4]

// ASYNC1: two collectives in the body.
func.func @async1_two(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ASYNC1] body must hold exactly one collective followed by dtensor.yield}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    %s = dtensor.all_reduce %r on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %s : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return %y : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC1: the body op is not a collective.
func.func @async1_not_collective(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ASYNC1] body must hold exactly one collective followed by dtensor.yield}}
  %f = dtensor.async_start {
    %r = arith.addf %x, %x : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return %y : tensor<4xf32>
}

// -----

// ASYNC1: only a yield in the body.
func.func @async1_no_collective(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ASYNC1] body must hold exactly one collective followed by dtensor.yield}}
  %f = dtensor.async_start {
    dtensor.yield %x : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return %y : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC2: the yield returns another value.
func.func @async2_value(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ASYNC2] dtensor.yield must return the results of 'dtensor.all_reduce' in order}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %x : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return %y : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC2: the yield swaps the results.
func.func @async2_order(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{ASYNC2] dtensor.yield must return the results of 'dtensor.all_reduce_coalesced' in order}}
  %f:2 = dtensor.async_start {
    %r:2 = dtensor.all_reduce_coalesced %x, %y on @tp axes = [0] reduce = sum : tensor<4xf32>, tensor<4xf32>
    dtensor.yield %r#1, %r#0 : tensor<4xf32>, tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>, !dtensor.future<tensor<4xf32>>
  %a = dtensor.wait %f#0 : !dtensor.future<tensor<4xf32>>
  %b = dtensor.wait %f#1 : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC2: the yield returns only some of the results.
func.func @async2_partial(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>) {
  // expected-error @+1 {{ASYNC2] dtensor.yield must return the results of 'dtensor.all_gather_matmul' in order}}
  %f = dtensor.async_start {
    %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
        : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
    dtensor.yield %c : tensor<8x32xf32>
  } : !dtensor.future<tensor<8x32xf32>>
  %w = dtensor.wait %f : !dtensor.future<tensor<8x32xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC3: more futures than yielded values.
func.func @async3_more(%x: tensor<4xf32>) {
  // expected-error @+1 {{ASYNC3] expected 1 futures, got 2}}
  %f:2 = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>, !dtensor.future<tensor<4xf32>>
  %a = dtensor.wait %f#0 : !dtensor.future<tensor<4xf32>>
  %b = dtensor.wait %f#1 : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC3: no future at all (generic form).
func.func @async3_none(%x: tensor<4xf32>) {
  // expected-error @+1 {{ASYNC3] expected 1 futures, got 0}}
  "dtensor.async_start"() ({
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  }) : () -> ()
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC3: the future holds another type.
func.func @async3_type(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{ASYNC3] future type '!dtensor.future<tensor<8xf32>>' does not hold 'tensor<4xf32>'}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<8xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<8xf32>>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC4: the future is never waited on.
func.func @async4_unused(%x: tensor<4xf32>) {
  // expected-error @+1 {{ASYNC4] future #0 must be waited exactly once on every path: it is never waited}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC4: the future is waited on twice.
func.func @async4_twice(%x: tensor<4xf32>) {
  // expected-error @+1 {{ASYNC4] future #0 must be waited exactly once on every path: it has more than one use}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %a = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  %b = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC4: the second future escapes instead of being waited on.
func.func @async4_escape(%x: tensor<4xf32>, %y: tensor<8xf32>) -> !dtensor.future<tensor<8xf32>> {
  // expected-error @+1 {{ASYNC4] future #1 must be waited exactly once on every path: 'func.return' neither waits for it nor hands it on (scf.for, scf.while, scf.if yields)}}
  %f:2 = dtensor.async_start {
    %r:2 = dtensor.all_reduce_coalesced %x, %y on @tp axes = [0] reduce = sum : tensor<4xf32>, tensor<8xf32>
    dtensor.yield %r#0, %r#1 : tensor<4xf32>, tensor<8xf32>
  } : !dtensor.future<tensor<4xf32>>, !dtensor.future<tensor<8xf32>>
  %a = dtensor.wait %f#0 : !dtensor.future<tensor<4xf32>>
  return %f#1 : !dtensor.future<tensor<8xf32>>
}

// -----

// WAIT1: the future is a block argument, not an async_start result.
func.func @wait1(%f: !dtensor.future<tensor<4xf32>>) -> tensor<4xf32> {
  // expected-error @+1 {{WAIT1] the future must be a result of dtensor.async_start, directly or through scf.for, scf.while or scf.if}}
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return %y : tensor<4xf32>
}

// -----

// WAIT1: a loop hands on a function argument's future (through its init).
func.func @wait1_loop(%f: !dtensor.future<tensor<4xf32>>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%g = %f)
      -> !dtensor.future<tensor<4xf32>> {
    scf.yield %g : !dtensor.future<tensor<4xf32>>
  }
  // expected-error @+1 {{WAIT1] the future must be a result of dtensor.async_start, directly or through scf.for, scf.while or scf.if}}
  %y = dtensor.wait %r : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC4: a future waited inside a loop body it was not handed into: every
// iteration would wait it.
func.func @async4_nested_use(%x: tensor<4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{ASYNC4] future #0 must be waited exactly once on every path: it is used in a nested region (hand it into a loop as an init operand)}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  scf.for %i = %c0 to %n step %c1 {
    %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  }
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC4: the loop-carried future is waited in the body but not replaced by
// a new one: the next iteration would wait it again.
func.func @async4_loop_twice(%x: tensor<4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{ASYNC4] future #0 must be waited exactly once on every path: it has more than one use}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  // expected-note @+1 {{where it is handed on to}}
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%g = %f)
      -> !dtensor.future<tensor<4xf32>> {
    %y = dtensor.wait %g : !dtensor.future<tensor<4xf32>>
    scf.yield %g : !dtensor.future<tensor<4xf32>>
  }
  %z = dtensor.wait %l : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC4: the loop's last future is never waited after the loop.
func.func @async4_loop_result(%x: tensor<4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{ASYNC4] future #0 must be waited exactly once on every path: it is never waited}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  // expected-note @+1 {{where it is handed on to}}
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%g = %f)
      -> !dtensor.future<tensor<4xf32>> {
    scf.yield %g : !dtensor.future<tensor<4xf32>>
  }
  return
}

// -----

dtensor.mesh @tp shape = [4]

// ASYNC4: an scf.while's condition hands the future on to the after
// region, which drops it (and so every future its yield brings back).
func.func @async4_while(%x: tensor<4xf32>, %c: i1) {
  // expected-error @+1 {{ASYNC4] future #0 must be waited exactly once on every path: it is never waited}}
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %l = scf.while (%g = %f) : (!dtensor.future<tensor<4xf32>>)
      -> !dtensor.future<tensor<4xf32>> {
    scf.condition(%c) %g : !dtensor.future<tensor<4xf32>>
  } do {
  // expected-note @+1 {{where it is handed on to}}
  ^bb0(%h: !dtensor.future<tensor<4xf32>>):
    %g2 = dtensor.async_start {
      %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
      dtensor.yield %r : tensor<4xf32>
    } : !dtensor.future<tensor<4xf32>>
    scf.yield %g2 : !dtensor.future<tensor<4xf32>>
  }
  %z = dtensor.wait %l : !dtensor.future<tensor<4xf32>>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// WAIT2: the result type is not the future's value type.
func.func @wait2(%x: tensor<4xf32>) -> tensor<?xf32> {
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  // expected-error @+1 {{WAIT2] result type 'tensor<?xf32>' differs from the future's value type 'tensor<4xf32>'}}
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>> -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// MESH1: process count overflow
// expected-error @+1 {{MESH1] more than 1048576 processes (2^20), the limit for a mesh}}
dtensor.mesh @huge shape = [4611686018427387904, 4]

// -----

// MESH1: a mesh over the resource limit is rejected before any work
// proportional to its size (issue 11: a 10^9-rank mesh took >10 s).
// expected-error @+1 {{MESH1] more than 1048576 processes (2^20), the limit for a mesh}}
dtensor.mesh @big shape = [1000000000]

// -----

// MESH1: the limit itself is accepted.
dtensor.mesh @limit shape = [1024, 1024]

// -----

//===----------------------------------------------------------------------===//
// #dtensor.target
//===----------------------------------------------------------------------===//

// expected-error@+1 {{[TG1] unknown backend 'tpu' (expected cpu or cuda)}}
module attributes {dtensor.target = #dtensor.target<tpu, "h200">} {}

// -----

// expected-error@+1 {{[TG2] unknown hardware preset 'a100' (expected h100, h200 or cpu)}}
module attributes {dtensor.target = #dtensor.target<cuda, "a100">} {}

// -----

// expected-error@+1 {{[TG3] 'chip' is only for the cuda backend}}
module attributes {dtensor.target = #dtensor.target<cpu, "h200", chip = "sm_90">} {}

// -----

// expected-error@+1 {{[TG3] chip 'hopper' is not of the form sm_<digits>}}
module attributes {dtensor.target = #dtensor.target<cuda, "h200", chip = "hopper">} {}

// -----

// expected-error@+1 {{[TG4] 'dtensor.target' belongs on a builtin.module}}
func.func @f() attributes {dtensor.target = #dtensor.target<cpu, "h200">} {
  return
}

// -----

// expected-error@+1 {{[TG4] 'dtensor.target' must be a #dtensor.target attribute}}
module attributes {dtensor.target = "cuda"} {}
