// The ends of a language model, as torchtitan parallelizes them (plan:
// embedding.plan.json): a token embedding, the final norm, and the output
// projection to vocabulary logits.
//
//   h = tok_embeddings(ids)                 ids: [batch 2, seq 16], vocab 128
//   logits = output(norm(h))                dim 32; output.weight: [128, 32]
//
// Token ids are i64 with a trailing unit dim, the index tensor of a
// `tensor.gather`; they are first wrapped into the vocabulary (ids & 127),
// so that any integers (dtensor-run feeds random ones) are valid tokens.
//
//   dtensor-opt examples/embedding.mlir \
//     --dtensor-apply-tp-plan=plan=examples/embedding.plan.json \
//     --dtensor-spmd --dtensor-comm-report
//
// The embedding table is sharded by rows (vocabulary): each rank looks up
// the ids it owns and the partial sums are reduce-scattered over the
// sequence; the norm runs on that sequence shard; the output projection
// gathers the sequence back and leaves the logits sharded by vocabulary
// (loss parallel). One reduce_scatter and one all_gather.

#x = affine_map<(b, s, h) -> (b, s, h)>
#bs = affine_map<(b, s, h) -> (b, s)>
#h = affine_map<(b, s, h) -> (h)>
#in = affine_map<(b, s, o, k) -> (b, s, k)>
#w = affine_map<(b, s, o, k) -> (o, k)>
#out = affine_map<(b, s, o, k) -> (b, s, o)>

dtensor.mesh @tp shape = [4] names = ["tp"]

func.func @lm_ends(
    %ids: tensor<2x16x1xi64>,
    %table: tensor<128x32xf32> {dtensor.param = "tok_embeddings.weight"},
    %g: tensor<32xf32> {dtensor.param = "norm.weight"},
    %wout: tensor<128x32xf32> {dtensor.param = "output.weight"})
    -> tensor<2x16x128xf32> {
  %zero = arith.constant 0.0 : f32
  %inv_dim = arith.constant 0.03125 : f32
  %eps = arith.constant 1.0e-6 : f32

  %mask = arith.constant 127 : i64
  %ei = tensor.empty() : tensor<2x16x1xi64>
  %tokens = linalg.generic {indexing_maps = [#x, #x],
                            iterator_types = ["parallel", "parallel",
                                              "parallel"]}
      ins(%ids : tensor<2x16x1xi64>) outs(%ei : tensor<2x16x1xi64>) {
  ^bb0(%id: i64, %o: i64):
    %t = arith.andi %id, %mask : i64
    linalg.yield %t : i64
  } -> tensor<2x16x1xi64>
  %emb = tensor.gather %table[%tokens] gather_dims([0])
      {dtensor.module = "tok_embeddings"}
      : (tensor<128x32xf32>, tensor<2x16x1xi64>) -> tensor<2x16x32xf32>

  // norm: x / sqrt(mean(x^2) + eps) * g over the hidden dim.
  %e0 = tensor.empty() : tensor<2x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x16xf32>)
      -> tensor<2x16xf32>
  %sq = linalg.generic {indexing_maps = [#x, #bs],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%emb : tensor<2x16x32xf32>) outs(%f0 : tensor<2x16xf32>)
      attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %acc: f32):
    %p = arith.mulf %in, %in : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x16xf32>
  %e1 = tensor.empty() : tensor<2x16x32xf32>
  %n = linalg.generic {indexing_maps = [#x, #bs, #h, #x],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%emb, %sq, %g : tensor<2x16x32xf32>, tensor<2x16xf32>, tensor<32xf32>)
      outs(%e1 : tensor<2x16x32xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %ss: f32, %gain: f32, %o: f32):
    %mean = arith.mulf %ss, %inv_dim : f32
    %var = arith.addf %mean, %eps : f32
    %rms = math.sqrt %var : f32
    %y = arith.divf %in, %rms : f32
    %z = arith.mulf %y, %gain : f32
    linalg.yield %z : f32
  } -> tensor<2x16x32xf32>

  // output: dim 32 -> vocabulary 128.
  %e2 = tensor.empty() : tensor<2x16x128xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x16x128xf32>)
      -> tensor<2x16x128xf32>
  %logits = linalg.generic {indexing_maps = [#in, #w, #out],
                            iterator_types = ["parallel", "parallel",
                                              "parallel", "reduction"]}
      ins(%n, %wout : tensor<2x16x32xf32>, tensor<128x32xf32>)
      outs(%f2 : tensor<2x16x128xf32>) attrs = {dtensor.module = "output"} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x16x128xf32>
  return %logits : tensor<2x16x128xf32>
}
