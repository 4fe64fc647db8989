// REQUIRES: cpu-target
// The contraction shapes autodiff produces, in a tensor-parallel program
// checked against the unsharded one: a weight gradient reducing over
// [batch, seq] (two k dims, contiguous in both operands; seq sharded, so
// each rank reduces its rows and the partial sums are all-reduced), two k
// dims that are not contiguous (a batch-reduce matmul), two k dims in
// different orders in the two operands, a batch dim in the middle of every
// operand, two n dims, a row dot (softmax backward's sum(dy * y)) and a
// matrix-vector product. On CUDA ranks the first five become cuBLASLt
// calls (dtensor-cuda-matmul-to-runtime collapses, transposes or copies
// the operands), the last two generated reduction kernels
// (scripts/gpu-programs.txt runs it).
// RUN: timeout 120 dtensor-run %s -n 4 --seed 31 | FileCheck %s
// RUN: sed 's/shape = \[4\]/shape = [2]/' %s > %t.2.mlir
// RUN: timeout 120 dtensor-run %t.2.mlir -n 2 --seed 32 | FileCheck %s
// CHECK: ok
// CHECK: PASS

dtensor.mesh @tp shape = [4]

#mac = {iterator_types = ["parallel", "parallel", "reduction", "reduction"]}

func.func @contractions(
    %x: tensor<2x8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
    %dy: tensor<2x8x12xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
    %a: tensor<4x8x6xf32>, %b: tensor<4x6x5xf32>,
    %c: tensor<8x3x4xf32>, %d: tensor<4x3x5xf32>,
    %e: tensor<8x3x6xf32>, %f: tensor<6x3x5xf32>,
    %g: tensor<8x6xf32>, %h: tensor<6x2x5xf32>,
    %p: tensor<2x3x8xf32>, %q: tensor<2x3x8xf32>,
    %v: tensor<6xf32>)
    -> (tensor<16x12xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>}, tensor<8x5xf32>, tensor<8x5xf32>, tensor<8x3x5xf32>,
        tensor<8x2x5xf32>, tensor<2x3xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  // dW[i, o] = sum_{b, s} x[b, s, i] dy[b, s, o].
  %e0 = tensor.empty() : tensor<16x12xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %wgrad = linalg.generic {
      indexing_maps = [affine_map<(i, o, b, s) -> (b, s, i)>,
                       affine_map<(i, o, b, s) -> (b, s, o)>,
                       affine_map<(i, o, b, s) -> (i, o)>],
      iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %dy : tensor<2x8x16xf32>, tensor<2x8x12xf32>) outs(%f0 : tensor<16x12xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %m = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x12xf32>
  // C[m, n] = sum_{b, k} A[b, m, k] B[b, k, n]: (b, k) not contiguous in A.
  %e1 = tensor.empty() : tensor<8x5xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x5xf32>) -> tensor<8x5xf32>
  %breduce = linalg.batch_reduce_matmul ins(%a, %b : tensor<4x8x6xf32>, tensor<4x6x5xf32>)
      outs(%f1 : tensor<8x5xf32>) -> tensor<8x5xf32>
  // C[m, n] = sum_{k0, k1} c[m, k0, k1] d[k1, k0, n]: the k dims in
  // different orders.
  %f2 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x5xf32>) -> tensor<8x5xf32>
  %korder = linalg.generic {
      indexing_maps = [affine_map<(m, n, k0, k1) -> (m, k0, k1)>,
                       affine_map<(m, n, k0, k1) -> (k1, k0, n)>,
                       affine_map<(m, n, k0, k1) -> (m, n)>],
      iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%c, %d : tensor<8x3x4xf32>, tensor<4x3x5xf32>) outs(%f2 : tensor<8x5xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %m = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x5xf32>
  // C[m, b, n] = sum_k e[m, b, k] f[k, b, n]: the batch in the middle.
  %e3 = tensor.empty() : tensor<8x3x5xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x3x5xf32>) -> tensor<8x3x5xf32>
  %bmid = linalg.generic {
      indexing_maps = [affine_map<(m, b, n, k) -> (m, b, k)>,
                       affine_map<(m, b, n, k) -> (k, b, n)>,
                       affine_map<(m, b, n, k) -> (m, b, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%e, %f : tensor<8x3x6xf32>, tensor<6x3x5xf32>) outs(%f3 : tensor<8x3x5xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %m = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x3x5xf32>
  // C[m, n0, n1] = sum_k g[m, k] h[k, n0, n1]: two n dims.
  %e4 = tensor.empty() : tensor<8x2x5xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<8x2x5xf32>) -> tensor<8x2x5xf32>
  %twon = linalg.generic {
      indexing_maps = [affine_map<(m, n0, n1, k) -> (m, k)>,
                       affine_map<(m, n0, n1, k) -> (k, n0, n1)>,
                       affine_map<(m, n0, n1, k) -> (m, n0, n1)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%g, %h : tensor<8x6xf32>, tensor<6x2x5xf32>) outs(%f4 : tensor<8x2x5xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %m = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x2x5xf32>
  // r[i, j] = sum_k p[i, j, k] q[i, j, k]: a row dot.
  %e5 = tensor.empty() : tensor<2x3xf32>
  %f5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %dot = linalg.generic {
      indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>,
                       affine_map<(i, j, k) -> (i, j, k)>,
                       affine_map<(i, j, k) -> (i, j)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %q : tensor<2x3x8xf32>, tensor<2x3x8xf32>) outs(%f5 : tensor<2x3xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %m = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  // y = g v: a matrix-vector product.
  %e6 = tensor.empty() : tensor<8xf32>
  %f6 = linalg.fill ins(%zero : f32) outs(%e6 : tensor<8xf32>) -> tensor<8xf32>
  %mv = linalg.matvec ins(%g, %v : tensor<8x6xf32>, tensor<6xf32>)
      outs(%f6 : tensor<8xf32>) -> tensor<8xf32>
  return %wgrad, %breduce, %korder, %bmid, %twon, %dot, %mv
      : tensor<16x12xf32>, tensor<8x5xf32>, tensor<8x5xf32>, tensor<8x3x5xf32>,
        tensor<8x2x5xf32>, tensor<2x3xf32>, tensor<8xf32>
}
