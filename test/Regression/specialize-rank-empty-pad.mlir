// Found by scripts/fuzz.sh --mode transitions (seed 2601), minimized. A
// value of 1 row sharded S(0) over mesh axis 0 (2 processes) is
// reduce_scattered along its uneven dim 1 (5 columns over 3: padded to 6).
// In the per-rank program the rows are dynamic (1 or 0); specialized for
// rank 3 (coordinates (1, 0): no row) and canonicalized, the pad becomes
// `tensor.pad ... : tensor<0x5xf32> to tensor<0x6xf32>`, valid on tensors,
// but one-shot-bufferize copied the source in with a memref.subview at
// offset 0 of a size-0 dim, which the verifier rejects ("offset 0 is
// out-of-bounds: 0 >= 0"). Fixed by dtensor-fold-empty-tensors before
// bufferization (issue 26).
// RUN: dtensor-opt %s --pass-pipeline="builtin.module(dtensor-spmd,dtensor-specialize-rank{rank=3},canonicalize,dtensor-cpu-lowering)" --verify-each -o /dev/null
// RUN: dtensor-run %s -n 6 | FileCheck %s
// CHECK: PASS

dtensor.mesh @g shape = [2, 3]
func.func @f(%x: tensor<1x6xf32> {dtensor.layout = #dtensor.layout<@g, [S(0), S(1)]>},
             %w: tensor<6x5xf32> {dtensor.layout = #dtensor.layout<@g, [R, S(0)]>})
    -> (tensor<1x5xf32> {dtensor.layout = #dtensor.layout<@g, [S(0), S(1)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x5xf32>) -> tensor<1x5xf32>
  %y = linalg.matmul ins(%x, %w : tensor<1x6xf32>, tensor<6x5xf32>) outs(%f : tensor<1x5xf32>) -> tensor<1x5xf32>
  return %y : tensor<1x5xf32>
}
