// REQUIRES: cpu-target
// Tensor-parallel MLPs executed on CPU ranks and checked against the
// unsharded program: a 2-D mesh (data x tensor parallel), an uneven hidden
// size, and a K-sharded matmul whose Partial result is requested as
// Shard(0) (one reduce_scatter).
// RUN: timeout 120 dtensor-run %s -n 4 --entry mlp_2d --seed 11 | FileCheck %s
// RUN: timeout 120 dtensor-run %s -n 4 --entry mlp_uneven --seed 12 | FileCheck %s
// RUN: timeout 120 dtensor-run %s -n 4 --entry k_sharded --seed 13 | FileCheck %s
// RUN: sed 's/shape = \[4\]/shape = [2]/' %s > %t.2.mlir
// RUN: timeout 120 dtensor-run %t.2.mlir -n 2 --entry mlp_uneven --seed 14 | FileCheck %s
// RUN: timeout 120 dtensor-run %t.2.mlir -n 2 --entry k_sharded --seed 15 | FileCheck %s
// CHECK: ok
// CHECK: PASS

dtensor.mesh @dp_tp shape = [2, 2] names = ["dp", "tp"]
dtensor.mesh @tp shape = [4]

#relu = {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
         iterator_types = ["parallel", "parallel"]}

func.func @mlp_2d(%x: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@dp_tp, [S(0), R]>},
                  %w1: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@dp_tp, [R, S(1)]>},
                  %w2: tensor<32x16xf32> {dtensor.layout = #dtensor.layout<@dp_tp, [R, S(0)]>})
    -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@dp_tp, [S(0), R]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %a = linalg.generic #relu ins(%h : tensor<8x32xf32>) outs(%e1 : tensor<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<8x32xf32>, tensor<32x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

func.func @mlp_uneven(%x: tensor<6x10xf32>, %w1: tensor<10x30xf32>, %w2: tensor<30x10xf32>)
    -> tensor<6x10xf32> {
  %w1c = dtensor.annotate %w1 layout <@tp, [S(1)]> : tensor<10x30xf32>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(0)]> : tensor<30x10xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<6x30xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<6x30xf32>) -> tensor<6x30xf32>
  %h = linalg.matmul ins(%x, %w1c : tensor<6x10xf32>, tensor<10x30xf32>)
                     outs(%f1 : tensor<6x30xf32>) -> tensor<6x30xf32>
  %a = linalg.generic #relu ins(%h : tensor<6x30xf32>) outs(%e1 : tensor<6x30xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<6x30xf32>
  %e3 = tensor.empty() : tensor<6x10xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<6x10xf32>) -> tensor<6x10xf32>
  %y = linalg.matmul ins(%a, %w2r : tensor<6x30xf32>, tensor<30x10xf32>)
                     outs(%f3 : tensor<6x10xf32>) -> tensor<6x10xf32>
  %yr = dtensor.annotate %y layout <@tp, [S(0)]> : tensor<6x10xf32>
  return %yr : tensor<6x10xf32>
}

func.func @k_sharded(%x: tensor<8x12xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
                     %w: tensor<12x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
    -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x12xf32>, tensor<12x8xf32>)
                     outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = dtensor.annotate %y layout <@tp, [R]> : tensor<8x8xf32>
  %s = dtensor.annotate %r layout <@tp, [S(0)]> : tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}
