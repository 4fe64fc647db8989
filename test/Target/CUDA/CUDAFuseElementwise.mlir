// RUN: dtensor-opt %s -split-input-file --verify-each --dtensor-cuda-fuse-elementwise | FileCheck %s

// bias + gelu-like chain after a matmul: the elementwise ops fuse into one
// generic, the matmul and its fill stay as they are.
// CHECK-LABEL: func.func @chain(
// CHECK:         %[[F:.*]] = linalg.fill
// CHECK:         %[[MM:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x32xf32>) outs(%[[F]] : tensor<8x32xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[MM]], %{{.*}} : tensor<8x32xf32>, tensor<32xf32>)
// CHECK:           arith.addf
// CHECK:           math.tanh
// CHECK:           arith.mulf
// CHECK-NOT:     linalg.generic
func.func @chain(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                          iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%m: f32, %v: f32, %o: f32):
    %s = arith.addf %m, %v : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %act = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%bias : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    %m = arith.mulf %a, %t : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>
  return %act : tensor<8x32xf32>
}

// -----

// An elementwise producer is not fused into a matmul (it stays a matmul
// for cuBLASLt); a transpose feeding it is folded into its indexing map.
// CHECK-LABEL: func.func @into_matmul(
// CHECK-SAME:      %[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<32x16xf32>
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<8x16xf32>)
// CHECK:           arith.mulf
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #[[TMAP:.*]], #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%[[S]], %[[W]] : tensor<8x16xf32>, tensor<32x16xf32>)
// CHECK-NOT:     linalg.transpose
func.func @into_matmul(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %et = tensor.empty() : tensor<16x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%et : tensor<16x32xf32>) permutation = [1, 0]
  %r = linalg.matmul ins(%s, %wt : tensor<8x16xf32>, tensor<16x32xf32>) outs(%c : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// A SwiGLU's gate and up projections share one zero init (CSE merges
// same-shaped fills): each gets its own fill (and empty tensor), so that
// bufferization gives each matmul a fresh buffer and the matmul rewrite
// folds both fills (accumulate=0) instead of a fill kernel, a copy kernel
// and matmuls accumulating onto C.
// CHECK-LABEL: func.func @shared_zero_init(
// CHECK-DAG:     %[[E1:.*]] = tensor.empty() : tensor<8x32xbf16>
// CHECK-DAG:     %[[E2:.*]] = tensor.empty() : tensor<8x32xbf16>
// CHECK-DAG:     %[[F1:.*]] = linalg.fill ins(%{{.*}} : bf16) outs(%[[E1]] : tensor<8x32xbf16>)
// CHECK-DAG:     %[[F2:.*]] = linalg.fill ins(%{{.*}} : bf16) outs(%[[E2]] : tensor<8x32xbf16>)
// CHECK-DAG:     linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xbf16>, tensor<16x32xbf16>) outs(%[[F1]] : tensor<8x32xbf16>)
// CHECK-DAG:     linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xbf16>, tensor<16x32xbf16>) outs(%[[F2]] : tensor<8x32xbf16>)
// CHECK:         return
func.func @shared_zero_init(%x: tensor<8x16xbf16>, %w1: tensor<16x32xbf16>,
                            %w3: tensor<16x32xbf16>)
    -> (tensor<8x32xbf16>, tensor<8x32xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8x32xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %a = linalg.matmul ins(%x, %w1 : tensor<8x16xbf16>, tensor<16x32xbf16>)
      outs(%f : tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %b = linalg.matmul ins(%x, %w3 : tensor<8x16xbf16>, tensor<16x32xbf16>)
      outs(%f : tensor<8x32xbf16>) -> tensor<8x32xbf16>
  return %a, %b : tensor<8x32xbf16>, tensor<8x32xbf16>
}

// -----

// autodiff accumulates gradients with linalg.add: generalized, it fuses
// with its elementwise producers (upstream fusion takes generics only), one
// kernel for the three ops.
// CHECK-LABEL: func.func @named_add(
// CHECK-SAME:      %[[X:.*]]: tensor<8x32xf32>, %[[Y:.*]]: tensor<8x32xf32>
// CHECK:         %[[R:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[X]], %[[Y]] : tensor<8x32xf32>, tensor<8x32xf32>)
// CHECK-DAG:       math.exp
// CHECK-DAG:       math.tanh
// CHECK:           arith.addf
// CHECK:           linalg.yield
// CHECK-NOT:     linalg.
// CHECK:         return %[[R]]
#id = affine_map<(i, j) -> (i, j)>
func.func @named_add(%x: tensor<8x32xf32>, %y: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %e = tensor.empty() : tensor<8x32xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.exp %p : f32
    linalg.yield %t : f32
  } -> tensor<8x32xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  } -> tensor<8x32xf32>
  %s = linalg.add ins(%a, %b : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %s : tensor<8x32xf32>
}

// -----

// SwiGLU's backward: the gradients of a and b in y = silu(a) * b, both
// from the cotangent g and the forward's a (and b), as autodiff writes
// them: two sibling generics become one generic of two results reading g,
// a and b once, what both compute of a (exp(-a), 1 + exp(-a)) computed once
// (CSE within the merged body).
// CHECK-LABEL: func.func @swiglu_backward(
// CHECK-SAME:      %[[G:.*]]: tensor<8x32xbf16>, %[[A:.*]]: tensor<8x32xbf16>, %[[B:.*]]: tensor<8x32xbf16>)
// CHECK:         %[[M:.*]]:2 = linalg.generic
// CHECK-SAME:      ins(%[[G]], %[[A]], %[[B]] : tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>)
// CHECK-SAME:      outs(%{{.*}}, %{{.*}} : tensor<8x32xbf16>, tensor<8x32xbf16>)
// CHECK:           math.exp
// CHECK-NOT:       math.exp
// CHECK:           linalg.yield %{{.*}}, %{{.*}} : bf16, bf16
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[M]]#0, %[[M]]#1
#id = affine_map<(i, j) -> (i, j)>
func.func @swiglu_backward(%g: tensor<8x32xbf16>, %a: tensor<8x32xbf16>, %b: tensor<8x32xbf16>)
    -> (tensor<8x32xbf16>, tensor<8x32xbf16>) {
  %e = tensor.empty() : tensor<8x32xbf16>
  %da = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %a, %b : tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<8x32xbf16>) outs(%e : tensor<8x32xbf16>) {
  ^bb0(%gi: bf16, %ai: bf16, %bi: bf16, %o: bf16):
    %one = arith.constant 1.0 : f32
    %af = arith.extf %ai : bf16 to f32
    %n = arith.negf %af : f32
    %x = math.exp %n : f32
    %d = arith.addf %x, %one : f32
    %s = arith.divf %one, %d : f32
    %t = arith.mulf %af, %x : f32
    %u = arith.divf %t, %d : f32
    %v = arith.divf %u, %d : f32
    %w = arith.addf %s, %v : f32
    %bf = arith.extf %bi : bf16 to f32
    %gf = arith.extf %gi : bf16 to f32
    %r = arith.mulf %w, %bf : f32
    %q = arith.mulf %r, %gf : f32
    %qt = arith.truncf %q : f32 to bf16
    linalg.yield %qt : bf16
  } -> tensor<8x32xbf16>
  %db = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %a : tensor<8x32xbf16>, tensor<8x32xbf16>) outs(%e : tensor<8x32xbf16>) {
  ^bb0(%gi: bf16, %ai: bf16, %o: bf16):
    %one = arith.constant 1.0 : f32
    %af = arith.extf %ai : bf16 to f32
    %n = arith.negf %af : f32
    %x = math.exp %n : f32
    %d = arith.addf %x, %one : f32
    %s = arith.divf %af, %d : f32
    %gf = arith.extf %gi : bf16 to f32
    %q = arith.mulf %s, %gf : f32
    %qt = arith.truncf %q : f32 to bf16
    linalg.yield %qt : bf16
  } -> tensor<8x32xbf16>
  return %da, %db : tensor<8x32xbf16>, tensor<8x32xbf16>
}

