// FSDP + TP on a 2-D mesh (dp x tp), as PyTorch's test_2d_fsdp_tp_compile
// composes them: a two-layer MLP, tensor-parallel on `tp` (w1 colwise, w2
// rowwise) and fully sharded on `dp`: each weight is stored sharded on dp
// too (along the dim TP leaves whole), all-gathered over dp before use (the
// FSDP unshard, a module boundary), and the batch is split over dp.
//
//   dtensor-opt examples/fsdp_tp_mlp.mlir --dtensor-autodiff \
//     --dtensor-spmd --dtensor-comm-report -o /dev/null
//   dtensor-opt examples/fsdp_tp_mlp.mlir --dtensor-autodiff -o grad.mlir
//   dtensor-run grad.mlir -n 4 --entry fsdp_tp_mlp_grad
//
// The gradient of a weight flows back to its stored layout: one
// reduce_scatter over dp per weight in the backward, as FSDP's gradient
// reduce-scatter. x: 8x16, w1: 16x32, w2: 32x16.

dtensor.mesh @m shape = [2, 2] names = ["dp", "tp"]

func.func @fsdp_tp_mlp(
    %x: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@m, [S(0), R]>},
    %w1: tensor<16x32xf32> {dtensor.param = "w1",
                            dtensor.layout = #dtensor.layout<@m, [S(0), S(1)]>},
    %w2: tensor<32x16xf32> {dtensor.param = "w2",
                            dtensor.layout = #dtensor.layout<@m, [S(1), S(0)]>})
    -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@m, [S(0), R]>}) {
  // FSDP unshard: gather each weight over dp, keeping its TP sharding.
  %w1u = dtensor.annotate %w1 layout <@m, [R, S(1)]> {dtensor.boundary}
      : tensor<16x32xf32>
  %w2u = dtensor.annotate %w2 layout <@m, [R, S(0)]> {dtensor.boundary}
      : tensor<32x16xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w1u : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %a = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %w2u : tensor<8x32xf32>, tensor<32x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
