// Fused comm + compute ops become ring pipelines: per step a chunk matmul
// overlapped with an asynchronous dtensor.permute; chunk order follows the
// group order of all_gather and the chunk-per-index of reduce_scatter.
// RUN: dtensor-opt %s --split-input-file --dtensor-decompose-fused -verify-diagnostics | FileCheck %s
// dtensor-lower-to-runtime decomposes fused ops the same way before it
// lowers collectives: the pipeline's permutes become runtime calls.
// RUN: dtensor-opt %s --split-input-file --dtensor-lower-to-runtime -verify-diagnostics | FileCheck %s --check-prefix=RT

// all_gather_matmul on 4 ranks, two Bs, the gathered A used: step s holds
// the shard of group index (r + s) mod 4 and writes row block (r + s) mod 4;
// every process passes its shard to index i - 1 (perm [3, 0, 1, 2]) while
// it multiplies, so three permutes for four steps.
dtensor.mesh @tp shape = [4]
// CHECK-LABEL: func @agmm
// CHECK-SAME: (%[[A:.*]]: tensor<2x16xf32>, %[[B:.*]]: tensor<16x32xf32>, %[[B2:.*]]: tensor<16x8xf32>)
// CHECK-NOT: all_gather
// CHECK-DAG: %[[G0:.*]] = tensor.empty() : tensor<8x16xf32>
// CHECK-DAG: %[[C0:.*]] = tensor.empty() : tensor<8x32xf32>
// CHECK-DAG: %[[D0:.*]] = tensor.empty() : tensor<8x8xf32>
// CHECK: %[[R:.*]] = dtensor.coord @tp axes = [0] : index
// Step 0: own shard, block r.
// CHECK: %[[F0:.*]] = dtensor.async_start
// CHECK-NEXT: dtensor.permute %[[A]] on @tp axes = [0] perm = [3, 0, 1, 2] : tensor<2x16xf32>
// CHECK: %[[OFF0:.*]] = arith.muli %[[R]], %{{.*}} : index
// CHECK: %[[P0:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<2x16xf32>, tensor<16x32xf32>)
// CHECK: %[[C1:.*]] = tensor.insert_slice %[[P0]] into %[[C0]][%[[OFF0]], 0] [2, 32] [1, 1]
// CHECK: %[[Q0:.*]] = linalg.matmul ins(%[[A]], %[[B2]] : tensor<2x16xf32>, tensor<16x8xf32>)
// CHECK: %[[D1:.*]] = tensor.insert_slice %[[Q0]] into %[[D0]][%[[OFF0]], 0] [2, 8] [1, 1]
// CHECK: %[[G1:.*]] = tensor.insert_slice %[[A]] into %[[G0]][%[[OFF0]], 0] [2, 16] [1, 1]
// CHECK: %[[S1:.*]] = dtensor.wait %[[F0]]
// Step 1: the shard of r + 1, block (r + 1) mod 4.
// CHECK: %[[F1:.*]] = dtensor.async_start
// CHECK-NEXT: dtensor.permute %[[S1]] on @tp axes = [0] perm = [3, 0, 1, 2]
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[SUM1:.*]] = arith.addi %[[R]], %[[ONE]] : index
// CHECK: %[[FOUR:.*]] = arith.constant 4 : index
// CHECK: %[[IDX1:.*]] = arith.remui %[[SUM1]], %[[FOUR]] : index
// CHECK: %[[OFF1:.*]] = arith.muli %[[IDX1]], %{{.*}} : index
// CHECK: %[[P1:.*]] = linalg.matmul ins(%[[S1]], %[[B]]
// CHECK: %[[C2:.*]] = tensor.insert_slice %[[P1]] into %[[C1]][%[[OFF1]], 0] [2, 32] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %[[D1]][%[[OFF1]], 0] [2, 8] [1, 1]
// CHECK: tensor.insert_slice %[[S1]] into %[[G1]][%[[OFF1]], 0] [2, 16] [1, 1]
// CHECK: %[[S2:.*]] = dtensor.wait %[[F1]]
// Step 2.
// CHECK: dtensor.async_start
// CHECK-NEXT: dtensor.permute %[[S2]]
// CHECK: arith.constant 2 : index
// CHECK: linalg.matmul ins(%[[S2]], %[[B]]
// CHECK: %[[S3:.*]] = dtensor.wait
// Step 3: the last shard, nothing left to send.
// CHECK-NOT: dtensor.async_start
// CHECK: %[[THREE:.*]] = arith.constant 3 : index
// CHECK: arith.addi %[[R]], %[[THREE]] : index
// CHECK: linalg.matmul ins(%[[S3]], %[[B]]
// CHECK: %[[CF:.*]] = tensor.insert_slice
// CHECK: %[[DF:.*]] = tensor.insert_slice
// CHECK: %[[GF:.*]] = tensor.insert_slice %[[S3]]
// CHECK: return %[[GF]], %[[CF]], %[[DF]]
// RT-LABEL: func @agmm
// RT-COUNT-3: call @dtensor_rt_start_permute_f32
// RT-NOT: dtensor_rt_all_gather
// RT: return
func.func @agmm(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>, %b2: tensor<16x8xf32>) -> (tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x8xf32>) {
  %g, %c, %d = dtensor.all_gather_matmul %a, %b, %b2 on @tp axes = [0] gather_dim = 0 : tensor<2x16xf32>, tensor<16x32xf32>, tensor<16x8xf32> -> tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x8xf32>
  return %g, %c, %d : tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x8xf32>
}

