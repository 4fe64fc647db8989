// A transformer feed-forward block with sequence parallelism, as torchtitan
// parallelizes it (plan: sequence_parallel_mlp.plan.json):
//
//   h = x + w2(relu(w1(rms_norm(x))))
//   x: [batch 2, seq 16, hidden 32], w1: [64, 32], w2: [32, 64] ([out, in])
//
// The ops say which nn.Module they belong to (`dtensor.module`); parameters
// are the arguments marked `dtensor.param`. Nothing else about the
// distribution is written here: the plan supplies it.
//
//   dtensor-opt examples/sequence_parallel_mlp.mlir \
//     --dtensor-apply-tp-plan=plan=examples/sequence_parallel_mlp.plan.json \
//     --dtensor-spmd --dtensor-comm-report
//
// The norm and the residual add run on a quarter of the sequence each; the
// block costs one all_gather (into w1) and one reduce_scatter (out of w2).

#x = affine_map<(b, s, h) -> (b, s, h)>
#bs = affine_map<(b, s, h) -> (b, s)>
#h = affine_map<(b, s, h) -> (h)>
#in = affine_map<(b, s, o, k) -> (b, s, k)>
#w = affine_map<(b, s, o, k) -> (o, k)>
#out = affine_map<(b, s, o, k) -> (b, s, o)>

dtensor.mesh @tp shape = [4] names = ["tp"]

func.func @ffn_block(
    %x: tensor<2x16x32xf32>,
    %g: tensor<32xf32> {dtensor.param = "norm.weight"},
    %w1: tensor<64x32xf32> {dtensor.param = "ffn.w1.weight"},
    %w2: tensor<32x64xf32> {dtensor.param = "ffn.w2.weight"})
    -> tensor<2x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %inv_dim = arith.constant 0.03125 : f32
  %eps = arith.constant 1.0e-6 : f32

  // norm: x / sqrt(mean(x^2) + eps) * g over the hidden dim.
  %e0 = tensor.empty() : tensor<2x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x16xf32>)
      -> tensor<2x16xf32>
  %sq = linalg.generic {indexing_maps = [#x, #bs],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x16x32xf32>) outs(%f0 : tensor<2x16xf32>)
      attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %acc: f32):
    %p = arith.mulf %in, %in : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x16xf32>
  %e1 = tensor.empty() : tensor<2x16x32xf32>
  %n = linalg.generic {indexing_maps = [#x, #bs, #h, #x],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %sq, %g : tensor<2x16x32xf32>, tensor<2x16xf32>, tensor<32xf32>)
      outs(%e1 : tensor<2x16x32xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %ss: f32, %gain: f32, %o: f32):
    %mean = arith.mulf %ss, %inv_dim : f32
    %var = arith.addf %mean, %eps : f32
    %rms = math.sqrt %var : f32
    %y = arith.divf %in, %rms : f32
    %z = arith.mulf %y, %gain : f32
    linalg.yield %z : f32
  } -> tensor<2x16x32xf32>

  // ffn.w1: hidden 32 -> 64, then relu.
  %e2 = tensor.empty() : tensor<2x16x64xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x16x64xf32>)
      -> tensor<2x16x64xf32>
  %u = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%n, %w1 : tensor<2x16x32xf32>, tensor<64x32xf32>)
      outs(%f2 : tensor<2x16x64xf32>) attrs = {dtensor.module = "ffn.w1"} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x16x64xf32>
  %e3 = tensor.empty() : tensor<2x16x64xf32>
  %a = linalg.generic {indexing_maps = [#x, #x],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%u : tensor<2x16x64xf32>) outs(%e3 : tensor<2x16x64xf32>)
      attrs = {dtensor.module = "ffn"} {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x16x64xf32>

  // ffn.w2: 64 -> hidden 32.
  %e4 = tensor.empty() : tensor<2x16x32xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<2x16x32xf32>)
      -> tensor<2x16x32xf32>
  %d = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%a, %w2 : tensor<2x16x64xf32>, tensor<32x64xf32>)
      outs(%f4 : tensor<2x16x32xf32>) attrs = {dtensor.module = "ffn.w2"} {
  ^bb0(%p0: f32, %p1: f32, %acc: f32):
    %p = arith.mulf %p0, %p1 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x16x32xf32>

  // The residual, outside every module.
  %e5 = tensor.empty() : tensor<2x16x32xf32>
  %h = linalg.add ins(%x, %d : tensor<2x16x32xf32>, tensor<2x16x32xf32>)
      outs(%e5 : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  return %h : tensor<2x16x32xf32>
}
