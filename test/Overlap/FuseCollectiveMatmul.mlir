// Legality of comm-compute fusion on per-rank programs (force=true skips the
// cost gate; the gate has its own cases at the end). Every all_gather and
// reduce_scatter gets a remark saying whether it was fused and why.
// RUN: dtensor-opt %s --split-input-file --dtensor-fuse-collective-matmul=force=true -verify-diagnostics | FileCheck %s

// all_gather along dim 0 of a rank-2 A into linalg.matmul.
dtensor.mesh @tp shape = [4]
// CHECK-LABEL: func @ag_dim0_rank2
// CHECK-SAME: (%[[A:.*]]: tensor<2x16xf32>, %[[B:.*]]: tensor<16x32xf32>)
// CHECK-NOT: dtensor.all_gather %
// CHECK: %{{.*}}, %[[C:.*]] = dtensor.all_gather_matmul %[[A]], %[[B]] on @tp axes = [0] gather_dim = 0 : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
// CHECK-NOT: linalg.matmul
// CHECK: return %[[C]]
func.func @ag_dim0_rank2(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{fused with 1 matmul into dtensor.all_gather_matmul: force=true}}
  %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %c = linalg.matmul ins(%g, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %c : tensor<8x32xf32>
}

// -----

// all_gather along A's last (contracted) dim: not fused (seed: gather_dim
// == A_dims - 1).
dtensor.mesh @tp shape = [4]
// CHECK-LABEL: func @ag_last_dim_rank2
// CHECK: dtensor.all_gather %{{.*}} gather_dim = 1
// CHECK: linalg.matmul
// CHECK-NOT: all_gather_matmul
func.func @ag_last_dim_rank2(%a: tensor<8x4xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{not fused: gather_dim 1 is A's last dim, which the matmul contracts (AGMM2)}}
  %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 1 : tensor<8x4xf32> -> tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %c = linalg.matmul ins(%g, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %c : tensor<8x32xf32>
}

// -----

// Rank-3 A, gather_dim 0, 1 and 2, consumed by a batch-row contraction
// (linalg.generic): dims 0 and 1 fuse, dim 2 does not.
dtensor.mesh @tp shape = [2]
#a = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (k, n)>
#c = affine_map<(b, s, n, k) -> (b, s, n)>
// CHECK-LABEL: func @ag_rank3
// CHECK-SAME: (%[[A0:.*]]: tensor<1x64x32xf32>, %[[A1:.*]]: tensor<2x32x32xf32>, %[[A2:.*]]: tensor<2x64x16xf32>, %[[B:.*]]: tensor<32x16xf32>)
// CHECK: %{{.*}}, %[[C0:.*]] = dtensor.all_gather_matmul %[[A0]], %[[B]] on @tp axes = [0] gather_dim = 0 : tensor<1x64x32xf32>, tensor<32x16xf32> -> tensor<2x64x32xf32>, tensor<2x64x16xf32>
// CHECK: %{{.*}}, %[[C1:.*]] = dtensor.all_gather_matmul %[[A1]], %[[B]] on @tp axes = [0] gather_dim = 1 : tensor<2x32x32xf32>, tensor<32x16xf32> -> tensor<2x64x32xf32>, tensor<2x64x16xf32>
// CHECK: %[[G2:.*]] = dtensor.all_gather %[[A2]] on @tp axes = [0] gather_dim = 2
// CHECK: %[[C2:.*]] = linalg.generic {{.*}} ins(%[[G2]], %[[B]]
// CHECK: return %[[C0]], %[[C1]], %[[C2]]
func.func @ag_rank3(%a0: tensor<1x64x32xf32>, %a1: tensor<2x32x32xf32>, %a2: tensor<2x64x16xf32>, %b: tensor<32x16xf32>)
    -> (tensor<2x64x16xf32>, tensor<2x64x16xf32>, tensor<2x64x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  // expected-remark @below {{fused with 1 matmul into dtensor.all_gather_matmul}}
  %g0 = dtensor.all_gather %a0 on @tp axes = [0] gather_dim = 0 : tensor<1x64x32xf32> -> tensor<2x64x32xf32>
  %c0 = linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%g0, %b : tensor<2x64x32xf32>, tensor<32x16xf32>) outs(%f : tensor<2x64x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  // expected-remark @below {{fused with 1 matmul into dtensor.all_gather_matmul}}
  %g1 = dtensor.all_gather %a1 on @tp axes = [0] gather_dim = 1 : tensor<2x32x32xf32> -> tensor<2x64x32xf32>
  %c1 = linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%g1, %b : tensor<2x64x32xf32>, tensor<32x16xf32>) outs(%f : tensor<2x64x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  // expected-remark @below {{not fused: gather_dim 2 is A's last dim, which the matmul contracts (AGMM2)}}
  %g2 = dtensor.all_gather %a2 on @tp axes = [0] gather_dim = 2 : tensor<2x64x16xf32> -> tensor<2x64x32xf32>
  %c2 = linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%g2, %b : tensor<2x64x32xf32>, tensor<32x16xf32>) outs(%f : tensor<2x64x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  return %c0, %c1, %c2 : tensor<2x64x16xf32>, tensor<2x64x16xf32>, tensor<2x64x16xf32>
}

// -----

// The matmul sees the gathered A through views that keep the contracted dim
// last: the views are applied to the fused op's product instead.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @ag_through_views
// CHECK-SAME: (%[[A:.*]]: tensor<2x4x16xf32>, %[[B:.*]]: tensor<16x8xf32>)
// CHECK: %{{.*}}, %[[C:.*]] = dtensor.all_gather_matmul %[[A]], %[[B]] on @tp axes = [0] gather_dim = 1 : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x8x16xf32>, tensor<2x8x8xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[C]] : tensor<2x8x8xf32>) outs(%{{.*}} : tensor<8x2x8xf32>) permutation = [1, 0, 2]
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[T]] {{\[}}[0, 1], [2]] : tensor<8x2x8xf32> into tensor<16x8xf32>
// CHECK: return %[[R]]
func.func @ag_through_views(%a: tensor<2x4x16xf32>, %b: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{fused with 1 matmul}}
  %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
  %te = tensor.empty() : tensor<8x2x16xf32>
  %t = linalg.transpose ins(%g : tensor<2x8x16xf32>) outs(%te : tensor<8x2x16xf32>) permutation = [1, 0, 2]
  %v = tensor.collapse_shape %t [[0, 1], [2]] : tensor<8x2x16xf32> into tensor<16x16xf32>
  %e = tensor.empty() : tensor<16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %c = linalg.matmul ins(%v, %b : tensor<16x16xf32>, tensor<16x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}

// -----

// Uneven shards: the partitioner gathers padded buffers and trims after;
// the trim (an extract_slice of rows) moves to the product.
dtensor.mesh @tp shape = [4]
// CHECK-LABEL: func @ag_trimmed
// CHECK: %{{.*}}, %[[C:.*]] = dtensor.all_gather_matmul %{{.*}}, %{{.*}} on @tp axes = [0] gather_dim = 0 : tensor<2x16xf32>, tensor<16x8xf32> -> tensor<8x16xf32>, tensor<8x8xf32>
// CHECK: %[[S:.*]] = tensor.extract_slice %[[C]][0, 0] [6, 8] [1, 1] : tensor<8x8xf32> to tensor<6x8xf32>
// CHECK: return %[[S]]
func.func @ag_trimmed(%a: tensor<?x16xf32>, %b: tensor<16x8xf32>) -> tensor<6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %a, %c0 : tensor<?x16xf32>
  %c2 = arith.constant 2 : index
  %high = arith.subi %c2, %rows : index
  %p = tensor.pad %a low[0, 0] high[%high, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<?x16xf32> to tensor<2x16xf32>
  // expected-remark @below {{fused with 1 matmul}}
  %g = dtensor.all_gather %p on @tp axes = [0] gather_dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
  %t = tensor.extract_slice %g[0, 0] [6, 16] [1, 1] : tensor<8x16xf32> to tensor<6x16xf32>
  %e = tensor.empty() : tensor<6x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<6x8xf32>) -> tensor<6x8xf32>
  %c = linalg.matmul ins(%t, %b : tensor<6x16xf32>, tensor<16x8xf32>) outs(%f : tensor<6x8xf32>) -> tensor<6x8xf32>
  return %c : tensor<6x8xf32>
}