// -----

// The gathered A unused: it is not assembled. A rank-3 chunk is multiplied
// as a 2-D matmul on its flattened rows, and its block lies along
// gather_dim 1.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @agmm_rank3
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x8xf32>, %[[B:.*]]: tensor<8x4xf32>)
// CHECK: %[[C0:.*]] = tensor.empty() : tensor<2x6x4xf32>
// CHECK: %[[R:.*]] = dtensor.coord @tp axes = [0] : index
// CHECK: dtensor.permute %[[A]] on @tp axes = [0] perm = [1, 0] : tensor<2x3x8xf32>
// CHECK: %[[OFF0:.*]] = arith.muli %[[R]], %{{.*}} : index
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[A]] {{\[}}[0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
// CHECK: %[[P0:.*]] = linalg.matmul ins(%[[FLAT]], %[[B]] : tensor<6x8xf32>, tensor<8x4xf32>)
// CHECK: %[[E0:.*]] = tensor.expand_shape %[[P0]] {{\[}}[0, 1], [2]] output_shape [2, 3, 4] : tensor<6x4xf32> into tensor<2x3x4xf32>
// CHECK: %[[C1:.*]] = tensor.insert_slice %[[E0]] into %[[C0]][0, %[[OFF0]], 0] [2, 3, 4] [1, 1, 1]
// CHECK-NOT: tensor.insert_slice %[[A]]
// CHECK: %[[S1:.*]] = dtensor.wait
// CHECK: tensor.collapse_shape %[[S1]]
// CHECK: %[[C2:.*]] = tensor.insert_slice %{{.*}} into %[[C1]][0, %{{.*}}, 0] [2, 3, 4] [1, 1, 1]
// CHECK-NOT: tensor.insert_slice
// CHECK: return %[[C2]]
func.func @agmm_rank3(%a: tensor<2x3x8xf32>, %b: tensor<8x4xf32>) -> tensor<2x6x4xf32> {
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 1 : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x6x8xf32>, tensor<2x6x4xf32>
  return %c : tensor<2x6x4xf32>
}

// -----

// matmul_reduce_scatter on 4 ranks along rows, avg: step s computes the
// partial product of row block (r - s - 1) mod 4 = (r + 3 - s) mod 4, the
// accumulator goes to index i + 1 (perm [1, 2, 3, 0]) and the received one
// is added; the last block is r itself; then the sum is divided by 4.
dtensor.mesh @tp shape = [4]
// CHECK-LABEL: func @mmrs
// CHECK-SAME: (%[[A:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16x32xf32>)
// CHECK-NOT: reduce_scatter
// CHECK: %[[R:.*]] = dtensor.coord @tp axes = [0] : index
// CHECK: %[[K3:.*]] = arith.constant 3 : index
// CHECK: %[[I0:.*]] = arith.addi %[[R]], %[[K3]] : index
// CHECK: arith.remui %[[I0]]
// CHECK: %[[ROWS0:.*]] = tensor.extract_slice %[[A]][%{{.*}}, 0] [2, 16] [1, 1] : tensor<8x16xf32> to tensor<2x16xf32>
// CHECK: %[[ACC0:.*]] = linalg.matmul ins(%[[ROWS0]], %[[B]]
// CHECK: %[[F1:.*]] = dtensor.async_start
// CHECK-NEXT: dtensor.permute %[[ACC0]] on @tp axes = [0] perm = [1, 2, 3, 0] : tensor<2x32xf32>
// CHECK: %[[K2:.*]] = arith.constant 2 : index
// CHECK: arith.addi %[[R]], %[[K2]] : index
// CHECK: %[[PART1:.*]] = linalg.matmul
// CHECK: %[[RECV1:.*]] = dtensor.wait %[[F1]]
// CHECK: %[[ACC1:.*]] = linalg.add ins(%[[RECV1]], %[[PART1]] : tensor<2x32xf32>, tensor<2x32xf32>)
// CHECK: dtensor.permute %[[ACC1]] on @tp axes = [0] perm = [1, 2, 3, 0]
// CHECK: %[[K1:.*]] = arith.constant 1 : index
// CHECK: arith.addi %[[R]], %[[K1]] : index
// CHECK: %[[ACC2:.*]] = linalg.add
// CHECK: dtensor.permute %[[ACC2]] on @tp axes = [0] perm = [1, 2, 3, 0]
// Last step: block r.
// CHECK-NOT: arith.addi %[[R]]
// CHECK: %[[OFF3:.*]] = arith.muli %[[R]], %{{.*}} : index
// CHECK: tensor.extract_slice %[[A]][%[[OFF3]], 0] [2, 16] [1, 1]
// CHECK: %[[SUM:.*]] = linalg.add
// CHECK: %[[N:.*]] = arith.constant 4.000000e+00 : f32
// CHECK: %[[AVG:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<2x32xf32>)
// CHECK: arith.divf %{{.*}}, %[[N]] : f32
// CHECK: return %[[AVG]]
// RT-LABEL: func @mmrs
// RT-COUNT-3: call @dtensor_rt_start_permute_f32
// RT-NOT: dtensor_rt_reduce_scatter
// RT: return
func.func @mmrs(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<2x32xf32> {
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0 reduce = avg : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<2x32xf32>
  return %c : tensor<2x32xf32>
}

// -----

// Scattering the last dim: the partial products are A times column blocks
// of B.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @mmrs_columns
// CHECK-SAME: (%[[A:.*]]: tensor<6x8xf32>, %[[B:.*]]: tensor<8x4xf32>)
// CHECK: %[[COLS0:.*]] = tensor.extract_slice %[[B]][0, %{{.*}}] [8, 2] [1, 1] : tensor<8x4xf32> to tensor<8x2xf32>
// CHECK: %[[ACC0:.*]] = linalg.matmul ins(%[[A]], %[[COLS0]] : tensor<6x8xf32>, tensor<8x2xf32>)
// CHECK: dtensor.permute %[[ACC0]] on @tp axes = [0] perm = [1, 0] : tensor<6x2xf32>
// CHECK: %[[COLS1:.*]] = tensor.extract_slice %[[B]][0, %{{.*}}] [8, 2] [1, 1]
// CHECK: %[[PART:.*]] = linalg.matmul ins(%[[A]], %[[COLS1]]
// CHECK: %[[RECV:.*]] = dtensor.wait
// CHECK: %[[SUM:.*]] = linalg.add ins(%[[RECV]], %[[PART]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[SUM]]
func.func @mmrs_columns(%a: tensor<6x8xf32>, %b: tensor<8x4xf32>) -> tensor<6x2xf32> {
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<6x8xf32>, tensor<8x4xf32> -> tensor<6x2xf32>
  return %c : tensor<6x2xf32>
}

// -----

// Integer avg truncates, as the runtime's does.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @mmrs_int_avg
// CHECK: linalg.add
// CHECK: %[[N:.*]] = arith.constant 2 : i32
// CHECK: arith.divsi %{{.*}}, %[[N]] : i32
func.func @mmrs_int_avg(%a: tensor<4x8xi32>, %b: tensor<8x4xi32>) -> tensor<2x4xi32> {
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0 reduce = avg : tensor<4x8xi32>, tensor<8x4xi32> -> tensor<2x4xi32>
  return %c : tensor<2x4xi32>
}

// -----

// An asynchronous fused op runs its pipeline where it was started; the
// waits take the pipeline's results.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @async
// CHECK-SAME: (%[[A:.*]]: tensor<2x8xf32>, %[[B:.*]]: tensor<8x4xf32>)
// CHECK-NOT: all_gather_matmul
// CHECK: dtensor.permute %[[A]]
// CHECK: dtensor.wait
// CHECK-NOT: dtensor.wait
// CHECK: %[[C:.*]] = tensor.insert_slice
// CHECK: %[[N:.*]] = linalg.negf ins(%[[C]]
// CHECK: return %[[N]]
func.func @async(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %f:2 = dtensor.async_start {
    %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0 : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<4x8xf32>, tensor<4x4xf32>
    dtensor.yield %g, %c : tensor<4x8xf32>, tensor<4x4xf32>
  } : !dtensor.future<tensor<4x8xf32>>, !dtensor.future<tensor<4x4xf32>>
  %g = dtensor.wait %f#0 : !dtensor.future<tensor<4x8xf32>>
  %c = dtensor.wait %f#1 : !dtensor.future<tensor<4x4xf32>>
  %e = tensor.empty() : tensor<4x4xf32>
  %n = linalg.negf ins(%c : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %n : tensor<4x4xf32>
}

// -----

// A group of one: no communication at all.
dtensor.mesh @one shape = [1]
// CHECK-LABEL: func @single
// CHECK-SAME: (%[[A:.*]]: tensor<2x8xf32>, %[[B:.*]]: tensor<8x4xf32>)
// CHECK-NOT: dtensor.
// CHECK: %[[C:.*]] = linalg.matmul ins(%[[A]], %[[B]]
// CHECK: return %[[A]], %[[C]]
func.func @single(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) -> (tensor<2x8xf32>, tensor<2x4xf32>) {
  %g, %c = dtensor.all_gather_matmul %a, %b on @one axes = [0] gather_dim = 0 : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x8xf32>, tensor<2x4xf32>
  return %g, %c : tensor<2x8xf32>, tensor<2x4xf32>
}

// -----

// A fused op on a tensor with a size-0 dimension is refused: its pipeline
// would slice the empty dimension (invalid IR), and there is nothing to
// overlap. Found by the fuzzer (issue 26).
dtensor.mesh @tp shape = [2]
func.func @empty_n(%a: tensor<?x4xi8>, %b: tensor<4x0xi8>) -> tensor<8x0xi8> {
  // expected-error @below {{cannot decompose a fused op on a tensor with an empty dimension}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0 : tensor<?x4xi8>, tensor<4x0xi8> -> tensor<8x4xi8>, tensor<8x0xi8>
  return %c : tensor<8x0xi8>
}
