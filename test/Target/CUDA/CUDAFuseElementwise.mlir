// RUN: dtensor-opt %s -split-input-file --dtensor-cuda-fuse-elementwise | FileCheck %s

// bias + gelu-like chain after a matmul: the elementwise ops fuse into one
// generic, the matmul and its fill stay as they are.
// CHECK-LABEL: func.func @chain(
// CHECK:         %[[F:.*]] = linalg.fill
// CHECK:         %[[MM:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x32xf32>) outs(%[[F]] : tensor<8x32xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[MM]], %{{.*}} : tensor<8x32xf32>, tensor<32xf32>)
// CHECK:           arith.addf
// CHECK:           math.tanh
// CHECK:           arith.mulf
// CHECK-NOT:     linalg.generic
func.func @chain(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                          iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%m: f32, %v: f32, %o: f32):
    %s = arith.addf %m, %v : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %act = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%bias : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    %m = arith.mulf %a, %t : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>
  return %act : tensor<8x32xf32>
}

// -----

// An elementwise producer is not fused into a matmul (it stays a matmul
// for cuBLASLt); a transpose feeding it is folded into its indexing map.
// CHECK-LABEL: func.func @into_matmul(
// CHECK-SAME:      %[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<8x16xf32>)
// CHECK:           arith.mulf
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #[[TMAP:.*]], #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%[[S]], %[[W]] : tensor<8x16xf32>, tensor<32x16xf32>)
// CHECK-NOT:     linalg.transpose
func.func @into_matmul(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %et = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%et : tensor<16x32xf32>) permutation = [1, 0]
  %r = linalg.matmul ins(%s, %wt : tensor<8x16xf32>, tensor<16x32xf32>) outs(%c : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// A SwiGLU's gate and up projections share one zero init (CSE merges
// same-shaped fills): each gets its own fill (and empty tensor), so that
// bufferization gives each matmul a fresh buffer and the matmul rewrite
// folds both fills (accumulate=0) instead of a fill kernel, a copy kernel
// and matmuls accumulating onto C.
// CHECK-LABEL: func.func @shared_zero_init(
// CHECK-DAG:     %[[E1:.*]] = tensor.empty() : tensor<8x32xbf16>
// CHECK-DAG:     %[[E2:.*]] = tensor.empty() : tensor<8x32xbf16>
// CHECK-DAG:     %[[F1:.*]] = linalg.fill ins(%{{.*}} : bf16) outs(%[[E1]] : tensor<8x32xbf16>)
// CHECK-DAG:     %[[F2:.*]] = linalg.fill ins(%{{.*}} : bf16) outs(%[[E2]] : tensor<8x32xbf16>)
// CHECK-DAG:     linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xbf16>, tensor<16x32xbf16>) outs(%[[F1]] : tensor<8x32xbf16>)
// CHECK-DAG:     linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xbf16>, tensor<16x32xbf16>) outs(%[[F2]] : tensor<8x32xbf16>)
// CHECK:         return
func.func @shared_zero_init(%x: tensor<8x16xbf16>, %w1: tensor<16x32xbf16>,
                            %w3: tensor<16x32xbf16>)
    -> (tensor<8x32xbf16>, tensor<8x32xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8x32xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %a = linalg.matmul ins(%x, %w1 : tensor<8x16xbf16>, tensor<16x32xbf16>)
      outs(%f : tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %b = linalg.matmul ins(%x, %w3 : tensor<8x16xbf16>, tensor<16x32xbf16>)
      outs(%f : tensor<8x32xbf16>) -> tensor<8x32xbf16>
  return %a, %b : tensor<8x32xbf16>, tensor<8x32xbf16>
}
