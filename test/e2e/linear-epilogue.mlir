// REQUIRES: cpu-target
// Bias and residual adds of matmul results, in a tensor-parallel program
// checked against the unsharded one: a column-parallel linear with its
// bias sharded alike (each rank adds its slice), ReLU, a row-parallel
// linear whose replicated bias is added after the all-reduce, a
// column-parallel linear added onto a residual sharded alike, and a
// column-parallel linear with GELU (tanh form, as torch decomposes
// gelu(approximate="tanh")). On CUDA ranks the bias, the residual, the
// ReLU and the GELU run in the matmuls' epilogues
// (dtensor-cuda-fuse-matmul-epilogue, dtensor-cuda-matmul-to-runtime;
// scripts/gpu-programs.txt runs it).
// RUN: timeout 120 dtensor-run %s -n 4 --seed 21 | FileCheck %s
// RUN: sed 's/shape = \[4\]/shape = [2]/' %s > %t.2.mlir
// RUN: timeout 120 dtensor-run %t.2.mlir -n 2 --seed 22 | FileCheck %s
// CHECK: ok
// CHECK: PASS

dtensor.mesh @tp shape = [4]

#id = affine_map<(i, j) -> (i, j)>
#cols = affine_map<(i, j) -> (j)>

func.func @linear_epilogue(
    %x: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>},
    %w1: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
    %b1: tensor<32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>},
    %w2: tensor<32x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>},
    %b2: tensor<16xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>},
    %w3: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
    %r: tensor<8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
    %w4: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
    -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>},
        tensor<8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
        tensor<8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %hb = linalg.generic {indexing_maps = [#id, #cols, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b1 : tensor<8x32xf32>, tensor<32xf32>) outs(%e1 : tensor<8x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%hb : tensor<8x32xf32>) outs(%e1 : tensor<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<8x32xf32>, tensor<32x16xf32>)
                     outs(%f2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %yb = linalg.generic {indexing_maps = [#cols, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b2, %y : tensor<16xf32>, tensor<8x16xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %z = linalg.matmul ins(%x, %w3 : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f3 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %zr = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %z : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e1 : tensor<8x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %u = linalg.matmul ins(%x, %w4 : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f4 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u : tensor<8x32xf32>) outs(%e1 : tensor<8x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %k = arith.constant 0.044715 : f32
    %s = arith.constant 0.797884583 : f32
    %v2 = arith.mulf %v, %v : f32
    %v3 = arith.mulf %v2, %v : f32
    %kv3 = arith.mulf %v3, %k : f32
    %inner = arith.addf %v, %kv3 : f32
    %arg = arith.mulf %inner, %s : f32
    %t = math.tanh %arg : f32
    %t1 = arith.addf %t, %one : f32
    %hv = arith.mulf %v, %half : f32
    %gv = arith.mulf %hv, %t1 : f32
    linalg.yield %gv : f32
  } -> tensor<8x32xf32>
  return %yb, %zr, %g : tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}
