// Training a two-layer tensor-parallel MLP: the loss is written in the
// global view (mean-squared error of relu(x @ w1) @ w2 against a target),
// dtensor-autodiff derives its gradients, dtensor-train-steps unrolls K steps
// of forward, backward and the SGD update w <- w - lr * dw:
//
//   dtensor-opt examples/train_mlp.mlir --dtensor-autodiff \
//     --dtensor-train-steps='steps=3 learning-rate=0.5' -o train.mlir
//   dtensor-run train.mlir -n 4 --entry mlp_loss_train
//
// @mlp_loss_train returns the loss of each step and the weights after the
// last one (w1 Shard(1), w2 Shard(0)); dtensor-run checks them against the
// unsharded training run. x: 8x16, target: 8x16, w1: 16x32, w2: 32x16.

dtensor.mesh @tp shape = [4] names = ["tp"]
#id = affine_map<(i, j) -> (i, j)>
#all = affine_map<(i, j) -> ()>
func.func @mlp_loss(%x: tensor<8x16xf32>, %t: tensor<8x16xf32>,
                    %w1: tensor<16x32xf32> {dtensor.param = "w1"},
                    %w2: tensor<32x16xf32> {dtensor.param = "w2"}) -> tensor<f32> {
  %xr = dtensor.annotate %x layout <@tp, [R]> : tensor<8x16xf32>
  %tr = dtensor.annotate %t layout <@tp, [R]> : tensor<8x16xf32>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(1)]> : tensor<16x32xf32>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(0)]> : tensor<32x16xf32>
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.0078125 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%xr, %w1c : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %w2r : tensor<8x32xf32>, tensor<32x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %e4 = tensor.empty() : tensor<f32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [#id, #id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%y, %tr : tensor<8x16xf32>, tensor<8x16xf32>) outs(%f4 : tensor<f32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %d = arith.subf %p, %q : f32
    %d2 = arith.mulf %d, %d : f32
    %s = arith.mulf %d2, %scale : f32
    %r = arith.addf %acc, %s : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %loss : tensor<f32>
}