// -----

// Siblings that are not merged: the later one reads a value computed
// between them (the merge takes the earlier one's place and nothing moves
// later), one over other loops (v's own, 8 where the first has 8 x 8), and
// one reading x transposed (no vector accesses: merged, the others would
// lose theirs).
// CHECK-LABEL: func.func @siblings_kept(
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x8xf32>, tensor<8xf32>)
// CHECK:         linalg.matmul
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x8xf32>, tensor<8x8xf32>)
// CHECK:         linalg.generic {{.*}} ins(%{{.*}} : tensor<8xf32>)
// CHECK:         linalg.generic {{.*}} ins(%{{.*}} : tensor<8x8xf32>)
// CHECK-NOT:     linalg.generic
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @siblings_kept(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>, %c: tensor<8x8xf32>, %v: tensor<8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>) {
  %e = tensor.empty() : tensor<8x8xf32>
  %a = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %v : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.mulf %p, %q : f32
    %t = math.exp %s : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %m = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %t = arith.mulf %p, %q : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %ev = tensor.empty() : tensor<8xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%v : tensor<8xf32>) outs(%ev : tensor<8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %q = arith.negf %p : f32
    linalg.yield %q : f32
  } -> tensor<8x8xf32>
  return %a, %b, %d, %t : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>
}

// -----

// RMSNorm's backward as autodiff orders it: the row dot r of its input
// gradient, then the gain's gradient (a column sum), then the input
// gradient that reads r. The consumer moves right after the row reduction
// (its operands are all defined before it; its empty init moves along), so
// that the GPU mapping runs both in one kernel.
// CHECK-LABEL: func.func @row_consumer(
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-NEXT:      ^bb0
// CHECK:         }
// CHECK-NEXT:    %[[DX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      ins(%{{.*}}, %[[R]] :
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK:         return %[[DX]]
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @row_consumer(%dy: tensor<16x64xf32>, %x: tensor<16x64xf32>) -> (tensor<16x64xf32>, tensor<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<16xf32>
  %fr = linalg.fill ins(%zero : f32) outs(%er : tensor<16xf32>) -> tensor<16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%dy, %x : tensor<16x64xf32>, tensor<16x64xf32>) outs(%fr : tensor<16xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %t = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %ec = tensor.empty() : tensor<64xf32>
  %fc = linalg.fill ins(%zero : f32) outs(%ec : tensor<64xf32>) -> tensor<64xf32>
  %dg = linalg.generic {indexing_maps = [#id, #id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%dy, %x : tensor<16x64xf32>, tensor<16x64xf32>) outs(%fc : tensor<64xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %t = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e = tensor.empty() : tensor<16x64xf32>
  %dx = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %r : tensor<16x64xf32>, tensor<16xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %t = arith.mulf %p, %q : f32
    linalg.yield %t : f32
  } -> tensor<16x64xf32>
  return %dx, %dg : tensor<16x64xf32>, tensor<64xf32>
}
