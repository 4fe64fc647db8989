// RUN: split-file %s %t
// RUN: dtensor-opt %t/steps.mlir -split-input-file --dtensor-partition | FileCheck %t/steps.mlir
// RUN: dtensor-opt %t/ops.mlir -split-input-file --dtensor-partition | FileCheck %t/ops.mlir
// RUN: dtensor-opt %t/errors.mlir -split-input-file --dtensor-partition -verify-diagnostics -o /dev/null

// The per-rank program of propagated, planned functions. Shards follow
// torch.chunk: a dim of L over n ranks gives rank r the rows
// [r * ceil(L/n), min(L, (r + 1) * ceil(L/n))), so 257 over 2 is 129 + 128
// and 6 over 4 is 2, 2, 2, 0. Collectives run on buffers padded to
// ceil(L/n) rows per rank and are trimmed after; local dims are dynamic
// where ranks hold different sizes.

//--- steps.mlir

// One redistribution step each.

dtensor.mesh @tp shape = [4]

// S(0) -> R, even: one all_gather, nothing to pad.
// CHECK-LABEL: func.func @all_gather_even
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32> {dtensor.global_type = tensor<8x16xf32>, dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-SAME: -> (tensor<8x16xf32> {dtensor.global_type = tensor<8x16xf32>, dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-SAME: attributes {dtensor.mesh = @tp}
// CHECK-NEXT: %[[G:.*]] = dtensor.all_gather %[[X]] on @tp axes = [0] gather_dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[G]] : tensor<8x16xf32>
func.func @all_gather_even(%x: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<8x16xf32> {
  %y = dtensor.redistribute %x from <@tp, [S(0)]> to <@tp, [R]> : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

dtensor.mesh @pair shape = [2]

// 257 rows over 2 ranks: 129 + 128. Each rank pads its shard to 129 rows,
// the gather gives 258 rows, the last one is padding.
// CHECK-LABEL: func.func @all_gather_257
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32> {dtensor.global_type = tensor<257x8xf32>, dtensor.layout = #dtensor.layout<@pair, [S(0)]>})
// CHECK-SAME: -> (tensor<257x8xf32> {dtensor.global_type = tensor<257x8xf32>, dtensor.layout = #dtensor.layout<@pair, [R]>})
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[C129:.*]] = arith.constant 129 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[DIM:.*]] = tensor.dim %[[X]], %[[C0]] : tensor<?x8xf32>
// CHECK-NEXT: %[[HIGH:.*]] = arith.subi %[[C129]], %[[DIM]] : index
// CHECK-NEXT: %[[PAD:.*]] = tensor.pad %[[X]] low[0, 0] high[%[[HIGH]], 0]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tensor.yield %[[ZERO]] : f32
// CHECK-NEXT: } : tensor<?x8xf32> to tensor<129x8xf32>
// CHECK-NEXT: %[[G:.*]] = dtensor.all_gather %[[PAD]] on @pair axes = [0] gather_dim = 0 : tensor<129x8xf32> -> tensor<258x8xf32>
// CHECK-NEXT: %[[T:.*]] = tensor.extract_slice %[[G]][0, 0] [257, 8] [1, 1] : tensor<258x8xf32> to tensor<257x8xf32>
// CHECK-NEXT: return %[[T]] : tensor<257x8xf32>
func.func @all_gather_257(%x: tensor<257x8xf32> {dtensor.layout = #dtensor.layout<@pair, [S(0)]>}) -> tensor<257x8xf32> {
  %y = dtensor.redistribute %x from <@pair, [S(0)]> to <@pair, [R]> : tensor<257x8xf32>
  return %y : tensor<257x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// 6 columns over 4 ranks: 2, 2, 2, 0; pad to 2, gather 8, keep 6.
// CHECK-LABEL: func.func @all_gather_6
// CHECK-SAME: (%[[X:.*]]: tensor<8x?xf32> {dtensor.global_type = tensor<8x6xf32>, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[DIM:.*]] = tensor.dim %[[X]], %[[C1]] : tensor<8x?xf32>
// CHECK-NEXT: %[[HIGH:.*]] = arith.subi %[[C2]], %[[DIM]] : index
// CHECK-NEXT: %[[PAD:.*]] = tensor.pad %[[X]] low[0, 0] high[0, %[[HIGH]]]
// CHECK: } : tensor<8x?xf32> to tensor<8x2xf32>
// CHECK-NEXT: %[[G:.*]] = dtensor.all_gather %[[PAD]] on @tp axes = [0] gather_dim = 1 : tensor<8x2xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[T:.*]] = tensor.extract_slice %[[G]][0, 0] [8, 6] [1, 1] : tensor<8x8xf32> to tensor<8x6xf32>
// CHECK-NEXT: return %[[T]] : tensor<8x6xf32>
func.func @all_gather_6(%x: tensor<8x6xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) -> tensor<8x6xf32> {
  %y = dtensor.redistribute %x from <@tp, [S(1)]> to <@tp, [R]> : tensor<8x6xf32>
  return %y : tensor<8x6xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// P -> R: one all_reduce with the Partial's reduction; uneven shapes do not
// matter (every rank holds the whole tensor).
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[X:[^:]*]]: tensor<6x8xf32> {dtensor.global_type = tensor<6x8xf32>, dtensor.layout = #dtensor.layout<@tp, [P(sum)]>},
// CHECK-SAME: %[[M:[^:]*]]: tensor<6x8xi32> {dtensor.global_type = tensor<6x8xi32>, dtensor.layout = #dtensor.layout<@tp, [P(max)]>})
// CHECK-SAME: -> (tensor<6x8xf32> {dtensor.global_type = tensor<6x8xf32>, dtensor.layout = #dtensor.layout<@tp, [R]>}, tensor<6x8xi32> {dtensor.global_type = tensor<6x8xi32>, dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-NEXT: %[[S:.*]] = dtensor.all_reduce %[[X]] on @tp axes = [0] reduce = sum : tensor<6x8xf32>
// CHECK-NEXT: %[[MX:.*]] = dtensor.all_reduce %[[M]] on @tp axes = [0] reduce = max : tensor<6x8xi32>
// CHECK-NEXT: return %[[S]], %[[MX]] : tensor<6x8xf32>, tensor<6x8xi32>
func.func @all_reduce(%x: tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>},
                      %m: tensor<6x8xi32> {dtensor.layout = #dtensor.layout<@tp, [P(max)]>})
    -> (tensor<6x8xf32>, tensor<6x8xi32>) {
  %y = dtensor.redistribute %x from <@tp, [P(sum)]> to <@tp, [R]> : tensor<6x8xf32>
  %z = dtensor.redistribute %m from <@tp, [P(max)]> to <@tp, [R]> : tensor<6x8xi32>
  return %y, %z : tensor<6x8xf32>, tensor<6x8xi32>
}

// -----

dtensor.mesh @tp shape = [4]

// P -> S(0), even: one reduce_scatter.
// CHECK-LABEL: func.func @reduce_scatter_even
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32> {{.*}}) -> (tensor<2x16xf32> {dtensor.global_type = tensor<8x16xf32>, dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NEXT: %[[R:.*]] = dtensor.reduce_scatter %[[X]] on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %[[R]] : tensor<2x16xf32>
func.func @reduce_scatter_even(%x: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>}) -> tensor<8x16xf32> {
  %y = dtensor.redistribute %x from <@tp, [P(sum)]> to <@tp, [S(0)]> : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// 6 rows over 4: pad to 8 rows, reduce_scatter 2 rows to each rank, keep
// this rank's chunk size min(6, 2r + 2) - min(6, 2r): 2, 2, 2, 0.
// CHECK-LABEL: func.func @reduce_scatter_6
// CHECK-SAME: (%[[X:.*]]: tensor<6x8xf32> {{.*}}) -> (tensor<?x8xf32> {dtensor.global_type = tensor<6x8xf32>, dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[R:.*]] = dtensor.coord @tp axes = [0] : index
// CHECK: %[[PAD:.*]] = tensor.pad %[[X]] low[0, 0] high[2, 0]
// CHECK: } : tensor<6x8xf32> to tensor<8x8xf32>
// CHECK-NEXT: %[[RS:.*]] = dtensor.reduce_scatter %[[PAD]] on @tp axes = [0] scatter_dim = 0 reduce = avg : tensor<8x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[B0:.*]] = arith.muli %[[R]], %[[C2]] : index
// CHECK-NEXT: %[[B:.*]] = arith.minsi %[[B0]], %[[C6]] : index
// CHECK-NEXT: %[[E0:.*]] = arith.addi %[[B]], %[[C2]] : index
// CHECK-NEXT: %[[E:.*]] = arith.minsi %[[E0]], %[[C6]] : index
// CHECK-NEXT: %[[SIZE:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK-NEXT: %[[T:.*]] = tensor.extract_slice %[[RS]][0, 0] [%[[SIZE]], 8] [1, 1] : tensor<2x8xf32> to tensor<?x8xf32>
// CHECK-NEXT: return %[[T]] : tensor<?x8xf32>
func.func @reduce_scatter_6(%x: tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [P(avg)]>}) -> tensor<6x8xf32> {
  %y = dtensor.redistribute %x from <@tp, [P(avg)]> to <@tp, [S(0)]> : tensor<6x8xf32>
  return %y : tensor<6x8xf32>
}

// -----

dtensor.mesh @pair shape = [2]

// 257 columns over 2: pad to 258, reduce_scatter 129 to each, keep 129 or
// 128.
// CHECK-LABEL: func.func @reduce_scatter_257
// CHECK-SAME: (%[[X:.*]]: tensor<4x257xf32> {{.*}}) -> (tensor<4x?xf32> {dtensor.global_type = tensor<4x257xf32>, dtensor.layout = #dtensor.layout<@pair, [S(1)]>})
// CHECK-DAG: %[[C257:.*]] = arith.constant 257 : index
// CHECK-DAG: %[[C129:.*]] = arith.constant 129 : index
// CHECK-DAG: %[[R:.*]] = dtensor.coord @pair axes = [0] : index
// CHECK: %[[PAD:.*]] = tensor.pad %[[X]] low[0, 0] high[0, 1]
// CHECK: } : tensor<4x257xf32> to tensor<4x258xf32>
// CHECK-NEXT: %[[RS:.*]] = dtensor.reduce_scatter %[[PAD]] on @pair axes = [0] scatter_dim = 1 reduce = sum : tensor<4x258xf32> -> tensor<4x129xf32>
// CHECK-NEXT: %[[B0:.*]] = arith.muli %[[R]], %[[C129]] : index
// CHECK-NEXT: %[[B:.*]] = arith.minsi %[[B0]], %[[C257]] : index
// CHECK-NEXT: %[[E0:.*]] = arith.addi %[[B]], %[[C129]] : index
// CHECK-NEXT: %[[E:.*]] = arith.minsi %[[E0]], %[[C257]] : index
// CHECK-NEXT: %[[SIZE:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK-NEXT: %[[T:.*]] = tensor.extract_slice %[[RS]][0, 0] [4, %[[SIZE]]] [1, 1] : tensor<4x129xf32> to tensor<4x?xf32>
// CHECK-NEXT: return %[[T]] : tensor<4x?xf32>
func.func @reduce_scatter_257(%x: tensor<4x257xf32> {dtensor.layout = #dtensor.layout<@pair, [P(sum)]>}) -> tensor<4x257xf32> {
  %y = dtensor.redistribute %x from <@pair, [P(sum)]> to <@pair, [S(1)]> : tensor<4x257xf32>
  return %y : tensor<4x257xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// R -> S(1), even: this rank's columns [4r, 4r + 4), no communication.
// An argument without a layout is replicated.
// CHECK-LABEL: func.func @chunk_even
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32> {dtensor.global_type = tensor<8x16xf32>, dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-SAME: -> (tensor<8x4xf32> {dtensor.global_type = tensor<8x16xf32>, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[R:.*]] = dtensor.coord @tp axes = [0] : index
// CHECK-NEXT: %[[OFF:.*]] = arith.muli %[[R]], %[[C4]] : index
// CHECK-NEXT: %[[T:.*]] = tensor.extract_slice %[[X]][0, %[[OFF]]] [8, 4] [1, 1] : tensor<8x16xf32> to tensor<8x4xf32>
// CHECK-NEXT: return %[[T]] : tensor<8x4xf32>
func.func @chunk_even(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = dtensor.redistribute %x from <@tp, [R]> to <@tp, [S(1)]> : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// R -> S(0), 6 rows over 4: rows [min(6, 2r), min(6, 2r + 2)).
// CHECK-LABEL: func.func @chunk_6
// CHECK-SAME: (%[[X:.*]]: tensor<6x8xf32> {{.*}}) -> (tensor<?x8xf32> {dtensor.global_type = tensor<6x8xf32>, dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[R:.*]] = dtensor.coord @tp axes = [0] : index
// CHECK: %[[B0:.*]] = arith.muli %[[R]], %[[C2]] : index
// CHECK-NEXT: %[[B:.*]] = arith.minsi %[[B0]], %[[C6]] : index
// CHECK-NEXT: %[[E0:.*]] = arith.addi %[[B]], %[[C2]] : index
// CHECK-NEXT: %[[E:.*]] = arith.minsi %[[E0]], %[[C6]] : index
// CHECK-NEXT: %[[SIZE:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK-NEXT: %[[T:.*]] = tensor.extract_slice %[[X]][%[[B]], 0] [%[[SIZE]], 8] [1, 1] : tensor<6x8xf32> to tensor<?x8xf32>
// CHECK-NEXT: return %[[T]] : tensor<?x8xf32>
func.func @chunk_6(%x: tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>}) -> tensor<6x8xf32> {
  %y = dtensor.redistribute %x from <@tp, [R]> to <@tp, [S(0)]> : tensor<6x8xf32>
  return %y : tensor<6x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// S(0) -> S(1), even: one all_to_all splitting dim 1 and concatenating
// dim 0.
// CHECK-LABEL: func.func @all_to_all_even
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32> {{.*}}) -> (tensor<8x4xf32> {dtensor.global_type = tensor<8x16xf32>, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-NEXT: %[[A:.*]] = dtensor.all_to_all %[[X]] on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
// CHECK-NEXT: return %[[A]] : tensor<8x4xf32>
func.func @all_to_all_even(%x: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<8x16xf32> {
  %y = dtensor.redistribute %x from <@tp, [S(0)]> to <@tp, [S(1)]> : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// 6x10, S(0) -> S(1) over 4: rows 2, 2, 2, 0 padded to 2; columns padded
// from 10 to 12 = 4 * ceil(10/4); the all_to_all gives 8x3; keep 6 rows
// and this rank's 3, 3, 3 or 1 columns.
// CHECK-LABEL: func.func @all_to_all_uneven
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32> {{.*}}) -> (tensor<6x?xf32> {dtensor.global_type = tensor<6x10xf32>, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-DAG: %[[C10:.*]] = arith.constant 10 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[R:.*]] = dtensor.coord @tp axes = [0] : index
// CHECK: %[[DIM:.*]] = tensor.dim %[[X]], %[[C0]] : tensor<?x10xf32>
// CHECK-NEXT: %[[HIGH:.*]] = arith.subi %[[C2]], %[[DIM]] : index
// CHECK-NEXT: %[[P0:.*]] = tensor.pad %[[X]] low[0, 0] high[%[[HIGH]], 0]
// CHECK: } : tensor<?x10xf32> to tensor<2x10xf32>
// CHECK-NEXT: %[[P1:.*]] = tensor.pad %[[P0]] low[0, 0] high[0, 2]
// CHECK: } : tensor<2x10xf32> to tensor<2x12xf32>
// CHECK-NEXT: %[[A:.*]] = dtensor.all_to_all %[[P1]] on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x12xf32> -> tensor<8x3xf32>
// CHECK-NEXT: %[[ROWS:.*]] = tensor.extract_slice %[[A]][0, 0] [6, 3] [1, 1] : tensor<8x3xf32> to tensor<6x3xf32>
// CHECK-NEXT: %[[B0:.*]] = arith.muli %[[R]], %[[C3]] : index
// CHECK-NEXT: %[[B:.*]] = arith.minsi %[[B0]], %[[C10]] : index
// CHECK-NEXT: %[[E0:.*]] = arith.addi %[[B]], %[[C3]] : index
// CHECK-NEXT: %[[E:.*]] = arith.minsi %[[E0]], %[[C10]] : index
// CHECK-NEXT: %[[SIZE:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK-NEXT: %[[T:.*]] = tensor.extract_slice %[[ROWS]][0, 0] [6, %[[SIZE]]] [1, 1] : tensor<6x3xf32> to tensor<6x?xf32>
// CHECK-NEXT: return %[[T]] : tensor<6x?xf32>
func.func @all_to_all_uneven(%x: tensor<6x10xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<6x10xf32> {
  %y = dtensor.redistribute %x from <@tp, [S(0)]> to <@tp, [S(1)]> : tensor<6x10xf32>
  return %y : tensor<6x10xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// R -> P(sum) divides by the group size; avg, max and min keep the value.
// CHECK-LABEL: func.func @local_partition
// CHECK-SAME: (%[[X:[^:]*]]: tensor<6x10xf32> {dtensor.global_type = tensor<6x10xf32>, dtensor.layout = #dtensor.layout<@tp, [R]>},
// CHECK-SAME: %[[I:[^:]*]]: tensor<6x10xi32> {dtensor.global_type = tensor<6x10xi32>, dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-SAME: -> (tensor<6x10xf32> {dtensor.global_type = tensor<6x10xf32>, dtensor.layout = #dtensor.layout<@tp, [P(sum)]>}, tensor<6x10xf32> {dtensor.global_type = tensor<6x10xf32>, dtensor.layout = #dtensor.layout<@tp, [P(avg)]>}, tensor<6x10xf32> {dtensor.global_type = tensor<6x10xf32>, dtensor.layout = #dtensor.layout<@tp, [P(max)]>}, tensor<6x10xi32> {dtensor.global_type = tensor<6x10xi32>, dtensor.layout = #dtensor.layout<@tp, [P(min)]>})
// CHECK-NEXT: %[[N:.*]] = arith.constant 4.000000e+00 : f32
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<6x10xf32>
// CHECK-NEXT: %[[D:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<6x10xf32>) outs(%[[E]] : tensor<6x10xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[Q:.*]] = arith.divf %[[IN]], %[[N]] : f32
// CHECK-NEXT: linalg.yield %[[Q]] : f32
// CHECK-NEXT: } -> tensor<6x10xf32>
// CHECK-NEXT: return %[[D]], %[[X]], %[[X]], %[[I]] :
func.func @local_partition(%x: tensor<6x10xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>},
                           %i: tensor<6x10xi32> {dtensor.layout = #dtensor.layout<@tp, [R]>})
    -> (tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xi32>) {
  %s = dtensor.redistribute %x from <@tp, [R]> to <@tp, [P(sum)]> : tensor<6x10xf32>
  %a = dtensor.redistribute %x from <@tp, [R]> to <@tp, [P(avg)]> : tensor<6x10xf32>
  %m = dtensor.redistribute %x from <@tp, [R]> to <@tp, [P(max)]> : tensor<6x10xf32>
  %n = dtensor.redistribute %i from <@tp, [R]> to <@tp, [P(min)]> : tensor<6x10xi32>
  return %s, %a, %m, %n : tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xi32>
}

// -----

dtensor.mesh @tp shape = [4]

// Integers do not divide into n addends: R -> P(sum) keeps the value on
// coordinate 0 and puts zeros elsewhere.
// CHECK-LABEL: func.func @local_partition_int
// CHECK-SAME: (%[[I:[^:]*]]: tensor<6x10xi32>
// CHECK-DAG: %[[COORD:.*]] = dtensor.coord @tp axes = [0]
// CHECK-DAG: %[[Z:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[E:.*]] = tensor.empty() : tensor<6x10xi32>
// CHECK-DAG: %[[FIRST:.*]] = arith.cmpi eq, %[[COORD]], %[[C0]] : index
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[I]] : tensor<6x10xi32>) outs(%[[E]] : tensor<6x10xi32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT: %[[S:.*]] = arith.select %[[FIRST]], %[[IN]], %[[Z]] : i32
// CHECK-NEXT: linalg.yield %[[S]] : i32
// CHECK: return %[[P]] :
func.func @local_partition_int(%i: tensor<6x10xi32> {dtensor.layout = #dtensor.layout<@tp, [R]>})
    -> tensor<6x10xi32> {
  %s = dtensor.redistribute %i from <@tp, [R]> to <@tp, [P(sum)]> : tensor<6x10xi32>
  return %s : tensor<6x10xi32>
}

// -----

dtensor.mesh @tp shape = [4]

// P(sum) <-> P(avg) is a local rescale by the group size: P(sum) -> P(avg)
// multiplies (integers too), P(avg) -> P(sum) divides.
// CHECK-LABEL: func.func @local_rescale
// CHECK-SAME: (%[[X:[^:]*]]: tensor<6x10xf32> {{.*}}, %[[I:[^:]*]]: tensor<6x10xi32>
// CHECK-DAG: %[[N:.*]] = arith.constant 4.000000e+00 : f32
// CHECK-DAG: %[[NI:.*]] = arith.constant 4 : i32
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<6x10xf32>)
// CHECK: arith.mulf %{{.*}}, %[[N]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[A]] : tensor<6x10xf32>)
// CHECK: arith.divf %{{.*}}, %[[N]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[I]] : tensor<6x10xi32>)
// CHECK: arith.muli %{{.*}}, %[[NI]] : i32
func.func @local_rescale(%x: tensor<6x10xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>},
                         %i: tensor<6x10xi32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>})
    -> (tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xi32>) {
  %a = dtensor.redistribute %x from <@tp, [P(sum)]> to <@tp, [P(avg)]> : tensor<6x10xf32>
  %s = dtensor.redistribute %a from <@tp, [P(avg)]> to <@tp, [P(sum)]> : tensor<6x10xf32>
  %ai = dtensor.redistribute %i from <@tp, [P(sum)]> to <@tp, [P(avg)]> : tensor<6x10xi32>
  return %a, %s, %ai : tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xi32>
}

// -----

// Nested 2-D shards. The size a mesh axis splits is the chunk the earlier
// axes left (the logical size), which may differ between groups.

dtensor.mesh @m22 shape = [2, 2]

// 7 rows over [2, 2]: mesh axis 0 splits 4 + 3, mesh axis 1 splits each
// (2 + 2, 2 + 1). The planned chain (S(0), S(0)) -> (S(0), R) -> (R, R) ->
// (R, S(0)): gather over mesh axis 1 on ceil(L/2) rows with L = 4 or 3
// this rank's axis-0 chunk; then over mesh axis 0 on 4 rows; then take the
// axis-1 chunk of 7 rows (4 + 3).
// CHECK-LABEL: func.func @nested_unshard_7
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32> {dtensor.global_type = tensor<7x8xf32>, dtensor.layout = #dtensor.layout<@m22, [S(0), S(0)]>})
// CHECK-SAME: -> (tensor<?x8xf32> {dtensor.global_type = tensor<7x8xf32>, dtensor.layout = #dtensor.layout<@m22, [R, S(0)]>})
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C7:.*]] = arith.constant 7 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[R1:.*]] = dtensor.coord @m22 axes = [1] : index
// CHECK-DAG: %[[R0:.*]] = dtensor.coord @m22 axes = [0] : index
// This rank's axis-0 chunk size L = min(7, 4 r0 + 4) - min(7, 4 r0).
// CHECK: %[[B0:.*]] = arith.muli %[[R0]], %[[C4]] : index
// CHECK-NEXT: %[[B:.*]] = arith.minsi %[[B0]], %[[C7]] : index
// CHECK-NEXT: %[[E0:.*]] = arith.addi %[[B]], %[[C4]] : index
// CHECK-NEXT: %[[E:.*]] = arith.minsi %[[E0]], %[[C7]] : index
// CHECK-NEXT: %[[L:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK-NEXT: %[[FULL:.*]] = arith.ceildivui %[[L]], %[[C2]] : index
// CHECK-NEXT: %[[DIM:.*]] = tensor.dim %[[X]], %[[C0]] : tensor<?x8xf32>
// CHECK-NEXT: %[[H:.*]] = arith.subi %[[FULL]], %[[DIM]] : index
// CHECK-NEXT: %[[P1:.*]] = tensor.pad %[[X]] low[0, 0] high[%[[H]], 0]
// CHECK: } : tensor<?x8xf32> to tensor<?x8xf32>
// CHECK-NEXT: %[[G1:.*]] = dtensor.all_gather %[[P1]] on @m22 axes = [1] gather_dim = 0 : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[T1:.*]] = tensor.extract_slice %[[G1]][0, 0] [%[[L]], 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
// CHECK-NEXT: %[[H2:.*]] = arith.subi %[[C4]], %[[L]] : index
// CHECK-NEXT: %[[P2:.*]] = tensor.pad %[[T1]] low[0, 0] high[%[[H2]], 0]
// CHECK: } : tensor<?x8xf32> to tensor<4x8xf32>
// CHECK-NEXT: %[[G2:.*]] = dtensor.all_gather %[[P2]] on @m22 axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[T2:.*]] = tensor.extract_slice %[[G2]][0, 0] [7, 8] [1, 1] : tensor<8x8xf32> to tensor<7x8xf32>
// CHECK-NEXT: %[[B1:.*]] = arith.muli %[[R1]], %[[C4]] : index
// CHECK-NEXT: %[[BB:.*]] = arith.minsi %[[B1]], %[[C7]] : index
// CHECK-NEXT: %[[EE0:.*]] = arith.addi %[[BB]], %[[C4]] : index
// CHECK-NEXT: %[[EE:.*]] = arith.minsi %[[EE0]], %[[C7]] : index
// CHECK-NEXT: %[[S:.*]] = arith.subi %[[EE]], %[[BB]] : index
// CHECK-NEXT: %[[T3:.*]] = tensor.extract_slice %[[T2]][%[[BB]], 0] [%[[S]], 8] [1, 1] : tensor<7x8xf32> to tensor<?x8xf32>
// CHECK-NEXT: return %[[T3]] : tensor<?x8xf32>
func.func @nested_unshard_7(%x: tensor<7x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), S(0)]>}) -> tensor<7x8xf32> {
  %a = dtensor.redistribute %x from <@m22, [S(0), S(0)]> to <@m22, [S(0), R]> : tensor<7x8xf32>
  %b = dtensor.redistribute %a from <@m22, [S(0), R]> to <@m22, [R, R]> : tensor<7x8xf32>
  %c = dtensor.redistribute %b from <@m22, [R, R]> to <@m22, [R, S(0)]> : tensor<7x8xf32>
  return %c : tensor<7x8xf32>
}

// -----

dtensor.mesh @m24 shape = [2, 4]

// 10 rows, (P, P) -> (S(0), P) -> (S(0), S(0)) on [2, 4]: 5 + 5 over mesh
// axis 0 (even, no padding), then 5 rows over mesh axis 1 padded to 8:
// 2, 2, 1, 0.
// CHECK-LABEL: func.func @nested_reduce_scatter_10
// CHECK-SAME: (%[[X:.*]]: tensor<10x8xf32> {{.*}}) -> (tensor<?x8xf32> {dtensor.global_type = tensor<10x8xf32>, dtensor.layout = #dtensor.layout<@m24, [S(0), S(0)]>})
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C5:.*]] = arith.constant 5 : index
// CHECK-DAG: %[[R1:.*]] = dtensor.coord @m24 axes = [1] : index
// CHECK: %[[RS0:.*]] = dtensor.reduce_scatter %[[X]] on @m24 axes = [0] scatter_dim = 0 reduce = sum : tensor<10x8xf32> -> tensor<5x8xf32>
// CHECK-NEXT: %[[P:.*]] = tensor.pad %[[RS0]] low[0, 0] high[3, 0]
// CHECK: } : tensor<5x8xf32> to tensor<8x8xf32>
// CHECK-NEXT: %[[RS1:.*]] = dtensor.reduce_scatter %[[P]] on @m24 axes = [1] scatter_dim = 0 reduce = sum : tensor<8x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[B0:.*]] = arith.muli %[[R1]], %[[C2]] : index
// CHECK-NEXT: %[[B:.*]] = arith.minsi %[[B0]], %[[C5]] : index
// CHECK-NEXT: %[[E0:.*]] = arith.addi %[[B]], %[[C2]] : index
// CHECK-NEXT: %[[E:.*]] = arith.minsi %[[E0]], %[[C5]] : index
// CHECK-NEXT: %[[S:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK-NEXT: %[[T:.*]] = tensor.extract_slice %[[RS1]][0, 0] [%[[S]], 8] [1, 1] : tensor<2x8xf32> to tensor<?x8xf32>
// CHECK-NEXT: return %[[T]] : tensor<?x8xf32>
func.func @nested_reduce_scatter_10(%x: tensor<10x8xf32> {dtensor.layout = #dtensor.layout<@m24, [P(sum), P(sum)]>}) -> tensor<10x8xf32> {
  %a = dtensor.redistribute %x from <@m24, [P(sum), P(sum)]> to <@m24, [S(0), P(sum)]> : tensor<10x8xf32>
  %b = dtensor.redistribute %a from <@m24, [S(0), P(sum)]> to <@m24, [S(0), S(0)]> : tensor<10x8xf32>
  return %b : tensor<10x8xf32>
}

// 6x10, (S(0), S(0)) -> (S(0), S(1)) on [2, 4]: the inner split moves.
// Mesh axis 0 leaves 3 rows, split over mesh axis 1 as 1, 1, 1, 0 and
// padded to 1; 10 columns padded to 12; keep 3 rows and 3, 3, 3 or 1
// columns.
// CHECK-LABEL: func.func @nested_all_to_all
// CHECK-SAME: (%[[X:.*]]: tensor<?x10xf32> {dtensor.global_type = tensor<6x10xf32>, dtensor.layout = #dtensor.layout<@m24, [S(0), S(0)]>})
// CHECK-SAME: -> (tensor<3x?xf32> {dtensor.global_type = tensor<6x10xf32>, dtensor.layout = #dtensor.layout<@m24, [S(0), S(1)]>})
// CHECK-DAG: %[[C10:.*]] = arith.constant 10 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[R1:.*]] = dtensor.coord @m24 axes = [1] : index
// CHECK: %[[DIM:.*]] = tensor.dim %[[X]], %[[C0]] : tensor<?x10xf32>
// CHECK-NEXT: %[[H:.*]] = arith.subi %[[C1]], %[[DIM]] : index
// CHECK-NEXT: %[[P0:.*]] = tensor.pad %[[X]] low[0, 0] high[%[[H]], 0]
// CHECK: } : tensor<?x10xf32> to tensor<1x10xf32>
// CHECK-NEXT: %[[P1:.*]] = tensor.pad %[[P0]] low[0, 0] high[0, 2]
// CHECK: } : tensor<1x10xf32> to tensor<1x12xf32>
// CHECK-NEXT: %[[A:.*]] = dtensor.all_to_all %[[P1]] on @m24 axes = [1] split_dim = 1 concat_dim = 0 : tensor<1x12xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[T0:.*]] = tensor.extract_slice %[[A]][0, 0] [3, 3] [1, 1] : tensor<4x3xf32> to tensor<3x3xf32>
// CHECK-NEXT: %[[B0:.*]] = arith.muli %[[R1]], %[[C3]] : index
// CHECK-NEXT: %[[B:.*]] = arith.minsi %[[B0]], %[[C10]] : index
// CHECK-NEXT: %[[E0:.*]] = arith.addi %[[B]], %[[C3]] : index
// CHECK-NEXT: %[[E:.*]] = arith.minsi %[[E0]], %[[C10]] : index
// CHECK-NEXT: %[[S:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK-NEXT: %[[T:.*]] = tensor.extract_slice %[[T0]][0, 0] [3, %[[S]]] [1, 1] : tensor<3x3xf32> to tensor<3x?xf32>
// CHECK-NEXT: return %[[T]] : tensor<3x?xf32>
func.func @nested_all_to_all(%x: tensor<6x10xf32> {dtensor.layout = #dtensor.layout<@m24, [S(0), S(0)]>}) -> tensor<6x10xf32> {
  %a = dtensor.redistribute %x from <@m24, [S(0), S(0)]> to <@m24, [S(0), S(1)]> : tensor<6x10xf32>
  return %a : tensor<6x10xf32>
}

// Local types on [2, 4]: 8x16 (S(0), S(1)) is 4x4 everywhere; 6 rows over
// 2 x 4 are 3 then 1, 1, 1, 0: dynamic; 16 rows over 2 x 4 are 2; 3
// columns over 4 are 1, 1, 1, 0: dynamic, Partial keeps the global size.
// CHECK-LABEL: func.func @local_types
// CHECK-SAME: tensor<4x4xf32> {dtensor.global_type = tensor<8x16xf32>, dtensor.layout = #dtensor.layout<@m24, [S(0), S(1)]>}
// CHECK-SAME: tensor<?x16xf32> {dtensor.global_type = tensor<6x16xf32>, dtensor.layout = #dtensor.layout<@m24, [S(0), S(0)]>}
// CHECK-SAME: tensor<2x6xf32> {dtensor.global_type = tensor<16x6xf32>, dtensor.layout = #dtensor.layout<@m24, [S(0), S(0)]>}
// CHECK-SAME: tensor<9x?xf32> {dtensor.global_type = tensor<9x3xf32>, dtensor.layout = #dtensor.layout<@m24, [P(sum), S(1)]>}
// CHECK-SAME: attributes {dtensor.mesh = @m24}
// CHECK-NEXT: return
func.func @local_types(%a: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@m24, [S(0), S(1)]>},
                       %b: tensor<6x16xf32> {dtensor.layout = #dtensor.layout<@m24, [S(0), S(0)]>},
                       %c: tensor<16x6xf32> {dtensor.layout = #dtensor.layout<@m24, [S(0), S(0)]>},
                       %d: tensor<9x3xf32> {dtensor.layout = #dtensor.layout<@m24, [P(sum), S(1)]>}) {
  return
}

// -----

// A step on a mesh axis of one process moves nothing: (P, S(0)) ->
// (S(0), R) on [4, 1] is one reduce_scatter on mesh axis 0.

dtensor.mesh @m41 shape = [4, 1]

// CHECK-LABEL: func.func @size_one_axis
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32> {{.*}}) -> (tensor<2x16xf32> {dtensor.global_type = tensor<8x16xf32>, dtensor.layout = #dtensor.layout<@m41, [S(0), R]>})
// CHECK-NEXT: %[[R:.*]] = dtensor.reduce_scatter %[[X]] on @m41 axes = [0] scatter_dim = 0 reduce = sum : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %[[R]] : tensor<2x16xf32>
func.func @size_one_axis(%x: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@m41, [P(sum), S(0)]>}) -> tensor<8x16xf32> {
  %a = dtensor.redistribute %x from <@m41, [P(sum), S(0)]> to <@m41, [S(0), R]> : tensor<8x16xf32>
  return %a : tensor<8x16xf32>
}

//--- ops.mlir

// Ops rewritten on local tensors.

dtensor.mesh @tp shape = [4]
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// linalg.index counts from the rank's first row: 6 rows over 4 start at
// min(6, 2r). Only the sharded loop is shifted.
// CHECK-LABEL: func.func @index_rows
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32> {dtensor.global_type = tensor<6x8xf32>, dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[R:.*]] = dtensor.coord @tp axes = [0] : index
// CHECK: %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x8xf32>
// CHECK-NEXT: %[[O0:.*]] = arith.muli %[[R]], %[[C2]] : index
// CHECK-NEXT: %[[OFF:.*]] = arith.minsi %[[O0]], %[[C6]] : index
// CHECK-NEXT: %[[G:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<?x8xf32>) outs(%[[E]] : tensor<?x8xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[I:.*]] = linalg.index 0 : index
// CHECK-NEXT: %[[GI:.*]] = arith.addi %[[I]], %[[OFF]] : index
// CHECK-NEXT: %[[J:.*]] = linalg.index 1 : index
// CHECK-NEXT: arith.addi %[[GI]], %[[J]] : index
// CHECK: } -> tensor<?x8xf32>
// CHECK-NEXT: return %[[G]] : tensor<?x8xf32>
func.func @index_rows(%x: tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> (tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) {
  %e = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<6x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
    ins(%x : tensor<6x8xf32>) outs(%e : tensor<6x8xf32>) attrs = {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} {
    ^bb0(%a: f32, %o: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %s = arith.addi %i, %j : index
      %c = arith.index_cast %s : index to i64
      %f = arith.sitofp %c : i64 to f32
      %r = arith.addf %a, %f : f32
      linalg.yield %r : f32
    } -> tensor<6x8xf32>
  return %y : tensor<6x8xf32>
}

// A split reduction loop: 10 columns over 4 start at min(10, 3r).
// CHECK-LABEL: func.func @index_reduction
// CHECK-SAME: (%[[X:.*]]: tensor<8x?xf32> {dtensor.global_type = tensor<8x10xf32>, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-SAME: -> (tensor<8xf32> {dtensor.global_type = tensor<8xf32>, dtensor.layout = #dtensor.layout<@tp, [P(sum)]>})
// CHECK-DAG: %[[C10:.*]] = arith.constant 10 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<8xf32>
// CHECK-DAG: %[[R:.*]] = dtensor.coord @tp axes = [0] : index
// CHECK: %[[O0:.*]] = arith.muli %[[R]], %[[C3]] : index
// CHECK-NEXT: %[[OFF:.*]] = arith.minsi %[[O0]], %[[C10]] : index
// CHECK-NEXT: %[[G:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<8x?xf32>) outs(%[[Z]] : tensor<8xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[J:.*]] = linalg.index 1 : index
// CHECK-NEXT: arith.addi %[[J]], %[[OFF]] : index
// CHECK: } -> tensor<8xf32>
// CHECK-NEXT: return %[[G]] : tensor<8xf32>
func.func @index_reduction(%x: tensor<8x10xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) -> (tensor<8xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>}) {
  %z = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} dense<0.0> : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
    ins(%x : tensor<8x10xf32>) outs(%z : tensor<8xf32>) attrs = {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} {
    ^bb0(%a: f32, %acc: f32):
      %j = linalg.index 1 : index
      %c = arith.index_cast %j : index to i64
      %f = arith.sitofp %c : i64 to f32
      %m = arith.mulf %a, %f : f32
      %s = arith.addf %m, %acc : f32
      linalg.yield %s : f32
    } -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// K-sharded matmul: local 8x4 @ 4x32 into a zero fill, a Partial(sum)
// result of the global shape.
// CHECK-LABEL: func.func @matmul_k
// CHECK-SAME: (%[[A:[^:]*]]: tensor<8x4xf32> {dtensor.global_type = tensor<8x16xf32>, dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
// CHECK-SAME: %[[B:[^:]*]]: tensor<4x32xf32> {dtensor.global_type = tensor<16x32xf32>, dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-SAME: -> (tensor<8x32xf32> {dtensor.global_type = tensor<8x32xf32>, dtensor.layout = #dtensor.layout<@tp, [P(sum)]>})
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<8x32xf32>
// CHECK-NEXT: %[[F:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT: %[[M:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<8x4xf32>, tensor<4x32xf32>) outs(%[[F]] : tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT: return %[[M]] : tensor<8x32xf32>
func.func @matmul_k(%a: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}, %b: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> (tensor<8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>}) {
  %e = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} : tensor<8x32xf32>
  %c0 = arith.constant 0.0 : f32
  %f = linalg.fill {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%c0 : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %m : tensor<8x32xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Row-sharded embedding table, 10 rows over 4 (3, 3, 3, 1 from row
// min(10, 3r)): ids outside this rank's rows look up local row 0 and their
// result rows are zeroed, so the sum over ranks is the full lookup. Every
// rank holds a row, so the table is looked up as it is.
// CHECK-LABEL: func.func @embedding_rows
// CHECK-SAME: (%[[T:[^:]*]]: tensor<?x16xf32> {dtensor.global_type = tensor<10x16xf32>, dtensor.layout = #dtensor.layout<@tp, [S(0)]>},
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<2x3x1xi64> {dtensor.global_type = tensor<2x3x1xi64>, dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-SAME: -> (tensor<2x3x16xf32> {dtensor.global_type = tensor<2x3x16xf32>, dtensor.layout = #dtensor.layout<@tp, [P(sum)]>})
// CHECK-DAG: %[[FZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[IZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C10:.*]] = arith.constant 10 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[R:.*]] = dtensor.coord @tp axes = [0] : index
// CHECK: %[[B0:.*]] = arith.muli %[[R]], %[[C3]] : index
// CHECK-NEXT: %[[OFF:.*]] = arith.minsi %[[B0]], %[[C10]] : index
// CHECK-NEXT: %[[E0:.*]] = arith.addi %[[OFF]], %[[C3]] : index
// CHECK-NEXT: %[[END:.*]] = arith.minsi %[[E0]], %[[C10]] : index
// CHECK-NEXT: %[[CNT:.*]] = arith.subi %[[END]], %[[OFF]] : index
// CHECK-NEXT: %[[IE:.*]] = tensor.empty() : tensor<2x3x1xi64>
// CHECK-NEXT: %[[LIDS:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<2x3x1xi64>) outs(%[[IE]] : tensor<2x3x1xi64>)
// CHECK-NEXT: ^bb0(%[[ID:.*]]: i64, %{{.*}}: i64):
// CHECK-NEXT: %[[OFFI:.*]] = arith.index_cast %[[OFF]] : index to i64
// CHECK-NEXT: %[[CNTI:.*]] = arith.index_cast %[[CNT]] : index to i64
// CHECK-NEXT: %[[SH:.*]] = arith.subi %[[ID]], %[[OFFI]] : i64
// CHECK-NEXT: %[[LT:.*]] = arith.cmpi slt, %[[SH]], %[[CNTI]] : i64
// CHECK-NEXT: %[[GE:.*]] = arith.cmpi sge, %[[SH]], %[[IZERO]] : i64
// CHECK-NEXT: %[[IN:.*]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK-NEXT: %[[SEL:.*]] = arith.select %[[IN]], %[[SH]], %[[IZERO]] : i64
// CHECK-NEXT: linalg.yield %[[SEL]] : i64
// CHECK-NEXT: } -> tensor<2x3x1xi64>
// CHECK-NEXT: %[[ROWS:.*]] = tensor.gather %[[T]][%[[LIDS]]] gather_dims([0]) : (tensor<?x16xf32>, tensor<2x3x1xi64>) -> tensor<2x3x16xf32>
// CHECK-NEXT: %[[OE:.*]] = tensor.empty() : tensor<2x3x16xf32>
// CHECK-NEXT: %[[MASKED:.*]] = linalg.generic {indexing_maps = [#[[$IDMAP:.*]], #[[$ID3:.*]], #[[$ID3]]], {{.*}} ins(%[[IDS]], %[[ROWS]] : tensor<2x3x1xi64>, tensor<2x3x16xf32>) outs(%[[OE]] : tensor<2x3x16xf32>)
// CHECK-NEXT: ^bb0(%[[ID2:.*]]: i64, %[[ROW:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[SH2:.*]] = arith.subi %[[ID2]], %{{.*}} : i64
// CHECK-NEXT: %[[LT2:.*]] = arith.cmpi slt, %[[SH2]], %{{.*}} : i64
// CHECK-NEXT: %[[GE2:.*]] = arith.cmpi sge, %[[SH2]], %[[IZERO]] : i64
// CHECK-NEXT: %[[IN2:.*]] = arith.andi %[[GE2]], %[[LT2]] : i1
// CHECK-NEXT: %[[SEL2:.*]] = arith.select %[[IN2]], %[[ROW]], %[[FZERO]] : f32
// CHECK-NEXT: linalg.yield %[[SEL2]] : f32
// CHECK-NEXT: } -> tensor<2x3x16xf32>
// CHECK-NEXT: return %[[MASKED]] : tensor<2x3x16xf32>
func.func @embedding_rows(%t: tensor<10x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, %ids: tensor<2x3x1xi64> {dtensor.layout = #dtensor.layout<@tp, [R]>}) -> (tensor<2x3x16xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>}) {
  %g = tensor.gather %t[%ids] gather_dims([0]) {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} : (tensor<10x16xf32>, tensor<2x3x1xi64>) -> tensor<2x3x16xf32>
  return %g : tensor<2x3x16xf32>
}

// 6 rows over 4: 2, 2, 2, 0. The last rank's table is empty, so even its
// row 0 does not exist: the lookup reads the table padded to
// max(rows, 1) zero rows, and the mask zeroes what it reads there.
// CHECK-LABEL: func.func @embedding_rows_empty_rank
// CHECK-SAME: (%[[T:[^:]*]]: tensor<?x16xf32> {{.*}}, %[[IDS:[^:]*]]: tensor<5x1xindex>
// CHECK-DAG: %[[FZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[CNT:.*]] = arith.subi %{{.*}}, %{{.*}} : index
// CHECK: %[[LIDS:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<5x1xindex>)
// CHECK: } -> tensor<5x1xindex>
// CHECK-NEXT: %[[ATLEAST1:.*]] = arith.maxsi %[[CNT]], %[[C1]] : index
// CHECK-NEXT: %[[DIM:.*]] = tensor.dim %[[T]], %[[C0]] : tensor<?x16xf32>
// CHECK-NEXT: %[[HIGH:.*]] = arith.subi %[[ATLEAST1]], %[[DIM]] : index
// CHECK-NEXT: %[[PADDED:.*]] = tensor.pad %[[T]] low[0, 0] high[%[[HIGH]], 0]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tensor.yield %[[FZERO]] : f32
// CHECK-NEXT: } : tensor<?x16xf32> to tensor<?x16xf32>
// CHECK-NEXT: %[[ROWS:.*]] = tensor.gather %[[PADDED]][%[[LIDS]]] gather_dims([0]) : (tensor<?x16xf32>, tensor<5x1xindex>) -> tensor<5x16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[IDS]], %[[ROWS]] : tensor<5x1xindex>, tensor<5x16xf32>)
func.func @embedding_rows_empty_rank(%t: tensor<6x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, %ids: tensor<5x1xindex> {dtensor.layout = #dtensor.layout<@tp, [R]>}) -> (tensor<5x16xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>}) {
  %g = tensor.gather %t[%ids] gather_dims([0]) {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} : (tensor<6x16xf32>, tensor<5x1xindex>) -> tensor<5x16xf32>
  return %g : tensor<5x16xf32>
}

// Column-sharded table: a plain local lookup of this rank's columns.
// CHECK-LABEL: func.func @embedding_columns
// CHECK-SAME: (%[[T:[^:]*]]: tensor<10x4xf32> {dtensor.global_type = tensor<10x16xf32>, dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<8x1xindex> {dtensor.global_type = tensor<8x1xindex>, dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-SAME: -> (tensor<8x4xf32> {dtensor.global_type = tensor<8x16xf32>, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-NEXT: %[[G:.*]] = tensor.gather %[[T]][%[[IDS]]] gather_dims([0]) : (tensor<10x4xf32>, tensor<8x1xindex>) -> tensor<8x4xf32>
// CHECK-NEXT: return %[[G]] : tensor<8x4xf32>
func.func @embedding_columns(%t: tensor<10x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}, %ids: tensor<8x1xindex> {dtensor.layout = #dtensor.layout<@tp, [R]>}) -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) {
  %g = tensor.gather %t[%ids] gather_dims([0]) {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} : (tensor<10x16xf32>, tensor<8x1xindex>) -> tensor<8x16xf32>
  return %g : tensor<8x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Reshapes of evenly split dims: 8x4 rows [2r, 2r + 2) are elements
// [8r, 8r + 8) of the 32, which are row r of 4x2x4.
// CHECK-LABEL: func.func @reshapes
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32> {{.*}}) -> (tensor<1x2x4xf32> {dtensor.global_type = tensor<4x2x4xf32>, dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NEXT: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
// CHECK-NEXT: %[[E:.*]] = tensor.expand_shape %[[C]] {{\[}}[0, 1, 2]] output_shape [1, 2, 4] : tensor<8xf32> into tensor<1x2x4xf32>
// CHECK-NEXT: return %[[E]] : tensor<1x2x4xf32>
func.func @reshapes(%x: tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> (tensor<4x2x4xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) {
  %c = tensor.collapse_shape %x [[0, 1]] {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<8x4xf32> into tensor<32xf32>
  %e = tensor.expand_shape %c [[0, 1, 2]] output_shape [4, 2, 4] {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<32xf32> into tensor<4x2x4xf32>
  return %e : tensor<4x2x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Created values get their local shapes: an empty of this rank's 2, 2, 2
// or 0 rows, a splat constant resized where the local shape is static,
// a fill of a dynamic shape otherwise; a Partial(max) constant keeps the
// global shape.
// CHECK-LABEL: func.func @creation
// CHECK-SAME: -> (tensor<?x8xf32> {dtensor.global_type = tensor<6x8xf32>, dtensor.layout = #dtensor.layout<@tp, [S(0)]>},
// CHECK-SAME: tensor<8x2xi32> {dtensor.global_type = tensor<8x8xi32>, dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
// CHECK-SAME: tensor<?x8xf32> {dtensor.global_type = tensor<6x8xf32>, dtensor.layout = #dtensor.layout<@tp, [S(0)]>},
// CHECK-SAME: tensor<6x8xf32> {dtensor.global_type = tensor<6x8xf32>, dtensor.layout = #dtensor.layout<@tp, [P(max)]>})
// CHECK-DAG: %[[MAXC:.*]] = arith.constant dense<-1.000000e+00> : tensor<6x8xf32>
// CHECK-DAG: %[[THREE:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-DAG: %[[SEVENS:.*]] = arith.constant dense<7> : tensor<8x2xi32>
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[R:.*]] = dtensor.coord @tp axes = [0] : index
// CHECK: %[[B0:.*]] = arith.muli %[[R]], %[[C2]] : index
// CHECK-NEXT: %[[B:.*]] = arith.minsi %[[B0]], %[[C6]] : index
// CHECK-NEXT: %[[E0:.*]] = arith.addi %[[B]], %[[C2]] : index
// CHECK-NEXT: %[[E:.*]] = arith.minsi %[[E0]], %[[C6]] : index
// CHECK-NEXT: %[[S:.*]] = arith.subi %[[E]], %[[B]] : index
// CHECK-NEXT: %[[EMPTY:.*]] = tensor.empty(%[[S]]) : tensor<?x8xf32>
// CHECK: %[[S2:.*]] = arith.subi
// CHECK-NEXT: %[[EMPTY2:.*]] = tensor.empty(%[[S2]]) : tensor<?x8xf32>
// CHECK-NEXT: %[[FILL:.*]] = linalg.fill ins(%[[THREE]] : f32) outs(%[[EMPTY2]] : tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: return %[[EMPTY]], %[[SEVENS]], %[[FILL]], %[[MAXC]] :
func.func @creation() -> (tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<8x8xi32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}, tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [P(max)]>}) {
  %e = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<6x8xf32>
  %c = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} dense<7> : tensor<8x8xi32>
  %d = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} dense<3.0> : tensor<6x8xf32>
  %m = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [P(max)]>]} dense<-1.0> : tensor<6x8xf32>
  return %e, %c, %d, %m : tensor<6x8xf32>, tensor<8x8xi32>, tensor<6x8xf32>, tensor<6x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// One tensor.empty shared by fills of different layouts: each fill gets a
// tensor of its own local shape.
// CHECK-LABEL: func.func @shared_fill_init
// CHECK-SAME: -> (tensor<8x32xf32> {dtensor.global_type = tensor<8x32xf32>, dtensor.layout = #dtensor.layout<@tp, [P(sum)]>},
// CHECK-SAME: tensor<8x8xf32> {dtensor.global_type = tensor<8x32xf32>, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8x32xf32>
// CHECK-NEXT: %[[F:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT: %[[E2:.*]] = tensor.empty() : tensor<8x8xf32>
// CHECK-NEXT: %[[G:.*]] = linalg.fill ins(%[[ONE]] : f32) outs(%[[E2]] : tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT: return %[[F]], %[[G]] : tensor<8x32xf32>, tensor<8x8xf32>
func.func @shared_fill_init() -> (tensor<8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>}, tensor<8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) {
  %e = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} : tensor<8x32xf32>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %f = linalg.fill {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = linalg.fill {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} ins(%one : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %f, %g : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Elementwise ops, a slice and a pad of the unsharded dim, a concat along
// it, softmax over it and a transpose, all on 6 rows over 4.
// CHECK-LABEL: func.func @row_local_ops
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32> {{.*}}) -> (tensor<?x14xf32> {dtensor.global_type = tensor<6x14xf32>, dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<8x?xf32> {dtensor.global_type = tensor<8x6xf32>, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK: %[[EXP:.*]] = math.exp %[[X]] : tensor<?x8xf32>
// CHECK-NEXT: %[[ADD:.*]] = arith.addf %[[X]], %[[EXP]] : tensor<?x8xf32>
// CHECK: %[[S:.*]] = arith.subi
// CHECK-NEXT: %[[SL:.*]] = tensor.extract_slice %[[ADD]][0, 2] [%[[S]], 4] [1, 1] : tensor<?x8xf32> to tensor<?x4xf32>
// CHECK-NEXT: %[[PAD:.*]] = tensor.pad %[[SL]] low[0, 1] high[0, 1]
// CHECK: } : tensor<?x4xf32> to tensor<?x6xf32>
// CHECK-NEXT: %[[CAT:.*]] = tensor.concat dim(1) %[[PAD]], %[[X]] : (tensor<?x6xf32>, tensor<?x8xf32>) -> tensor<?x14xf32>
// CHECK: %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x8xf32>
// CHECK-NEXT: %[[SM:.*]] = linalg.softmax dimension(1) ins(%[[X]] : tensor<?x8xf32>) outs(%[[E]] : tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK: %[[E2:.*]] = tensor.empty(%{{.*}}) : tensor<8x?xf32>
// CHECK-NEXT: %[[TR:.*]] = linalg.transpose ins(%[[SM]] : tensor<?x8xf32>) outs(%[[E2]] : tensor<8x?xf32>) permutation = [1, 0]
// CHECK-NEXT: return %[[CAT]], %[[TR]] : tensor<?x14xf32>, tensor<8x?xf32>
func.func @row_local_ops(%x: tensor<6x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> (tensor<6x14xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<8x6xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) {
  %y = math.exp %x {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<6x8xf32>
  %z = arith.addf %x, %y {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<6x8xf32>
  %s = tensor.extract_slice %z[0, 2] [6, 4] [1, 1] {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<6x8xf32> to tensor<6x4xf32>
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %s low[0, 1] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<6x4xf32> to tensor<6x6xf32>
  %c = tensor.concat dim(1) %p, %x {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : (tensor<6x6xf32>, tensor<6x8xf32>) -> tensor<6x14xf32>
  %e = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<6x8xf32>
  %sm = linalg.softmax {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} dimension(1) ins(%x : tensor<6x8xf32>) outs(%e : tensor<6x8xf32>) -> tensor<6x8xf32>
  %e2 = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} : tensor<8x6xf32>
  %t = linalg.transpose ins(%sm : tensor<6x8xf32>) outs(%e2 : tensor<8x6xf32>) permutation = [1, 0] {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
  return %c, %t : tensor<6x14xf32>, tensor<8x6xf32>
}

// -----

dtensor.mesh @ep shape = [2]

// Expert parallelism: tokens and experts sharded along the same axis. The
// counts per destination go out by all_to_all, the rows and ids by
// all_to_all_v with those counts, the local expert (ids relative to this
// rank's first expert, 2 per rank) computes, the results come back.
// CHECK-LABEL: func.func @routed_ep
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32> {{.*}}, %[[IDS:[^:]*]]: tensor<4x2xi64> {{.*}}, %[[W:[^:]*]]: tensor<2x8x6xf32> {{.*}}) -> (tensor<4x2x6xf32>
// CHECK: %[[RANK:.*]] = dtensor.coord @ep axes = [0]
// CHECK: %[[SEND:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} outs(%{{.*}} : tensor<2xi64>)
// CHECK: %[[RECV:.*]] = dtensor.all_to_all %[[SEND]] on @ep axes = [0] split_dim = 0 concat_dim = 0 : tensor<2xi64> -> tensor<2xi64>
// CHECK: %[[ROWS:.*]] = dtensor.all_to_all_v %{{.*}}, %[[SEND]], %[[RECV]] on @ep axes = [0] : tensor<8x8xf32>, tensor<2xi64>, tensor<2xi64> -> tensor<?x8xf32>
// CHECK: %[[GOT:.*]] = dtensor.all_to_all_v %{{.*}}, %[[SEND]], %[[RECV]] on @ep axes = [0] : tensor<8xi64>, tensor<2xi64>, tensor<2xi64> -> tensor<?xi64>
// CHECK: arith.index_cast %[[RANK]]
// CHECK: %[[Y:.*]] = dtensor.routed_matmul %[[ROWS]], %{{.*}}, %[[W]] : tensor<?x8xf32>, tensor<?x1xi64>, tensor<2x8x6xf32> -> tensor<?x1x6xf32>
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[Y]]
// CHECK: dtensor.all_to_all_v %[[FLAT]], %[[RECV]], %[[SEND]] on @ep axes = [0] : tensor<?x6xf32>, tensor<2xi64>, tensor<2xi64> -> tensor<?x6xf32>
// CHECK: return %{{.*}} : tensor<4x2x6xf32>
func.func @routed_ep(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>},
                     %ids: tensor<8x2xi64> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>},
                     %w: tensor<4x8x6xf32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>})
    -> (tensor<8x2x6xf32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>}) {
  %y = dtensor.routed_matmul %x, %ids, %w {dtensor.layouts = [#dtensor.layout<@ep, [S(0)]>]} : tensor<8x8xf32>, tensor<8x2xi64>, tensor<4x8x6xf32> -> tensor<8x2x6xf32>
  return %y : tensor<8x2x6xf32>
}

// -----

dtensor.mesh @ep shape = [2]

// Experts replicated: the op on the local tokens, no communication.
// CHECK-LABEL: func.func @routed_tokens
// CHECK-NOT: dtensor.all_to_all
// CHECK: dtensor.routed_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x1xi32>, tensor<4x8x6xf32> -> tensor<4x1x6xf32>
func.func @routed_tokens(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>},
                         %ids: tensor<8x1xi32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>},
                         %w: tensor<4x8x6xf32> {dtensor.layout = #dtensor.layout<@ep, [R]>})
    -> (tensor<8x1x6xf32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>}) {
  %y = dtensor.routed_matmul %x, %ids, %w {dtensor.layouts = [#dtensor.layout<@ep, [S(0)]>]} : tensor<8x8xf32>, tensor<8x1xi32>, tensor<4x8x6xf32> -> tensor<8x1x6xf32>
  return %y : tensor<8x1x6xf32>
}

//--- errors.mlir

dtensor.mesh @m22 shape = [2, 2]

func.func @unplanned(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), S(1)]>}) -> tensor<8x8xf32> {
  // expected-error @below {{redistribution changes several mesh axes; run --dtensor-plan-redistributions first}}
  %z = dtensor.redistribute %x from <@m22, [S(0), S(1)]> to <@m22, [R, R]> : tensor<8x8xf32>
  return %z : tensor<8x8xf32>
}

// -----

dtensor.mesh @m22 shape = [2, 2]

// One mesh axis changes, but mesh axis 1 still splits dim 0 after it: the
// rows this rank holds are not a chunk of what mesh axis 0 would keep.
func.func @out_of_order_step(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [R, S(0)]>}) -> tensor<8x8xf32> {
  // expected-error @below {{mesh axis 0 cannot change the shard of tensor dimension 0 before mesh axis 1 gives it up; run --dtensor-plan-redistributions first}}
  %z = dtensor.redistribute %x from <@m22, [R, S(0)]> to <@m22, [S(0), S(0)]> : tensor<8x8xf32>
  return %z : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @annotate_left(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<8x8xf32> {
  // expected-error @below {{annotation left in a function being partitioned; run --dtensor-propagate-layouts first}}
  %z = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x8xf32>
  return %z : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Hand-written layouts that no strategy of the op produces.
func.func @not_a_strategy(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, %y: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) -> tensor<8x8xf32> {
  // expected-error @below {{the layouts of this op are not one of its sharding strategies (operands: #dtensor.layout<@tp, [S(0)]>, #dtensor.layout<@tp, [S(1)]>; results: #dtensor.layout<@tp, [S(0)]>)}}
  %z = arith.addf %x, %y {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<8x8xf32>
  return %z : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A split softmax axis.
func.func @softmax_split_axis(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) -> tensor<8x8xf32> {
  %e = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} : tensor<8x8xf32>
  // expected-error @below {{the layouts of this op are not one of its sharding strategies (operands: #dtensor.layout<@tp, [S(1)]>, #dtensor.layout<@tp, [S(1)]>; results: #dtensor.layout<@tp, [S(1)]>)}}
  %s = linalg.softmax {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} dimension(1) ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @no_layout(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<8x8xf32> {
  // expected-error @below {{result without a layout; run --dtensor-propagate-layouts first}}
  %z = arith.addf %x, %x : tensor<8x8xf32>
  return %z : tensor<8x8xf32>
}


// -----

dtensor.mesh @tp shape = [4]

// 6 rows over 4 (2, 2, 2, 0) do not collapse into chunks of 24 (6 each).
func.func @reshape_uneven(%x: tensor<6x4xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<24xf32> {
  // expected-error @below {{reshape splits the outer dim of a merged or split group unevenly (#dtensor.layout<@tp, [S(0)]> to #dtensor.layout<@tp, [S(0)]>)}}
  %c = tensor.collapse_shape %x [[0, 1]] {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<6x4xf32> into tensor<24xf32>
  return %c : tensor<24xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// An even source expanding into an uneven result: 8 columns are 2 per
// rank, but the carrying dim of 2 over 4 is 1, 1, 0, 0.
func.func @reshape_uneven_result(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) -> tensor<8x2x4xf32> {
  // expected-error @below {{reshape splits the outer dim of a merged or split group unevenly (#dtensor.layout<@tp, [S(1)]> to #dtensor.layout<@tp, [S(1)]>)}}
  %c = tensor.expand_shape %x [[0], [1, 2]] output_shape [8, 2, 4] {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} : tensor<8x8xf32> into tensor<8x2x4xf32>
  return %c : tensor<8x2x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Only a zero fill can start as Partial(sum).
func.func @partial_fill_of_one() -> tensor<8x8xf32> {
  %e = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} : tensor<8x8xf32>
  %one = arith.constant 1.0 : f32
  // expected-error @below {{a created value cannot start as #dtensor.layout<@tp, [P(sum)]>}}
  %f = linalg.fill {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%one : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %f : tensor<8x8xf32>
}


// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @pair shape = [2]

// expected-error @below {{layouts on several meshes (@tp, @pair) in one function are not supported}}
func.func @two_meshes(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> (tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@pair, [S(0)]>}) {
  return %x : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// The declared result layout is part of the function's contract.
func.func @result_layout_mismatch(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> (tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) {
  // expected-error @below {{result #0 is returned as #dtensor.layout<@tp, [S(0)]> but the function declares #dtensor.layout<@tp, [S(1)]>; run --dtensor-propagate-layouts first}}
  return %x : tensor<8x8xf32>
}

// -----

dtensor.mesh @m22 shape = [2, 2]

// Hand-written layouts are checked against the mesh and the tensor before
// anything is rewritten.
// expected-error @below {{'func.func' op [LAYOUT2] expected 2 placements for mesh @m22, got 3}}
func.func @arg_layout_arity(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), R, S(1)]>}) -> tensor<8x8xf32> {
  return %x : tensor<8x8xf32>
}

// -----

dtensor.mesh @m22 shape = [2, 2]

// expected-error @below {{'func.func' op [LAYOUT3] placement S(7) is out of range for a rank-2 tensor}}
func.func @result_layout_dim(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), R]>}) -> (tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(7), R]>}) {
  return %x : tensor<8x8xf32>
}

// -----

dtensor.mesh @m22 shape = [2, 2]

func.func @op_layout_arity(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), R]>}) -> tensor<8x8xf32> {
  // expected-error @below {{'math.exp' op [LAYOUT2] expected 2 placements for mesh @m22, got 1}}
  %y = math.exp %x {dtensor.layouts = [#dtensor.layout<@m22, [S(0)]>]} : tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

dtensor.mesh @m22 shape = [2, 2]

func.func @op_layout_count(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), R]>}) -> tensor<8x8xf32> {
  // expected-error @below {{'dtensor.layouts' must list one entry per result}}
  %y = math.exp %x {dtensor.layouts = [#dtensor.layout<@m22, [S(0), R]>, #dtensor.layout<@m22, [S(0), R]>]} : tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

dtensor.mesh @m22 shape = [2, 2]

func.func @op_layout_kind(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), R]>}) -> tensor<8x8xf32> {
  // expected-error @below {{the layout of result #0 is not a #dtensor.layout: unit}}
  %y = math.exp %x {dtensor.layouts = [unit]} : tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

dtensor.mesh @m22 shape = [2, 2]

// expected-error @below {{the layout of argument #1 is not a #dtensor.layout: 5 : i64}}
func.func @arg_layout_kind(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), R]>}, %y: tensor<8x8xf32> {dtensor.layout = 5}) -> tensor<8x8xf32> {
  return %x : tensor<8x8xf32>
}

// -----

dtensor.mesh @m22 shape = [2, 2]

// expected-error @below {{@nomesh does not name a dtensor.mesh}}
func.func @unknown_mesh(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@nomesh, [S(0), R]>}) -> tensor<8x8xf32> {
  return %x : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A loop whose carried tensor enters S(0) and leaves R (propagation gives
// a carried tensor one layout).
func.func @loop_layouts(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<8x8xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  // expected-error @below {{a loop carries a tensor entering as #dtensor.layout<@tp, [S(0)]> and leaving as #dtensor.layout<@tp, [R]>; run --dtensor-propagate-layouts first}}
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %x) -> (tensor<8x8xf32>) {
    scf.yield %a : tensor<8x8xf32>
  } {dtensor.layouts = [#dtensor.layout<@tp, [R]>]}
  return %r : tensor<8x8xf32>
}

// -----

dtensor.mesh @ep shape = [4]

func.func @experts_uneven(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>},
                          %ids: tensor<8x1xi64> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>},
                          %w: tensor<6x8x6xf32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>})
    -> (tensor<8x1x6xf32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>}) {
  // expected-error @below {{expert parallelism needs the 6 experts to split evenly over the 4 processes of mesh axis 0}}
  %y = dtensor.routed_matmul %x, %ids, %w {dtensor.layouts = [#dtensor.layout<@ep, [S(0)]>]} : tensor<8x8xf32>, tensor<8x1xi64>, tensor<6x8x6xf32> -> tensor<8x1x6xf32>
  return %y : tensor<8x1x6xf32>
}

// -----

dtensor.mesh @m22 shape = [2, 2]

func.func @experts_two_axes(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), S(0)]>},
                            %ids: tensor<8x1xi64> {dtensor.layout = #dtensor.layout<@m22, [S(0), S(0)]>},
                            %w: tensor<4x8x6xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), S(0)]>})
    -> (tensor<8x1x6xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), S(0)]>}) {
  // expected-error @below {{experts sharded over several mesh axes are not supported (shard w dim 0 over one axis)}}
  %y = dtensor.routed_matmul %x, %ids, %w {dtensor.layouts = [#dtensor.layout<@m22, [S(0), S(0)]>]} : tensor<8x8xf32>, tensor<8x1xi64>, tensor<4x8x6xf32> -> tensor<8x1x6xf32>
  return %y : tensor<8x1x6xf32>
}

// -----

dtensor.mesh @ep shape = [2]

func.func @choices_dynamic(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>},
                           %ids: tensor<8x?xi64> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>},
                           %w: tensor<4x8x6xf32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>})
    -> (tensor<8x?x6xf32> {dtensor.layout = #dtensor.layout<@ep, [S(0)]>}) {
  // expected-error @below {{expert parallelism needs a static number of choices per token (ids dim 1)}}
  %y = dtensor.routed_matmul %x, %ids, %w {dtensor.layouts = [#dtensor.layout<@ep, [S(0)]>]} : tensor<8x8xf32>, tensor<8x?xi64>, tensor<4x8x6xf32> -> tensor<8x?x6xf32>
  return %y : tensor<8x?x6xf32>
}
