// Multi-head self-attention (no mask), tensor parallel over heads with a
// sequence-parallel input and output, as torchtitan parallelizes it (plan:
// attention.plan.json):
//
//   q, k, v = wq(x), wk(x), wv(x)          x: [batch 2, seq 8, dim 32]
//   split 32 into 4 heads of 8
//   o = softmax(q k^T / sqrt(8)) v          per head
//   y = wo(o)                               wq, wk, wv, wo: [32, 32] ([out, in])
//
//   dtensor-opt examples/attention.mlir \
//     --dtensor-apply-tp-plan=plan=examples/attention.plan.json \
//     --dtensor-spmd --dtensor-comm-report
//
// Colwise wq/wk/wv shard the projections by output features, i.e. by head,
// so every rank computes one head's attention without communication; wo is
// rowwise and scatters its sum over the sequence. One all_gather (the input,
// Shard(1) -> Replicate) and one reduce_scatter in all.

#in = affine_map<(b, s, o, k) -> (b, s, k)>
#w = affine_map<(b, s, o, k) -> (o, k)>
#out = affine_map<(b, s, o, k) -> (b, s, o)>
// scores[b, h, s, t] = sum_e q[b, s, h, e] * k[b, t, h, e]
#q = affine_map<(b, h, s, t, e) -> (b, s, h, e)>
#k = affine_map<(b, h, s, t, e) -> (b, t, h, e)>
#scores = affine_map<(b, h, s, t, e) -> (b, h, s, t)>
// o[b, s, h, e] = sum_t p[b, h, s, t] * v[b, t, h, e]
#p = affine_map<(b, s, h, e, t) -> (b, h, s, t)>
#v = affine_map<(b, s, h, e, t) -> (b, t, h, e)>
#o = affine_map<(b, s, h, e, t) -> (b, s, h, e)>
#id4 = affine_map<(b, h, s, t) -> (b, h, s, t)>

dtensor.mesh @tp shape = [4] names = ["tp"]

func.func @attention(
    %x: tensor<2x8x32xf32>,
    %wq: tensor<32x32xf32> {dtensor.param = "attn.wq.weight"},
    %wk: tensor<32x32xf32> {dtensor.param = "attn.wk.weight"},
    %wv: tensor<32x32xf32> {dtensor.param = "attn.wv.weight"},
    %wo: tensor<32x32xf32> {dtensor.param = "attn.wo.weight"})
    -> tensor<2x8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.353553385 : f32
  %e = tensor.empty() : tensor<2x8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x32xf32>)
      -> tensor<2x8x32xf32>

  // The projections (they share the zero init %f; each takes its own
  // layout of it).
  %q = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%x, %wq : tensor<2x8x32xf32>, tensor<32x32xf32>)
      outs(%f : tensor<2x8x32xf32>) attrs = {dtensor.module = "attn.wq"} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x32xf32>
  %k = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%x, %wk : tensor<2x8x32xf32>, tensor<32x32xf32>)
      outs(%f : tensor<2x8x32xf32>) attrs = {dtensor.module = "attn.wk"} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x32xf32>
  %v = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%x, %wv : tensor<2x8x32xf32>, tensor<32x32xf32>)
      outs(%f : tensor<2x8x32xf32>) attrs = {dtensor.module = "attn.wv"} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x32xf32>

  // Heads: [2, 8, 32] -> [2, 8, 4, 8].
  %qh = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [2, 8, 4, 8]
      {dtensor.module = "attn"} : tensor<2x8x32xf32> into tensor<2x8x4x8xf32>
  %kh = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [2, 8, 4, 8]
      {dtensor.module = "attn"} : tensor<2x8x32xf32> into tensor<2x8x4x8xf32>
  %vh = tensor.expand_shape %v [[0], [1], [2, 3]] output_shape [2, 8, 4, 8]
      {dtensor.module = "attn"} : tensor<2x8x32xf32> into tensor<2x8x4x8xf32>

  // softmax(q k^T * scale) per head.
  %es = tensor.empty() : tensor<2x4x8x8xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<2x4x8x8xf32>)
      -> tensor<2x4x8x8xf32>
  %scores = linalg.generic {indexing_maps = [#q, #k, #scores],
                            iterator_types = ["parallel", "parallel",
                                              "parallel", "parallel",
                                              "reduction"]}
      ins(%qh, %kh : tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>)
      outs(%fs : tensor<2x4x8x8xf32>) attrs = {dtensor.module = "attn"} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x8x8xf32>
  %ez = tensor.empty() : tensor<2x4x8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel",
                                              "parallel", "parallel"]}
      ins(%scores : tensor<2x4x8x8xf32>) outs(%ez : tensor<2x4x8x8xf32>)
      attrs = {dtensor.module = "attn"} {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %scale : f32
    linalg.yield %m : f32
  } -> tensor<2x4x8x8xf32>
  %ep = tensor.empty() : tensor<2x4x8x8xf32>
  %probs = linalg.softmax {dtensor.module = "attn"} dimension(3)
      ins(%scaled : tensor<2x4x8x8xf32>) outs(%ep : tensor<2x4x8x8xf32>)
      -> tensor<2x4x8x8xf32>

  // o = probs v, heads merged back: [2, 8, 4, 8] -> [2, 8, 32].
  %eo = tensor.empty() : tensor<2x8x4x8xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x8x4x8xf32>)
      -> tensor<2x8x4x8xf32>
  %oh = linalg.generic {indexing_maps = [#p, #v, #o],
                        iterator_types = ["parallel", "parallel", "parallel",
                                          "parallel", "reduction"]}
      ins(%probs, %vh : tensor<2x4x8x8xf32>, tensor<2x8x4x8xf32>)
      outs(%fo : tensor<2x8x4x8xf32>) attrs = {dtensor.module = "attn"} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x4x8xf32>
  %o = tensor.collapse_shape %oh [[0], [1], [2, 3]] {dtensor.module = "attn"}
      : tensor<2x8x4x8xf32> into tensor<2x8x32xf32>

  // The output projection.
  %y = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%o, %wo : tensor<2x8x32xf32>, tensor<32x32xf32>)
      outs(%f : tensor<2x8x32xf32>) attrs = {dtensor.module = "attn.wo"} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}