// -----

// q/k/v: three matmuls on one gathered A share one fused op; the third
// reads B as [n, k] (nn.Linear weights), which is transposed for the op.
dtensor.mesh @tp shape = [4]
#a2 = affine_map<(m, n, k) -> (m, k)>
#wt = affine_map<(m, n, k) -> (n, k)>
#c2 = affine_map<(m, n, k) -> (m, n)>
// CHECK-LABEL: func @qkv
// CHECK-SAME: (%[[X:.*]]: tensor<4x32xf32>, %[[WQ:.*]]: tensor<32x16xf32>, %[[WK:.*]]: tensor<32x16xf32>, %[[WV:.*]]: tensor<8x32xf32>)
// CHECK: %[[WVT:.*]] = linalg.transpose ins(%[[WV]] : tensor<8x32xf32>) outs(%{{.*}} : tensor<32x8xf32>) permutation = [1, 0]
// CHECK: %{{.*}}, %[[Q:.*]]:3 = dtensor.all_gather_matmul %[[X]], %[[WQ]], %[[WK]], %[[WVT]] on @tp axes = [0] gather_dim = 0 : tensor<4x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x8xf32> -> tensor<16x32xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>
// CHECK-NOT: dtensor.all_gather %
// CHECK-NOT: linalg.matmul
// CHECK: return %[[Q]]#0, %[[Q]]#1, %[[Q]]#2
func.func @qkv(%x: tensor<4x32xf32>, %wq: tensor<32x16xf32>, %wk: tensor<32x16xf32>, %wv: tensor<8x32xf32>)
    -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{fused with 3 matmuls into dtensor.all_gather_matmul: force=true}}
  %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = 0 : tensor<4x32xf32> -> tensor<16x32xf32>
  %e = tensor.empty() : tensor<16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %q = linalg.matmul ins(%g, %wq : tensor<16x32xf32>, tensor<32x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  %k = linalg.matmul ins(%g, %wk : tensor<16x32xf32>, tensor<32x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  %ev = tensor.empty() : tensor<16x8xf32>
  %fv = linalg.fill ins(%zero : f32) outs(%ev : tensor<16x8xf32>) -> tensor<16x8xf32>
  %v = linalg.generic {indexing_maps = [#a2, #wt, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%g, %wv : tensor<16x32xf32>, tensor<8x32xf32>) outs(%fv : tensor<16x8xf32>) {
  ^bb0(%in: f32, %w: f32, %acc: f32):
    %p = arith.mulf %in, %w : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x8xf32>
  return %q, %k, %v : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>
}

// -----

// B computed from the gathered A: that matmul is not fused; with no other
// matmul left, the all_gather stays.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @b_depends_on_gather
// CHECK: dtensor.all_gather %
// CHECK-NOT: all_gather_matmul
func.func @b_depends_on_gather(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{not fused: no matmul can take the gathered A: its B operand depends on the gathered A}}
  %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %b = tensor.extract_slice %g[0, 0] [8, 4] [1, 1] : tensor<8x8xf32> to tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c = linalg.matmul ins(%g, %b : tensor<8x8xf32>, tensor<8x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// -----

// The gathered A has another, non-matmul user: fused anyway (as PyTorch
// does with return_A), the other user takes the fused op's gathered A.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @gathered_a_also_used
// CHECK: %[[G:.*]], %[[C:.*]] = dtensor.all_gather_matmul
// CHECK: %[[N:.*]] = linalg.negf ins(%[[G]] : tensor<8x8xf32>)
// CHECK: return %[[C]], %[[N]]
func.func @gathered_a_also_used(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{fused with 1 matmul into dtensor.all_gather_matmul (the gathered A has other users and is returned too): force=true}}
  %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c = linalg.matmul ins(%g, %b : tensor<8x8xf32>, tensor<8x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  %en = tensor.empty() : tensor<8x8xf32>
  %n = linalg.negf ins(%g : tensor<8x8xf32>) outs(%en : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %c, %n : tensor<8x4xf32>, tensor<8x8xf32>
}

// -----

// The gathered A as B of a matmul, and a matmul accumulating into a
// non-zero tensor: neither can take the gather.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @not_row_operand
// CHECK: dtensor.all_gather %
// CHECK: dtensor.all_gather %
// CHECK-NOT: all_gather_matmul
func.func @not_row_operand(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>, %acc: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{not fused: no matmul can take the gathered A: a matmul uses the gathered A as its B operand}}
  %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %c = linalg.matmul ins(%b, %g : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  // expected-remark @below {{not fused: no matmul can take the gathered A: the matmul accumulates into a tensor that is not zero}}
  %g2 = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %d = linalg.matmul ins(%g2, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %c, %d : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A weight prepared after the all_gather (a transpose of a parameter)
// moves above it.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @b_after_gather
// CHECK: %[[BT:.*]] = linalg.transpose
// CHECK: dtensor.all_gather_matmul %{{.*}}, %[[BT]]
func.func @b_after_gather(%a: tensor<4x8xf32>, %w: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{fused with 1 matmul}}
  %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %te = tensor.empty() : tensor<8x4xf32>
  %bt = linalg.transpose ins(%w : tensor<4x8xf32>) outs(%te : tensor<8x4xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c = linalg.matmul ins(%g, %bt : tensor<8x8xf32>, tensor<8x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// -----

// matmul + reduce_scatter fuses for every scatter dim (seed: scatter_dim 0,
// 1 of rank-2 A; 0, 1, 2 of rank-3 A), sum and avg.
dtensor.mesh @tp shape = [2]
#a = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (k, n)>
#c = affine_map<(b, s, n, k) -> (b, s, n)>
// CHECK-LABEL: func @mm_rs
// CHECK-SAME: (%[[A:.*]]: tensor<64x32xf32>, %[[A3:.*]]: tensor<2x64x32xf32>, %[[B:.*]]: tensor<32x16xf32>)
// CHECK: %[[R0:.*]] = dtensor.matmul_reduce_scatter %[[A]], %[[B]] on @tp axes = [0] scatter_dim = 0 reduce = avg : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<32x16xf32>
// CHECK: %[[R1:.*]] = dtensor.matmul_reduce_scatter %[[A]], %[[B]] on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x8xf32>
// CHECK: %[[R2:.*]] = dtensor.matmul_reduce_scatter %[[A3]], %[[B]] on @tp axes = [0] scatter_dim = 0 reduce = avg : tensor<2x64x32xf32>, tensor<32x16xf32> -> tensor<1x64x16xf32>
// CHECK: %[[R3:.*]] = dtensor.matmul_reduce_scatter %[[A3]], %[[B]] on @tp axes = [0] scatter_dim = 1 reduce = avg : tensor<2x64x32xf32>, tensor<32x16xf32> -> tensor<2x32x16xf32>
// CHECK: %[[R4:.*]] = dtensor.matmul_reduce_scatter %[[A3]], %[[B]] on @tp axes = [0] scatter_dim = 2 reduce = sum : tensor<2x64x32xf32>, tensor<32x16xf32> -> tensor<2x64x8xf32>
// CHECK-NOT: dtensor.reduce_scatter %
// CHECK-NOT: linalg.matmul
// CHECK-NOT: linalg.generic
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]]
func.func @mm_rs(%a: tensor<64x32xf32>, %a3: tensor<2x64x32xf32>, %b: tensor<32x16xf32>)
    -> (tensor<32x16xf32>, tensor<64x8xf32>, tensor<1x64x16xf32>, tensor<2x32x16xf32>, tensor<2x64x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %p0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x16xf32>) outs(%f : tensor<64x16xf32>) -> tensor<64x16xf32>
  // expected-remark @below {{fused with its matmul into dtensor.matmul_reduce_scatter: force=true}}
  %r0 = dtensor.reduce_scatter %p0 on @tp axes = [0] scatter_dim = 0 reduce = avg : tensor<64x16xf32> -> tensor<32x16xf32>
  %p1 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x16xf32>) outs(%f : tensor<64x16xf32>) -> tensor<64x16xf32>
  // expected-remark @below {{fused with its matmul}}
  %r1 = dtensor.reduce_scatter %p1 on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<64x16xf32> -> tensor<64x8xf32>
  %e3 = tensor.empty() : tensor<2x64x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  %p2 = linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a3, %b : tensor<2x64x32xf32>, tensor<32x16xf32>) outs(%f3 : tensor<2x64x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  // expected-remark @below {{fused with its matmul}}
  %r2 = dtensor.reduce_scatter %p2 on @tp axes = [0] scatter_dim = 0 reduce = avg : tensor<2x64x16xf32> -> tensor<1x64x16xf32>
  %p3 = linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a3, %b : tensor<2x64x32xf32>, tensor<32x16xf32>) outs(%f3 : tensor<2x64x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  // expected-remark @below {{fused with its matmul}}
  %r3 = dtensor.reduce_scatter %p3 on @tp axes = [0] scatter_dim = 1 reduce = avg : tensor<2x64x16xf32> -> tensor<2x32x16xf32>
  %p4 = linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a3, %b : tensor<2x64x32xf32>, tensor<32x16xf32>) outs(%f3 : tensor<2x64x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x16xf32>
  // expected-remark @below {{fused with its matmul}}
  %r4 = dtensor.reduce_scatter %p4 on @tp axes = [0] scatter_dim = 2 reduce = sum : tensor<2x64x16xf32> -> tensor<2x64x8xf32>
  return %r0, %r1, %r2, %r3, %r4 : tensor<32x16xf32>, tensor<64x8xf32>, tensor<1x64x16xf32>, tensor<2x32x16xf32>, tensor<2x64x8xf32>
}

// -----

// The product reaches the reduce_scatter through an expand_shape (a
// flattened matmul in a rank-3 program): the view moves to A.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @mm_rs_through_view
// CHECK-SAME: (%[[A:.*]]: tensor<16x16xf32>, %[[B:.*]]: tensor<16x10xf32>)
// CHECK: %[[AV:.*]] = tensor.expand_shape %[[A]] {{\[}}[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
// CHECK: %[[R:.*]] = dtensor.matmul_reduce_scatter %[[AV]], %[[B]] on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<2x8x16xf32>, tensor<16x10xf32> -> tensor<2x4x10xf32>
// CHECK: return %[[R]]
func.func @mm_rs_through_view(%a: tensor<16x16xf32>, %b: tensor<16x10xf32>) -> tensor<2x4x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x10xf32>) -> tensor<16x10xf32>
  %p = linalg.matmul ins(%a, %b : tensor<16x16xf32>, tensor<16x10xf32>) outs(%f : tensor<16x10xf32>) -> tensor<16x10xf32>
  %v = tensor.expand_shape %p [[0, 1], [2]] output_shape [2, 8, 10] : tensor<16x10xf32> into tensor<2x8x10xf32>
  // expected-remark @below {{fused with its matmul}}
  %r = dtensor.reduce_scatter %v on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<2x8x10xf32> -> tensor<2x4x10xf32>
  return %r : tensor<2x4x10xf32>
}

// -----

// Not fused: an uneven scatter (8 rows over 3), which the fused op cannot
// express (MMRS3; found by scripts/fuzz.sh --mode cuda, seed 2623).
dtensor.mesh @tp shape = [3]
// CHECK-LABEL: func @mm_rs_uneven
// CHECK: linalg.matmul
// CHECK: dtensor.reduce_scatter
func.func @mm_rs_uneven(%a: tensor<16x16xf32>, %b: tensor<16x10xf32>) -> tensor<2x?x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x10xf32>) -> tensor<16x10xf32>
  %p = linalg.matmul ins(%a, %b : tensor<16x16xf32>, tensor<16x10xf32>) outs(%f : tensor<16x10xf32>) -> tensor<16x10xf32>
  %v = tensor.expand_shape %p [[0, 1], [2]] output_shape [2, 8, 10] : tensor<16x10xf32> into tensor<2x8x10xf32>
  // expected-remark @below {{not fused: the scattered dim's size 8 is not divisible by the group size 3; the fused op scatters evenly (MMRS3)}}
  %r = dtensor.reduce_scatter %v on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<2x8x10xf32> -> tensor<2x?x10xf32>
  return %r : tensor<2x?x10xf32>
}

// -----

// Not fused: a product with another user (the fused op does not return
// it), a reduction other than sum/avg, an operand that is no matmul.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @mm_rs_negative
// CHECK-COUNT-3: dtensor.reduce_scatter %
// CHECK-NOT: matmul_reduce_scatter
func.func @mm_rs_negative(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  // expected-remark @below {{not fused: the matmul's product has other users, and the fused op does not return it}}
  %r = dtensor.reduce_scatter %p on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<8x8xf32> -> tensor<4x8xf32>
  %q = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  // expected-remark @below {{not fused: reduce = max; the fused op takes sum or avg (MMRS4)}}
  %rm = dtensor.reduce_scatter %q on @tp axes = [0] scatter_dim = 0 reduce = max : tensor<8x8xf32> -> tensor<4x8xf32>
  // expected-remark @below {{not fused: its operand is not produced by a matmul}}
  %ra = dtensor.reduce_scatter %a on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<8x8xf32> -> tensor<4x8xf32>
  return %r, %p, %rm, %ra : tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Asynchronous collectives: with nothing between start and wait they are
// synchronous in effect and fuse; with work in between the scheduler has
// overlapped them already and they stay.
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @async
// CHECK: dtensor.all_gather_matmul
// CHECK-NOT: dtensor.wait
// CHECK: dtensor.async_start
// CHECK-NEXT: dtensor.all_gather %
// CHECK: dtensor.wait
// CHECK-NOT: all_gather_matmul
func.func @async(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %y: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %s0 = dtensor.async_start {
    // expected-remark @below {{fused with 1 matmul}}
    %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    dtensor.yield %g : tensor<8x8xf32>
  } : !dtensor.future<tensor<8x8xf32>>
  %g0 = dtensor.wait %s0 : !dtensor.future<tensor<8x8xf32>>
  %c0 = linalg.matmul ins(%g0, %b : tensor<8x8xf32>, tensor<8x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  %s1 = dtensor.async_start {
    // expected-remark @below {{not fused: it is asynchronous with work between its start and its wait, overlapped by the scheduler}}
    %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    dtensor.yield %g : tensor<8x8xf32>
  } : !dtensor.future<tensor<8x8xf32>>
  %en = tensor.empty() : tensor<8x4xf32>
  %n = linalg.negf ins(%y : tensor<8x4xf32>) outs(%en : tensor<8x4xf32>) -> tensor<8x4xf32>
  %g1 = dtensor.wait %s1 : !dtensor.future<tensor<8x8xf32>>
  %c1 = linalg.matmul ins(%g1, %b : tensor<8x8xf32>, tensor<8x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %c0, %c1, %n : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Not fused: a view between matmul and reduce_scatter with another user (the
// product would have to exist anyway), and a rank-4 A (AGMM1).
dtensor.mesh @tp shape = [2]
// CHECK-LABEL: func @more_negative
// CHECK: dtensor.reduce_scatter %
// CHECK: dtensor.all_gather %
// CHECK-NOT: matmul_reduce_scatter
// CHECK-NOT: all_gather_matmul
func.func @more_negative(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %x: tensor<1x2x4x8xf32>) -> (tensor<2x2x8xf32>, tensor<2x4x8xf32>, tensor<2x2x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %v = tensor.expand_shape %p [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  // expected-remark @below {{not fused: a view between the matmul and the reduce_scatter has other users}}
  %r = dtensor.reduce_scatter %v on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
  // expected-remark @below {{not fused: A has rank 4; the fused op takes rank 2 or 3 (AGMM1)}}
  %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = 0 : tensor<1x2x4x8xf32> -> tensor<2x2x4x8xf32>
  return %r, %v, %g : tensor<2x2x8xf32>, tensor<2x4x8xf32>, tensor<2x2x4x8xf32>
}

// -----

// Nothing to pipeline on an empty dimension (a pipeline would slice it):
// neither direction fuses.
dtensor.mesh @tp shape = [4]
// CHECK-LABEL: func @empty_dims
// CHECK-NOT: dtensor.all_gather_matmul
// CHECK-NOT: dtensor.matmul_reduce_scatter
func.func @empty_dims(%a: tensor<2x16xf32>, %b: tensor<16x0xf32>, %x: tensor<0x16xf32>, %w: tensor<16x32xf32>) -> (tensor<8x0xf32>, tensor<0x32xf32>) {
  // expected-remark @below {{not fused: no matmul can take the gathered A: an operand has a dimension of size 0}}
  %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x0xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x0xf32>) -> tensor<8x0xf32>
  %c = linalg.matmul ins(%g, %b : tensor<8x16xf32>, tensor<16x0xf32>) outs(%f : tensor<8x0xf32>) -> tensor<8x0xf32>
  %e2 = tensor.empty() : tensor<0x128xf32>
  %w4 = tensor.empty() : tensor<16x128xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<0x128xf32>) -> tensor<0x128xf32>
  %p = linalg.matmul ins(%x, %w4 : tensor<0x16xf32>, tensor<16x128xf32>) outs(%f2 : tensor<0x128xf32>) -> tensor<0x128xf32>
  // expected-remark @below {{not fused: its operand is not produced by a matmul: an operand has a dimension of size 0}}
  %r = dtensor.reduce_scatter %p on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<0x128xf32> -> tensor<0x32xf32>
  return %c, %r : tensor<8x0xf32>, tensor<0x32xf32>
}
