// examples/attention.mlir (one softmax(q k^T / sqrt(d)) v per head; a
// model, not flash attention) at Llama-3-8B sizes (8192 tokens, hidden 4096, 32
// heads of 128, bf16) on 4 ranks, with its plan
// (examples/attention.plan.json): the input of docs/images/attention_*.svg,
// made by scripts/make-timelines.sh (see docs/timeline.md).
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
    %x: tensor<1x8192x4096xbf16>,
    %wq: tensor<4096x4096xbf16> {dtensor.param = "attn.wq.weight"},
    %wk: tensor<4096x4096xbf16> {dtensor.param = "attn.wk.weight"},
    %wv: tensor<4096x4096xbf16> {dtensor.param = "attn.wv.weight"},
    %wo: tensor<4096x4096xbf16> {dtensor.param = "attn.wo.weight"})
    -> tensor<1x8192x4096xbf16> {
  %zero = arith.constant 0.0 : bf16
  %scale = arith.constant 0.0883883 : bf16
  %e = tensor.empty() : tensor<1x8192x4096xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<1x8192x4096xbf16>)
      -> tensor<1x8192x4096xbf16>

  // The projections (they share the zero init %f; each takes its own
  // layout of it).
  %q = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%x, %wq : tensor<1x8192x4096xbf16>, tensor<4096x4096xbf16>)
      outs(%f : tensor<1x8192x4096xbf16>) attrs = {dtensor.module = "attn.wq"} {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %s = arith.addf %acc, %m : bf16
    linalg.yield %s : bf16
  } -> tensor<1x8192x4096xbf16>
  %k = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%x, %wk : tensor<1x8192x4096xbf16>, tensor<4096x4096xbf16>)
      outs(%f : tensor<1x8192x4096xbf16>) attrs = {dtensor.module = "attn.wk"} {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %s = arith.addf %acc, %m : bf16
    linalg.yield %s : bf16
  } -> tensor<1x8192x4096xbf16>
  %v = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%x, %wv : tensor<1x8192x4096xbf16>, tensor<4096x4096xbf16>)
      outs(%f : tensor<1x8192x4096xbf16>) attrs = {dtensor.module = "attn.wv"} {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %s = arith.addf %acc, %m : bf16
    linalg.yield %s : bf16
  } -> tensor<1x8192x4096xbf16>

  // Heads: [2, 8, 32] -> [2, 8, 4, 8].
  %qh = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [1, 8192, 32, 128]
      {dtensor.module = "attn"} : tensor<1x8192x4096xbf16> into tensor<1x8192x32x128xbf16>
  %kh = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [1, 8192, 32, 128]
      {dtensor.module = "attn"} : tensor<1x8192x4096xbf16> into tensor<1x8192x32x128xbf16>
  %vh = tensor.expand_shape %v [[0], [1], [2, 3]] output_shape [1, 8192, 32, 128]
      {dtensor.module = "attn"} : tensor<1x8192x4096xbf16> into tensor<1x8192x32x128xbf16>

  // softmax(q k^T * scale) per head.
  %es = tensor.empty() : tensor<1x32x8192x8192xbf16>
  %fs = linalg.fill ins(%zero : bf16) outs(%es : tensor<1x32x8192x8192xbf16>)
      -> tensor<1x32x8192x8192xbf16>
  %scores = linalg.generic {indexing_maps = [#q, #k, #scores],
                            iterator_types = ["parallel", "parallel",
                                              "parallel", "parallel",
                                              "reduction"]}
      ins(%qh, %kh : tensor<1x8192x32x128xbf16>, tensor<1x8192x32x128xbf16>)
      outs(%fs : tensor<1x32x8192x8192xbf16>) attrs = {dtensor.module = "attn"} {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %s = arith.addf %acc, %m : bf16
    linalg.yield %s : bf16
  } -> tensor<1x32x8192x8192xbf16>
  %ez = tensor.empty() : tensor<1x32x8192x8192xbf16>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel",
                                              "parallel", "parallel"]}
      ins(%scores : tensor<1x32x8192x8192xbf16>) outs(%ez : tensor<1x32x8192x8192xbf16>)
      attrs = {dtensor.module = "attn"} {
  ^bb0(%a: bf16, %o: bf16):
    %m = arith.mulf %a, %scale : bf16
    linalg.yield %m : bf16
  } -> tensor<1x32x8192x8192xbf16>
  %ep = tensor.empty() : tensor<1x32x8192x8192xbf16>
  %probs = linalg.softmax {dtensor.module = "attn"} dimension(3)
      ins(%scaled : tensor<1x32x8192x8192xbf16>) outs(%ep : tensor<1x32x8192x8192xbf16>)
      -> tensor<1x32x8192x8192xbf16>

  // o = probs v, heads merged back: [2, 8, 4, 8] -> [2, 8, 32].
  %eo = tensor.empty() : tensor<1x8192x32x128xbf16>
  %fo = linalg.fill ins(%zero : bf16) outs(%eo : tensor<1x8192x32x128xbf16>)
      -> tensor<1x8192x32x128xbf16>
  %oh = linalg.generic {indexing_maps = [#p, #v, #o],
                        iterator_types = ["parallel", "parallel", "parallel",
                                          "parallel", "reduction"]}
      ins(%probs, %vh : tensor<1x32x8192x8192xbf16>, tensor<1x8192x32x128xbf16>)
      outs(%fo : tensor<1x8192x32x128xbf16>) attrs = {dtensor.module = "attn"} {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %s = arith.addf %acc, %m : bf16
    linalg.yield %s : bf16
  } -> tensor<1x8192x32x128xbf16>
  %o = tensor.collapse_shape %oh [[0], [1], [2, 3]] {dtensor.module = "attn"}
      : tensor<1x8192x32x128xbf16> into tensor<1x8192x4096xbf16>

  // The output projection.
  %y = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%o, %wo : tensor<1x8192x4096xbf16>, tensor<4096x4096xbf16>)
      outs(%f : tensor<1x8192x4096xbf16>) attrs = {dtensor.module = "attn.wo"} {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %s = arith.addf %acc, %m : bf16
    linalg.yield %s : bf16
  } -> tensor<1x8192x4096xbf16>
  return %y : tensor<1x8192x4096xbf16>
}
