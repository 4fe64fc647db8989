// RUN: dtensor-opt %s -split-input-file --dtensor-cuda-fuse-attention | FileCheck %s

// Causal attention over 2 heads of 64, q, k, v slices of one fused qkv
// projection (what bench/gpu_rank/gen_rank.py writes): scores in bf16,
// scale and mask in f32, softmax, truncation, p v. One call of the fused
// kernel with the scale and causal=1; no scores left.
// CHECK-LABEL: func.func @causal(
// CHECK-SAME:    %[[QKV:.*]]: tensor<128x3x2x64xbf16>
// CHECK:         %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[Q:.*]] = tensor.extract_slice %[[QKV]][0, 0, 0, 0]
// CHECK:         %[[K:.*]] = tensor.extract_slice %[[QKV]][0, 1, 0, 0]
// CHECK:         %[[V:.*]] = tensor.extract_slice %[[QKV]][0, 2, 0, 0]
// CHECK-NOT:     tensor.empty
// CHECK-NOT:     linalg.fill
// CHECK:         %[[QB:.*]] = bufferization.to_buffer %[[Q]] read_only : tensor<128x2x64xbf16> to memref<128x2x64xbf16, strided<[?, ?, ?], offset: ?>>
// CHECK:         %[[QU:.*]] = memref.cast %[[QB]] : {{.*}} to memref<*xbf16>
// CHECK:         %[[KB:.*]] = bufferization.to_buffer %[[K]] read_only
// CHECK:         %[[KU:.*]] = memref.cast %[[KB]]
// CHECK:         %[[VB:.*]] = bufferization.to_buffer %[[V]] read_only
// CHECK:         %[[VU:.*]] = memref.cast %[[VB]]
// CHECK:         %[[O:.*]] = memref.alloc() : memref<128x2x64xbf16>
// CHECK-DAG:     %[[SCALE:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-DAG:     %[[CAUSAL:.*]] = arith.constant 1 : i64
// CHECK:         %[[OU:.*]] = memref.cast %[[O]] : memref<128x2x64xbf16> to memref<*xbf16>
// CHECK:         call @dtensor_rt_attention_bf16(%[[CTX]], %[[QU]], %[[KU]], %[[VU]], %[[OU]], %[[SCALE]], %[[CAUSAL]])
// CHECK:         %[[R:.*]] = bufferization.to_tensor %[[O]] restrict writable : memref<128x2x64xbf16> to tensor<128x2x64xbf16>
// CHECK:         return %[[R]]
// CHECK-NOT:     linalg.softmax
// CHECK-NOT:     linalg.generic
// CHECK-DAG:   func.func private @dtensor_rt_context() -> !llvm.ptr
// CHECK-DAG:   func.func private @dtensor_rt_attention_bf16(!llvm.ptr, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, f32, i64)
#q = affine_map<(h, s, t, e) -> (s, h, e)>
#k = affine_map<(h, s, t, e) -> (t, h, e)>
#sc = affine_map<(h, s, t, e) -> (h, s, t)>
#p = affine_map<(s, h, e, t) -> (h, s, t)>
#v = affine_map<(s, h, e, t) -> (t, h, e)>
#o = affine_map<(s, h, e, t) -> (s, h, e)>
#id3 = affine_map<(h, s, t) -> (h, s, t)>
func.func @causal(%qkv: tensor<128x3x2x64xbf16>) -> tensor<128x2x64xbf16> {
  %zero = arith.constant 0.0 : bf16
  %q = tensor.extract_slice %qkv[0, 0, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xbf16> to tensor<128x2x64xbf16>
  %k = tensor.extract_slice %qkv[0, 1, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xbf16> to tensor<128x2x64xbf16>
  %v = tensor.extract_slice %qkv[0, 2, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xbf16> to tensor<128x2x64xbf16>
  %es = tensor.empty() : tensor<2x128x128xbf16>
  %fs = linalg.fill ins(%zero : bf16) outs(%es : tensor<2x128x128xbf16>) -> tensor<2x128x128xbf16>
  %s = linalg.generic {indexing_maps = [#q, #k, #sc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<128x2x64xbf16>, tensor<128x2x64xbf16>) outs(%fs : tensor<2x128x128xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<2x128x128xbf16>
  %em = tensor.empty() : tensor<2x128x128xf32>
  %masked = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x128x128xbf16>) outs(%em : tensor<2x128x128xf32>) {
  ^bb0(%a: bf16, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %scale = arith.constant 0.125 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %af = arith.extf %a : bf16 to f32
    %y = arith.mulf %af, %scale : f32
    %future = arith.cmpi ugt, %j, %i : index
    %r = arith.select %future, %ninf, %y : f32
    linalg.yield %r : f32
  } -> tensor<2x128x128xf32>
  %ep = tensor.empty() : tensor<2x128x128xf32>
  %probs = linalg.softmax dimension(2) ins(%masked : tensor<2x128x128xf32>) outs(%ep : tensor<2x128x128xf32>) -> tensor<2x128x128xf32>
  %eb = tensor.empty() : tensor<2x128x128xbf16>
  %pb = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%probs : tensor<2x128x128xf32>) outs(%eb : tensor<2x128x128xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x128x128xbf16>
  %eo = tensor.empty() : tensor<128x2x64xbf16>
  %fo = linalg.fill ins(%zero : bf16) outs(%eo : tensor<128x2x64xbf16>) -> tensor<128x2x64xbf16>
  %oh = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%pb, %v : tensor<2x128x128xbf16>, tensor<128x2x64xbf16>) outs(%fo : tensor<128x2x64xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<128x2x64xbf16>
  return %oh : tensor<128x2x64xbf16>
}

// -----

// Batched ([b, s, h, e], as examples/attention.mlir writes it) f16, no
// mask, the scale as a division, softmax straight into p v, loops in
// another order: causal=0, scale 1/8.
// CHECK-LABEL: func.func @batched(
// CHECK-DAG:     %[[SCALE:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-DAG:     %[[CAUSAL:.*]] = arith.constant 0 : i64
// CHECK:         call @dtensor_rt_attention_f16(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SCALE]], %[[CAUSAL]])
// CHECK-NOT:     linalg.softmax
#bq = affine_map<(b, h, s, t, e) -> (b, s, h, e)>
#bk = affine_map<(b, h, s, t, e) -> (b, t, h, e)>
#bs = affine_map<(b, h, s, t, e) -> (b, h, s, t)>
#bp = affine_map<(b, s, h, e, t) -> (b, h, s, t)>
#bv = affine_map<(b, s, h, e, t) -> (b, t, h, e)>
#bo = affine_map<(b, s, h, e, t) -> (b, s, h, e)>
#id4 = affine_map<(b, h, s, t) -> (b, h, s, t)>
func.func @batched(%q: tensor<2x32x4x128xf16>, %k: tensor<2x48x4x128xf16>, %v: tensor<2x48x4x128xf16>) -> tensor<2x32x4x128xf16> {
  %zero = arith.constant 0.0 : f16
  %es = tensor.empty() : tensor<2x4x32x48xf16>
  %fs = linalg.fill ins(%zero : f16) outs(%es : tensor<2x4x32x48xf16>) -> tensor<2x4x32x48xf16>
  %s = linalg.generic {indexing_maps = [#bq, #bk, #bs], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x32x4x128xf16>, tensor<2x48x4x128xf16>) outs(%fs : tensor<2x4x32x48xf16>) {
  ^bb0(%a: f16, %b: f16, %acc: f16):
    %m = arith.mulf %a, %b : f16
    %r = arith.addf %acc, %m : f16
    linalg.yield %r : f16
  } -> tensor<2x4x32x48xf16>
  %ez = tensor.empty() : tensor<2x4x32x48xf16>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x4x32x48xf16>) outs(%ez : tensor<2x4x32x48xf16>) {
  ^bb0(%a: f16, %out: f16):
    %c = arith.constant 8.0 : f16
    %r = arith.divf %a, %c : f16
    linalg.yield %r : f16
  } -> tensor<2x4x32x48xf16>
  %ep = tensor.empty() : tensor<2x4x32x48xf16>
  %probs = linalg.softmax dimension(3) ins(%scaled : tensor<2x4x32x48xf16>) outs(%ep : tensor<2x4x32x48xf16>) -> tensor<2x4x32x48xf16>
  %eo = tensor.empty() : tensor<2x32x4x128xf16>
  %fo = linalg.fill ins(%zero : f16) outs(%eo : tensor<2x32x4x128xf16>) -> tensor<2x32x4x128xf16>
  %o = linalg.generic {indexing_maps = [#bp, #bv, #bo], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%probs, %v : tensor<2x4x32x48xf16>, tensor<2x48x4x128xf16>) outs(%fo : tensor<2x32x4x128xf16>) {
  ^bb0(%a: f16, %b: f16, %acc: f16):
    %m = arith.mulf %a, %b : f16
    %r = arith.addf %acc, %m : f16
    linalg.yield %r : f16
  } -> tensor<2x32x4x128xf16>
  return %o : tensor<2x32x4x128xf16>
}

// -----

// The mask hides earlier keys (t < s), not later ones: not causal attention, left alone.
// CHECK-LABEL: func.func @mask_past(
// CHECK-NOT:     dtensor_rt_attention
// CHECK:         linalg.softmax
// CHECK-NOT:     dtensor_rt_attention
// CHECK:         return
#q = affine_map<(h, s, t, e) -> (s, h, e)>
#k = affine_map<(h, s, t, e) -> (t, h, e)>
#sc = affine_map<(h, s, t, e) -> (h, s, t)>
#p = affine_map<(s, h, e, t) -> (h, s, t)>
#v = affine_map<(s, h, e, t) -> (t, h, e)>
#o = affine_map<(s, h, e, t) -> (s, h, e)>
#id3 = affine_map<(h, s, t) -> (h, s, t)>
func.func @mask_past(%qkv: tensor<128x3x2x64xbf16>) -> tensor<128x2x64xbf16> {
  %zero = arith.constant 0.0 : bf16
  %q = tensor.extract_slice %qkv[0, 0, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xbf16> to tensor<128x2x64xbf16>
  %k = tensor.extract_slice %qkv[0, 1, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xbf16> to tensor<128x2x64xbf16>
  %v = tensor.extract_slice %qkv[0, 2, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xbf16> to tensor<128x2x64xbf16>
  %es = tensor.empty() : tensor<2x128x128xbf16>
  %fs = linalg.fill ins(%zero : bf16) outs(%es : tensor<2x128x128xbf16>) -> tensor<2x128x128xbf16>
  %s = linalg.generic {indexing_maps = [#q, #k, #sc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<128x2x64xbf16>, tensor<128x2x64xbf16>) outs(%fs : tensor<2x128x128xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<2x128x128xbf16>
  %em = tensor.empty() : tensor<2x128x128xf32>
  %masked = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x128x128xbf16>) outs(%em : tensor<2x128x128xf32>) {
  ^bb0(%a: bf16, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %scale = arith.constant 0.125 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %af = arith.extf %a : bf16 to f32
    %y = arith.mulf %af, %scale : f32
    %future = arith.cmpi ult, %j, %i : index
    %r = arith.select %future, %ninf, %y : f32
    linalg.yield %r : f32
  } -> tensor<2x128x128xf32>
  %ep = tensor.empty() : tensor<2x128x128xf32>
  %probs = linalg.softmax dimension(2) ins(%masked : tensor<2x128x128xf32>) outs(%ep : tensor<2x128x128xf32>) -> tensor<2x128x128xf32>
  %eb = tensor.empty() : tensor<2x128x128xbf16>
  %pb = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%probs : tensor<2x128x128xf32>) outs(%eb : tensor<2x128x128xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x128x128xbf16>
  %eo = tensor.empty() : tensor<128x2x64xbf16>
  %fo = linalg.fill ins(%zero : bf16) outs(%eo : tensor<128x2x64xbf16>) -> tensor<128x2x64xbf16>
  %oh = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%pb, %v : tensor<2x128x128xbf16>, tensor<128x2x64xbf16>) outs(%fo : tensor<128x2x64xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<128x2x64xbf16>
  return %oh : tensor<128x2x64xbf16>
}


// -----

// The scores are also returned: they must exist, left alone.
// CHECK-LABEL: func.func @scores_reused(
// CHECK-NOT:     dtensor_rt_attention
// CHECK:         linalg.softmax
// CHECK-NOT:     dtensor_rt_attention
// CHECK:         return
#q = affine_map<(h, s, t, e) -> (s, h, e)>
#k = affine_map<(h, s, t, e) -> (t, h, e)>
#sc = affine_map<(h, s, t, e) -> (h, s, t)>
#p = affine_map<(s, h, e, t) -> (h, s, t)>
#v = affine_map<(s, h, e, t) -> (t, h, e)>
#o = affine_map<(s, h, e, t) -> (s, h, e)>
#id3 = affine_map<(h, s, t) -> (h, s, t)>
func.func @scores_reused(%qkv: tensor<128x3x2x64xbf16>) -> (tensor<128x2x64xbf16>, tensor<2x128x128xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %q = tensor.extract_slice %qkv[0, 0, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xbf16> to tensor<128x2x64xbf16>
  %k = tensor.extract_slice %qkv[0, 1, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xbf16> to tensor<128x2x64xbf16>
  %v = tensor.extract_slice %qkv[0, 2, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xbf16> to tensor<128x2x64xbf16>
  %es = tensor.empty() : tensor<2x128x128xbf16>
  %fs = linalg.fill ins(%zero : bf16) outs(%es : tensor<2x128x128xbf16>) -> tensor<2x128x128xbf16>
  %s = linalg.generic {indexing_maps = [#q, #k, #sc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<128x2x64xbf16>, tensor<128x2x64xbf16>) outs(%fs : tensor<2x128x128xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<2x128x128xbf16>
  %em = tensor.empty() : tensor<2x128x128xf32>
  %masked = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x128x128xbf16>) outs(%em : tensor<2x128x128xf32>) {
  ^bb0(%a: bf16, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %scale = arith.constant 0.125 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %af = arith.extf %a : bf16 to f32
    %y = arith.mulf %af, %scale : f32
    %future = arith.cmpi ugt, %j, %i : index
    %r = arith.select %future, %ninf, %y : f32
    linalg.yield %r : f32
  } -> tensor<2x128x128xf32>
  %ep = tensor.empty() : tensor<2x128x128xf32>
  %probs = linalg.softmax dimension(2) ins(%masked : tensor<2x128x128xf32>) outs(%ep : tensor<2x128x128xf32>) -> tensor<2x128x128xf32>
  %eb = tensor.empty() : tensor<2x128x128xbf16>
  %pb = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%probs : tensor<2x128x128xf32>) outs(%eb : tensor<2x128x128xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x128x128xbf16>
  %eo = tensor.empty() : tensor<128x2x64xbf16>
  %fo = linalg.fill ins(%zero : bf16) outs(%eo : tensor<128x2x64xbf16>) -> tensor<128x2x64xbf16>
  %oh = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%pb, %v : tensor<2x128x128xbf16>, tensor<128x2x64xbf16>) outs(%fo : tensor<128x2x64xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<128x2x64xbf16>
  return %oh, %s : tensor<128x2x64xbf16>, tensor<2x128x128xbf16>
}


// -----

// Head dim 32: the kernel takes 64 and 128, left alone.
// CHECK-LABEL: func.func @head_dim_32(
// CHECK-NOT:     dtensor_rt_attention
// CHECK:         linalg.softmax
// CHECK-NOT:     dtensor_rt_attention
// CHECK:         return
#q = affine_map<(h, s, t, e) -> (s, h, e)>
#k = affine_map<(h, s, t, e) -> (t, h, e)>
#sc = affine_map<(h, s, t, e) -> (h, s, t)>
#p = affine_map<(s, h, e, t) -> (h, s, t)>
#v = affine_map<(s, h, e, t) -> (t, h, e)>
#o = affine_map<(s, h, e, t) -> (s, h, e)>
#id3 = affine_map<(h, s, t) -> (h, s, t)>
func.func @head_dim_32(%qkv: tensor<128x3x2x32xbf16>) -> tensor<128x2x32xbf16> {
  %zero = arith.constant 0.0 : bf16
  %q = tensor.extract_slice %qkv[0, 0, 0, 0] [128, 1, 2, 32] [1, 1, 1, 1] : tensor<128x3x2x32xbf16> to tensor<128x2x32xbf16>
  %k = tensor.extract_slice %qkv[0, 1, 0, 0] [128, 1, 2, 32] [1, 1, 1, 1] : tensor<128x3x2x32xbf16> to tensor<128x2x32xbf16>
  %v = tensor.extract_slice %qkv[0, 2, 0, 0] [128, 1, 2, 32] [1, 1, 1, 1] : tensor<128x3x2x32xbf16> to tensor<128x2x32xbf16>
  %es = tensor.empty() : tensor<2x128x128xbf16>
  %fs = linalg.fill ins(%zero : bf16) outs(%es : tensor<2x128x128xbf16>) -> tensor<2x128x128xbf16>
  %s = linalg.generic {indexing_maps = [#q, #k, #sc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<128x2x32xbf16>, tensor<128x2x32xbf16>) outs(%fs : tensor<2x128x128xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<2x128x128xbf16>
  %em = tensor.empty() : tensor<2x128x128xf32>
  %masked = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x128x128xbf16>) outs(%em : tensor<2x128x128xf32>) {
  ^bb0(%a: bf16, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %scale = arith.constant 0.125 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %af = arith.extf %a : bf16 to f32
    %y = arith.mulf %af, %scale : f32
    %future = arith.cmpi ugt, %j, %i : index
    %r = arith.select %future, %ninf, %y : f32
    linalg.yield %r : f32
  } -> tensor<2x128x128xf32>
  %ep = tensor.empty() : tensor<2x128x128xf32>
  %probs = linalg.softmax dimension(2) ins(%masked : tensor<2x128x128xf32>) outs(%ep : tensor<2x128x128xf32>) -> tensor<2x128x128xf32>
  %eb = tensor.empty() : tensor<2x128x128xbf16>
  %pb = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%probs : tensor<2x128x128xf32>) outs(%eb : tensor<2x128x128xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x128x128xbf16>
  %eo = tensor.empty() : tensor<128x2x32xbf16>
  %fo = linalg.fill ins(%zero : bf16) outs(%eo : tensor<128x2x32xbf16>) -> tensor<128x2x32xbf16>
  %oh = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%pb, %v : tensor<2x128x128xbf16>, tensor<128x2x32xbf16>) outs(%fo : tensor<128x2x32xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<128x2x32xbf16>
  return %oh : tensor<128x2x32xbf16>
}


// -----

// f32: the kernel takes bf16 and f16, left alone.
// CHECK-LABEL: func.func @f32(
// CHECK-NOT:     dtensor_rt_attention
// CHECK:         linalg.softmax
// CHECK-NOT:     dtensor_rt_attention
// CHECK:         return
#q = affine_map<(h, s, t, e) -> (s, h, e)>
#k = affine_map<(h, s, t, e) -> (t, h, e)>
#sc = affine_map<(h, s, t, e) -> (h, s, t)>
#p = affine_map<(s, h, e, t) -> (h, s, t)>
#v = affine_map<(s, h, e, t) -> (t, h, e)>
#o = affine_map<(s, h, e, t) -> (s, h, e)>
#id3 = affine_map<(h, s, t) -> (h, s, t)>
func.func @f32(%qkv: tensor<128x3x2x64xf32>) -> tensor<128x2x64xf32> {
  %zero = arith.constant 0.0 : f32
  %q = tensor.extract_slice %qkv[0, 0, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xf32> to tensor<128x2x64xf32>
  %k = tensor.extract_slice %qkv[0, 1, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xf32> to tensor<128x2x64xf32>
  %v = tensor.extract_slice %qkv[0, 2, 0, 0] [128, 1, 2, 64] [1, 1, 1, 1] : tensor<128x3x2x64xf32> to tensor<128x2x64xf32>
  %es = tensor.empty() : tensor<2x128x128xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<2x128x128xf32>) -> tensor<2x128x128xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #sc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<128x2x64xf32>, tensor<128x2x64xf32>) outs(%fs : tensor<2x128x128xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x128x128xf32>
  %em = tensor.empty() : tensor<2x128x128xf32>
  %masked = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x128x128xf32>) outs(%em : tensor<2x128x128xf32>) {
  ^bb0(%a: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %scale = arith.constant 0.125 : f32
    %ninf = arith.constant 0xFF800000 : f32
        %y = arith.mulf %a, %scale : f32
    %future = arith.cmpi ugt, %j, %i : index
    %r = arith.select %future, %ninf, %y : f32
    linalg.yield %r : f32
  } -> tensor<2x128x128xf32>
  %ep = tensor.empty() : tensor<2x128x128xf32>
  %probs = linalg.softmax dimension(2) ins(%masked : tensor<2x128x128xf32>) outs(%ep : tensor<2x128x128xf32>) -> tensor<2x128x128xf32>
  %eb = tensor.empty() : tensor<2x128x128xf32>
  %pb = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%probs : tensor<2x128x128xf32>) outs(%eb : tensor<2x128x128xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x128x128xf32>
  %eo = tensor.empty() : tensor<128x2x64xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<128x2x64xf32>) -> tensor<128x2x64xf32>
  %oh = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%pb, %v : tensor<2x128x128xf32>, tensor<128x2x64xf32>) outs(%fo : tensor<128x2x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<128x2x64xf32>
  return %oh : tensor<128x2x64xf32>
}

