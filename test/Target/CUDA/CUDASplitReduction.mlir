// RUN: dtensor-opt %s -split-input-file --verify-each --dtensor-cuda-split-reduction | FileCheck %s
// RUN: dtensor-opt %s -split-input-file --verify-each --dtensor-cuda-split-reduction=min-threads=16 | FileCheck %s --check-prefix=FEW
// RUN: not dtensor-opt %s -split-input-file --dtensor-cuda-split-reduction=min-threads=0 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: dtensor-cuda-split-reduction: min-threads must be positive, got 0

// An RMSNorm's gain gradient: a sum over 1024 rows for 64 outputs (a
// thread each, folding 1024 rows in turn). Split into 64 partial sums of
// 16 rows each (64 x 64 threads), laid out [64 outputs, 64 partials], and
// their reduction, a row reduction (a warp per output), into the original
// zero-filled output. With min-threads=16 (64 outputs are enough) nothing
// is split.
// CHECK-LABEL: func.func @gain_gradient(
// CHECK-SAME:      %[[DY:.*]]: tensor<1024x64xbf16>, %[[X:.*]]: tensor<1024x64xbf16>, %[[R:.*]]: tensor<1024xf32>)
// CHECK-DAG:     %[[DY3:.*]] = tensor.expand_shape %[[DY]] {{\[}}[0, 1], [2]] output_shape [64, 16, 64] : tensor<1024x64xbf16> into tensor<64x16x64xbf16>
// CHECK-DAG:     %[[X3:.*]] = tensor.expand_shape %[[X]] {{\[}}[0, 1], [2]] output_shape [64, 16, 64]
// CHECK-DAG:     %[[R2:.*]] = tensor.expand_shape %[[R]] {{\[}}[0, 1]] output_shape [64, 16] : tensor<1024xf32> into tensor<64x16xf32>
// CHECK-DAG:     %[[PE:.*]] = tensor.empty() : tensor<64x64xf32>
// CHECK:         %[[PF:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[PE]] : tensor<64x64xf32>)
// CHECK:         %[[P:.*]] = linalg.generic {indexing_maps = [#[[M3:.*]], #[[M3]], #{{.*}}, #{{.*}}], iterator_types = ["reduction", "parallel", "parallel"]}
// CHECK-SAME:      ins(%[[DY3]], %[[X3]], %[[R2]] : tensor<64x16x64xbf16>, tensor<64x16x64xbf16>, tensor<64x16xf32>) outs(%[[PF]] : tensor<64x64xf32>)
// CHECK:         %[[G:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%[[P]] : tensor<64x64xf32>) outs(%{{.*}} : tensor<64xf32>)
// CHECK:           arith.addf
// CHECK:         return %[[G]]
// FEW-LABEL: func.func @gain_gradient(
// FEW-NOT:     tensor.expand_shape
// FEW:         linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// FEW-NOT:     linalg.generic
// FEW:         return
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @gain_gradient(%dy: tensor<1024x64xbf16>, %x: tensor<1024x64xbf16>, %r: tensor<1024xf32>) -> tensor<64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %g = linalg.generic {indexing_maps = [#id, #id, #row, #col], iterator_types = ["reduction", "parallel"]}
      ins(%dy, %x, %r : tensor<1024x64xbf16>, tensor<1024x64xbf16>, tensor<1024xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%a: bf16, %b: bf16, %s: f32, %acc: f32):
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %af, %bf : f32
    %q = arith.mulf %p, %s : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  return %g : tensor<64xf32>
}

// -----

// The number of partials: at least 8 rows each (320 rows: 2^6 does not
// divide 320 / 8 ... 40 partials are no power of two: 32 partials of 10
// rows), and at most 4 * min-threads threads (16384 outputs: 16 partials).
// CHECK-LABEL: func.func @partials(
// CHECK:         tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [32, 10, 64]
// CHECK:         linalg.generic {{.*}} outs(%{{.*}} : tensor<64x32xf32>)
// CHECK:         tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [16, 32, 16384]
// CHECK:         linalg.generic {{.*}} outs(%{{.*}} : tensor<16384x16xf32>)
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
func.func @partials(%a: tensor<320x64xf32>, %b: tensor<512x16384xf32>) -> (tensor<64xf32>, tensor<16384xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%a : tensor<320x64xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<16384xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16384xf32>) -> tensor<16384xf32>
  %s2 = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%b : tensor<512x16384xf32>) outs(%f2 : tensor<16384xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    linalg.yield %t : f32
  } -> tensor<16384xf32>
  return %s, %s2 : tensor<64xf32>, tensor<16384xf32>
}

// -----

// Left alone: a row reduction (the innermost loop reduced: a warp per
// row), a column sum of 128 rows (under 256 elements each), one with
// 65536 outputs (enough threads), a dynamic one, and a contraction (a
// matmul for cuBLASLt).
// CHECK-LABEL: func.func @not_split(
// CHECK-NOT:     tensor.expand_shape
// CHECK-COUNT-4: linalg.generic
// CHECK:         linalg.matmul
// CHECK-NOT:     linalg.generic
// CHECK:         return
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @not_split(%rows: tensor<64x1024xf32>, %short: tensor<128x64xf32>, %wide: tensor<512x65536xf32>,
                     %dyn: tensor<?x64xf32>, %ma: tensor<64x1024xf32>, %mb: tensor<1024x64xf32>)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<65536xf32>, tensor<64xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%rows : tensor<64x1024xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%short : tensor<128x64xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %ew = tensor.empty() : tensor<65536xf32>
  %fw = linalg.fill ins(%zero : f32) outs(%ew : tensor<65536xf32>) -> tensor<65536xf32>
  %w = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%wide : tensor<512x65536xf32>) outs(%fw : tensor<65536xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    linalg.yield %t : f32
  } -> tensor<65536xf32>
  %d = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%dyn : tensor<?x64xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %em = tensor.empty() : tensor<64x64xf32>
  %fm = linalg.fill ins(%zero : f32) outs(%em : tensor<64x64xf32>) -> tensor<64x64xf32>
  %m = linalg.matmul ins(%ma, %mb : tensor<64x1024xf32>, tensor<1024x64xf32>) outs(%fm : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r, %s, %w, %d, %m : tensor<64xf32>, tensor<64xf32>, tensor<65536xf32>, tensor<64xf32>, tensor<64x64xf32>
}
