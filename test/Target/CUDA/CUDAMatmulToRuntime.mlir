// RUN: dtensor-opt %s -split-input-file --verify-each -verify-diagnostics --dtensor-cuda-matmul-to-runtime | FileCheck %s
// RUN: dtensor-opt %s -split-input-file --verify-each -verify-diagnostics --dtensor-cuda-matmul-to-runtime=with-context=false | FileCheck %s --check-prefix=NOCTX
// RUN: dtensor-opt %S/Inputs/matmul-errors.mlir -split-input-file --verify-each --dtensor-cuda-matmul-to-runtime -verify-diagnostics -o /dev/null

// A zero fill that only the matmul sees folds into the call (accumulate=0);
// the context is fetched once per function.
// CHECK-LABEL: func.func @fill_matmul_f32(
// CHECK-SAME:      %[[A:.*]]: memref<8x16xf32>, %[[B:.*]]: memref<16x32xf32>, %[[C:.*]]: memref<8x32xf32>)
// CHECK:         %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK-NOT:     linalg.fill
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[UA:.*]] = memref.cast %[[A]] : memref<8x16xf32> to memref<*xf32>
// CHECK-DAG:     %[[UB:.*]] = memref.cast %[[B]] : memref<16x32xf32> to memref<*xf32>
// CHECK-DAG:     %[[UC:.*]] = memref.cast %[[C]] : memref<8x32xf32> to memref<*xf32>
// CHECK:         call @dtensor_rt_matmul_f32(%[[CTX]], %[[UA]], %[[UB]], %[[UC]], %[[ZERO]])
// CHECK-NOT:     linalg.matmul
// CHECK-NOT:     dtensor_rt_context
// CHECK:         call @dtensor_rt_matmul_f32(%[[CTX]], {{.*}}) :
// CHECK:         return
// CHECK:       func.func private @dtensor_rt_context() -> !llvm.ptr
// CHECK:       func.func private @dtensor_rt_matmul_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64)
// NOCTX-LABEL: func.func @fill_matmul_f32(
// NOCTX-NOT:     dtensor_rt_context
// NOCTX:         call @dtensor_rt_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64) -> ()
// NOCTX:       func.func private @dtensor_rt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64)
func.func @fill_matmul_f32(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %c: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  return
}

// -----

// Without a fill, and with a fill that is read before the matmul or is not
// zero: C += A·B, the fill stays.
// CHECK-LABEL: func.func @accumulate(
// CHECK:         %[[ONE:.*]] = arith.constant 1 : i64
// CHECK:         call @dtensor_rt_matmul_f32({{.*}}, %[[ONE]])
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[C1:.*]] : memref<4x4xf32>)
// CHECK:         linalg.copy ins(%[[C1]] : memref<4x4xf32>)
// CHECK:         %[[ONE1:.*]] = arith.constant 1 : i64
// CHECK:         call @dtensor_rt_matmul_f32({{.*}}, %[[ONE1]])
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<4x4xf32>)
// CHECK:         %[[ONE2:.*]] = arith.constant 1 : i64
// CHECK:         call @dtensor_rt_matmul_f32({{.*}}, %[[ONE2]])
func.func @accumulate(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>, %d: memref<4x4xf32>, %e: memref<4x4xf32>) {
  linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%d : memref<4x4xf32>)
  linalg.copy ins(%d : memref<4x4xf32>) outs(%a : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%d : memref<4x4xf32>)
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%e : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%e : memref<4x4xf32>)
  return
}

// -----

// A fill through a view of C that is used in between keeps the fill.
// CHECK-LABEL: func.func @fill_then_view_use(
// CHECK:         linalg.fill
// CHECK:         memref.subview
// CHECK:         %[[ONE:.*]] = arith.constant 1 : i64
// CHECK:         call @dtensor_rt_matmul_f32({{.*}}, %[[ONE]])
func.func @fill_then_view_use(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>, %x: memref<2x2xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  %v = memref.subview %c[0, 0] [2, 2] [1, 1] : memref<4x4xf32> to memref<2x2xf32, strided<[4, 1]>>
  linalg.copy ins(%v : memref<2x2xf32, strided<[4, 1]>>) outs(%x : memref<2x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

// Transposed operands are passed as strided views.
// CHECK-LABEL: func.func @transposed_a_bf16(
// CHECK-SAME:      %[[A:.*]]: memref<16x8xbf16>
// CHECK:         %[[T:.*]] = memref.transpose %[[A]] (d0, d1) -> (d1, d0) : memref<16x8xbf16> to memref<8x16xbf16, strided<[1, 8]>>
// CHECK:         %[[UA:.*]] = memref.cast %[[T]] : memref<8x16xbf16, strided<[1, 8]>> to memref<*xbf16>
// CHECK:         call @dtensor_rt_matmul_bf16(%{{.*}}, %[[UA]], %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, i64) -> ()
func.func @transposed_a_bf16(%a: memref<16x8xbf16>, %b: memref<16x32xbf16>, %c: memref<8x32xbf16>) {
  %zero = arith.constant 0.0 : bf16
  linalg.fill ins(%zero : bf16) outs(%c : memref<8x32xbf16>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<16x8xbf16>, memref<16x32xbf16>) outs(%c : memref<8x32xbf16>)
  return
}

// -----

// A generic that is a matmul with B transposed (x @ w^T, the nn.Linear form).
// CHECK-LABEL: func.func @generic_linear_f16(
// CHECK-SAME:      %[[X:.*]]: memref<?x64xf16>, %[[W:.*]]: memref<128x64xf16>
// CHECK:         %[[T:.*]] = memref.transpose %[[W]] (d0, d1) -> (d1, d0)
// CHECK:         %[[UW:.*]] = memref.cast %[[T]]
// CHECK:         call @dtensor_rt_matmul_f16(%{{.*}}, %{{.*}}, %[[UW]], %{{.*}}, %{{.*}})
// CHECK-NOT:     linalg.generic
func.func @generic_linear_f16(%x: memref<?x64xf16>, %w: memref<128x64xf16>, %y: memref<?x128xf16>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf16>, memref<128x64xf16>) outs(%y : memref<?x128xf16>) {
  ^bb0(%l: f16, %r: f16, %acc: f16):
    %p = arith.mulf %l, %r : f16
    %s = arith.addf %acc, %p : f16
    linalg.yield %s : f16
  }
  return
}

// -----

// nn.Linear on [batch, seq, hidden] activations: two m dims, collapsed into
// one in A and C; B (the weight, [out, in]) transposed.
// CHECK-LABEL: func.func @linear_3d(
// CHECK-SAME:      %[[X:.*]]: memref<2x16x32xf32>, %[[W:.*]]: memref<64x32xf32>, %[[Y:.*]]: memref<2x16x64xf32>)
// CHECK-DAG:     %[[XC:.*]] = memref.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : memref<2x16x32xf32> into memref<32x32xf32>
// CHECK-DAG:     %[[YC:.*]] = memref.collapse_shape %[[Y]] {{\[}}[0, 1], [2]] : memref<2x16x64xf32> into memref<32x64xf32>
// CHECK-DAG:     %[[WT:.*]] = memref.transpose %[[W]] (d0, d1) -> (d1, d0)
// CHECK-DAG:     %[[UX:.*]] = memref.cast %[[XC]] : memref<32x32xf32> to memref<*xf32>
// CHECK-DAG:     %[[UW:.*]] = memref.cast %[[WT]]
// CHECK-DAG:     %[[UY:.*]] = memref.cast %[[YC]] : memref<32x64xf32> to memref<*xf32>
// CHECK:         call @dtensor_rt_matmul_f32(%{{.*}}, %[[UX]], %[[UW]], %[[UY]], %{{.*}})
func.func @linear_3d(%x: memref<2x16x32xf32>, %w: memref<64x32xf32>, %y: memref<2x16x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<2x16x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (n, k)>, affine_map<(b, s, n, k) -> (b, s, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<2x16x32xf32>, memref<64x32xf32>) outs(%y : memref<2x16x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// B shared by every batch: the batch is one more m dimension, one matmul.
// CHECK-LABEL: func.func @broadcast_b(
// CHECK:         memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : memref<2x4x8xf32> into memref<8x8xf32>
// CHECK:         call @dtensor_rt_matmul_f32(
func.func @broadcast_b(%a: memref<2x4x8xf32>, %b: memref<8x6xf32>, %c: memref<2x4x6xf32>) {
  linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
    ins(%a, %b : memref<2x4x8xf32>, memref<8x6xf32>) outs(%c : memref<2x4x6xf32>)
  return
}

// -----

// Batched, rank 3, inside a loop; a zero fill in the loop body folds in.
// CHECK-LABEL: func.func @batched_in_loop(
// CHECK:         scf.for
// CHECK-NOT:       linalg.fill
// CHECK:           %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK:           call @dtensor_rt_matmul_f32({{.*}}, %[[ZERO]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64) -> ()
func.func @batched_in_loop(%a: memref<2x4x8xf32>, %b: memref<2x8x4xf32>, %c: memref<2x4x4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    linalg.fill ins(%zero : f32) outs(%c : memref<2x4x4xf32>)
    linalg.batch_matmul ins(%a, %b : memref<2x4x8xf32>, memref<2x8x4xf32>) outs(%c : memref<2x4x4xf32>)
  }
  return
}

// -----

// Not contractions: left for the kernel path.
// CHECK-LABEL: func.func @not_matmuls(
// CHECK:         linalg.generic
// CHECK:         linalg.reduce
// CHECK-NOT:     dtensor_rt_matmul
func.func @not_matmuls(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %r: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x4xf32>) outs(%b : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %x : f32
    linalg.yield %m : f32
  }
  linalg.reduce ins(%a : memref<4x4xf32>) outs(%r : memref<4xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  return
}

// -----

// A transposed output C[n, m] (a weight gradient dW = X^T.dY into a
// weight laid out [out, in]): the inputs exchanged, the call computes
// C = B^T.A^T on transposed views (cuBLASLt's transpose flags) into C in
// place; no temporary, no copy kernel. No zero fill: accumulate=1.
// CHECK-LABEL: func.func @transposed_output(
// CHECK-SAME:      %[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8x6xf32>, %[[C:.*]]: memref<6x4xf32>)
// CHECK-DAG:     %[[BT:.*]] = memref.transpose %[[B]] (d0, d1) -> (d1, d0) : memref<8x6xf32> to memref<6x8xf32, strided<[1, 6]>>
// CHECK-DAG:     %[[AT:.*]] = memref.transpose %[[A]] (d0, d1) -> (d1, d0) : memref<4x8xf32> to memref<8x4xf32, strided<[1, 8]>>
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[UB:.*]] = memref.cast %[[BT]]
// CHECK-DAG:     %[[UA:.*]] = memref.cast %[[AT]]
// CHECK-DAG:     %[[UC:.*]] = memref.cast %[[C]] : memref<6x4xf32> to memref<*xf32>
// CHECK:         call @dtensor_rt_matmul_f32(%{{.*}}, %[[UB]], %[[UA]], %[[UC]], %[[ONE]])
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     linalg.copy
// CHECK:         return
func.func @transposed_output(%a: memref<4x8xf32>, %b: memref<8x6xf32>, %c: memref<6x4xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (n, m)>]
    ins(%a, %b : memref<4x8xf32>, memref<8x6xf32>) outs(%c : memref<6x4xf32>)
  return
}

// -----

// Attention's scores: two batch dims (batch, heads) over q and k laid out
// [batch, seq, heads, dim]. No single stride spans (batch, heads) of q: a
// loop over batch, one strided-batch call over the heads per iteration.
// The zero fill still folds in (accumulate=0).
// CHECK-LABEL: func.func @attention_scores(
// CHECK-NOT:     linalg.fill
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           %[[Q:.*]] = memref.subview %{{.*}}{{\[}}%[[I]], 0, 0, 0] [1, 8, 4, 8] [1, 1, 1, 1] : memref<2x8x4x8xf32> to memref<8x4x8xf32, strided<[32, 8, 1], offset: ?>>
// CHECK:           %[[K:.*]] = memref.subview %{{.*}}{{\[}}%[[I]], 0, 0, 0] [1, 8, 4, 8] [1, 1, 1, 1] : memref<2x8x4x8xf32> to memref<8x4x8xf32, strided<[32, 8, 1], offset: ?>>
// CHECK:           %[[S:.*]] = memref.subview %{{.*}}{{\[}}%[[I]], 0, 0, 0] [1, 4, 8, 8] [1, 1, 1, 1] : memref<2x4x8x8xf32> to memref<4x8x8xf32, strided<[64, 8, 1], offset: ?>>
// CHECK:           %[[QT:.*]] = memref.transpose %[[Q]] (d0, d1, d2) -> (d1, d0, d2) : {{.*}} to memref<4x8x8xf32, strided<[8, 32, 1], offset: ?>>
// CHECK:           %[[KT:.*]] = memref.transpose %[[K]] (d0, d1, d2) -> (d1, d2, d0) : {{.*}} to memref<4x8x8xf32, strided<[8, 1, 32], offset: ?>>
// CHECK-DAG:       %[[UQ:.*]] = memref.cast %[[QT]]
// CHECK-DAG:       %[[UK:.*]] = memref.cast %[[KT]]
// CHECK-DAG:       %[[US:.*]] = memref.cast %[[S]]
// CHECK:           call @dtensor_rt_matmul_f32(%{{.*}}, %[[UQ]], %[[UK]], %[[US]], %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64) -> ()
// CHECK-NOT:     linalg.generic
func.func @attention_scores(%q: memref<2x8x4x8xf32>, %k: memref<2x8x4x8xf32>, %s: memref<2x4x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<2x4x8x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, i, h, d)>, affine_map<(b, h, i, j, d) -> (b, j, h, d)>, affine_map<(b, h, i, j, d) -> (b, h, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<2x8x4x8xf32>, memref<2x8x4x8xf32>) outs(%s : memref<2x4x8x8xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// Two batch dims that one stride spans: collapsed into one batch.
// CHECK-LABEL: func.func @two_batch_dims(
// CHECK-NOT:     scf.for
// CHECK-DAG:     memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3]] : memref<2x3x4x8xf32> into memref<6x4x8xf32>
// CHECK-DAG:     memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3]] : memref<2x3x8x5xf32> into memref<6x8x5xf32>
// CHECK-DAG:     memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3]] : memref<2x3x4x5xf32> into memref<6x4x5xf32>
// CHECK:         call @dtensor_rt_matmul_f32(
func.func @two_batch_dims(%a: memref<2x3x4x8xf32>, %b: memref<2x3x8x5xf32>, %c: memref<2x3x4x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<2x3x4x8xf32>, memref<2x3x8x5xf32>) outs(%c : memref<2x3x4x5xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// A copy into a fresh allocation right before the matmul (the residual of
// dtensor-cuda-fuse-matmul-epilogue) folds into the call: C = A.B + R,
// R read in the epilogue, no copy. Also through collapsed m dimensions
// (R takes C's views).
// CHECK-LABEL: func.func @residual(
// CHECK-SAME:      %[[A:.*]]: memref<8x16xbf16>, %[[B:.*]]: memref<16x32xbf16>, %[[R:.*]]: memref<8x32xbf16>
// CHECK-NOT:     memref.copy
// CHECK:         %[[C:.*]] = memref.alloc() : memref<8x32xbf16>
// CHECK-NOT:     memref.copy
// CHECK-DAG:     %[[UR:.*]] = memref.cast %[[R]] : memref<8x32xbf16> to memref<*xbf16>
// CHECK-DAG:     %[[UC:.*]] = memref.cast %[[C]] : memref<8x32xbf16> to memref<*xbf16>
// CHECK:         call @dtensor_rt_matmul_add_bf16(%{{.*}}, %{{.*}}, %{{.*}}, %[[UR]], %[[UC]]) : (!llvm.ptr, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>) -> ()
// CHECK-NOT:     memref.copy
// CHECK:         memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : memref<2x4x32xbf16> into memref<8x32xbf16>
// CHECK:         memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : memref<2x4x32xbf16> into memref<8x32xbf16>
// CHECK:         call @dtensor_rt_matmul_add_bf16(
// CHECK-NOT:     memref.copy
// CHECK:         return
// CHECK:       func.func private @dtensor_rt_matmul_add_bf16(!llvm.ptr, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, memref<*xbf16>)
func.func @residual(%a: memref<8x16xbf16>, %b: memref<16x32xbf16>, %r: memref<8x32xbf16>,
                    %a3: memref<2x4x16xbf16>, %r3: memref<2x4x32xbf16>) -> (memref<8x32xbf16>, memref<2x4x32xbf16>) {
  %c = memref.alloc() : memref<8x32xbf16>
  memref.copy %r, %c : memref<8x32xbf16> to memref<8x32xbf16>
  linalg.matmul ins(%a, %b : memref<8x16xbf16>, memref<16x32xbf16>) outs(%c : memref<8x32xbf16>)
  %c3 = memref.alloc() : memref<2x4x32xbf16>
  memref.copy %r3, %c3 : memref<2x4x32xbf16> to memref<2x4x32xbf16>
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a3, %b : memref<2x4x16xbf16>, memref<16x32xbf16>) outs(%c3 : memref<2x4x32xbf16>) {
  ^bb0(%l: bf16, %q: bf16, %acc: bf16):
    %p = arith.mulf %l, %q : bf16
    %t = arith.addf %acc, %p : bf16
    linalg.yield %t : bf16
  }
  return %c, %c3 : memref<8x32xbf16>, memref<2x4x32xbf16>
}

// -----

// Copies that stay (and the call accumulates onto C): the source is written
// between the copy and the matmul; the target is an argument, not a fresh
// allocation; a view of C is read in between.
// CHECK-LABEL: func.func @residual_kept(
// CHECK:         memref.copy
// CHECK:         linalg.fill
// CHECK:         %[[ONE:.*]] = arith.constant 1 : i64
// CHECK:         call @dtensor_rt_matmul_f32({{.*}}, %[[ONE]])
// CHECK:         memref.copy
// CHECK:         call @dtensor_rt_matmul_f32(
// CHECK:         memref.copy
// CHECK:         memref.load
// CHECK:         call @dtensor_rt_matmul_f32(
// CHECK-NOT:     dtensor_rt_matmul_add
func.func @residual_kept(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %r: memref<8x32xf32>,
                         %out: memref<8x32xf32>) -> (memref<8x32xf32>, memref<8x32xf32>, f32) {
  %zero = arith.constant 0.0 : f32
  %i = arith.constant 0 : index
  %c = memref.alloc() : memref<8x32xf32>
  memref.copy %r, %c : memref<8x32xf32> to memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%r : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  memref.copy %r, %out : memref<8x32xf32> to memref<8x32xf32>
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%out : memref<8x32xf32>)
  %c2 = memref.alloc() : memref<8x32xf32>
  memref.copy %r, %c2 : memref<8x32xf32> to memref<8x32xf32>
  %v = memref.load %c2[%i, %i] : memref<8x32xf32>
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c2 : memref<8x32xf32>)
  return %c, %out, %v : memref<8x32xf32>, memref<8x32xf32>, f32
}

// -----

// A bias broadcast over the rows of a fresh allocation right before the
// matmul folds into cuBLASLt's bias epilogue: C = A.B + bias, no broadcast
// kernel. A broadcast along the other dimension stays (and the call
// accumulates onto it).
// CHECK-LABEL: func.func @bias(
// CHECK-SAME:      %[[A:.*]]: memref<8x16xf32>, %[[B:.*]]: memref<16x32xf32>, %[[BIAS:.*]]: memref<32xf32>, %[[ROWS:.*]]: memref<8xf32>
// CHECK:         %[[C:.*]] = memref.alloc() : memref<8x32xf32>
// CHECK-NOT:     linalg.broadcast
// CHECK-DAG:     %[[NORELU:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[UBIAS:.*]] = memref.cast %[[BIAS]] : memref<32xf32> to memref<*xf32>
// CHECK-DAG:     %[[UC:.*]] = memref.cast %[[C]] : memref<8x32xf32> to memref<*xf32>
// CHECK:         call @dtensor_rt_matmul_bias_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[UBIAS]], %[[UC]], %[[NORELU]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64) -> ()
// CHECK:         linalg.broadcast ins(%[[ROWS]]
// CHECK:         %[[ONE:.*]] = arith.constant 1 : i64
// CHECK:         call @dtensor_rt_matmul_f32({{.*}}, %[[ONE]])
// CHECK:       func.func private @dtensor_rt_matmul_bias_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64)
func.func @bias(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %bias: memref<32xf32>, %rows: memref<8xf32>)
    -> (memref<8x32xf32>, memref<8x32xf32>) {
  %c = memref.alloc() : memref<8x32xf32>
  linalg.broadcast ins(%bias : memref<32xf32>) outs(%c : memref<8x32xf32>) dimensions = [0]
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  %c2 = memref.alloc() : memref<8x32xf32>
  linalg.broadcast ins(%rows : memref<8xf32>) outs(%c2 : memref<8x32xf32>) dimensions = [1]
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c2 : memref<8x32xf32>)
  return %c, %c2 : memref<8x32xf32>, memref<8x32xf32>
}

// -----

// A ReLU right after a bias epilogue runs in it (relu = 1), writing the
// ReLU's output directly: no ReLU kernel, and C's allocation goes. Also in
// bf16 through f32. A ReLU whose input is read again stays a kernel.
// CHECK-LABEL: func.func @bias_relu(
// CHECK-SAME:      %[[A:.*]]: memref<8x16xf32>, %[[B:.*]]: memref<16x32xf32>, %[[BIAS:.*]]: memref<32xf32>
// CHECK-NOT:     linalg.broadcast
// CHECK:         %[[D:.*]] = memref.alloc() : memref<8x32xf32>
// CHECK-NOT:     memref.alloc() : memref<8x32xf32>
// CHECK-DAG:     %[[RELU:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[UD:.*]] = memref.cast %[[D]] : memref<8x32xf32> to memref<*xf32>
// CHECK:         call @dtensor_rt_matmul_bias_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[UD]], %[[RELU]])
// CHECK-NOT:     linalg.generic
// CHECK:         call @dtensor_rt_matmul_bias_bf16({{.*}}, %[[RELU2:.*]]) :
// CHECK-NOT:     linalg.generic
// CHECK:         call @dtensor_rt_matmul_bias_f32({{.*}}, %[[NORELU:.*]]) :
// CHECK:         linalg.generic
// CHECK:         return
#id = affine_map<(i, j) -> (i, j)>
func.func @bias_relu(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %bias: memref<32xf32>,
                     %a2: memref<8x16xbf16>, %b2: memref<16x32xbf16>, %bias2: memref<32xbf16>)
    -> (memref<8x32xf32>, memref<8x32xbf16>, memref<8x32xf32>, memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.broadcast ins(%bias : memref<32xf32>) outs(%c : memref<8x32xf32>) dimensions = [0]
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  %d = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x32xf32>) outs(%d : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  }
  %c2 = memref.alloc() : memref<8x32xbf16>
  linalg.broadcast ins(%bias2 : memref<32xbf16>) outs(%c2 : memref<8x32xbf16>) dimensions = [0]
  linalg.matmul ins(%a2, %b2 : memref<8x16xbf16>, memref<16x32xbf16>) outs(%c2 : memref<8x32xbf16>)
  %d2 = memref.alloc() : memref<8x32xbf16>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c2 : memref<8x32xbf16>) outs(%d2 : memref<8x32xbf16>) {
  ^bb0(%x: bf16, %o: bf16):
    %xf = arith.extf %x : bf16 to f32
    %m = arith.maxnumf %zero, %xf : f32
    %t = arith.truncf %m : f32 to bf16
    linalg.yield %t : bf16
  }
  %c3 = memref.alloc() : memref<8x32xf32>
  linalg.broadcast ins(%bias : memref<32xf32>) outs(%c3 : memref<8x32xf32>) dimensions = [0]
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c3 : memref<8x32xf32>)
  %d3 = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c3 : memref<8x32xf32>) outs(%d3 : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  }
  return %d, %d2, %d3, %c3 : memref<8x32xf32>, memref<8x32xbf16>, memref<8x32xf32>, memref<8x32xf32>
}

// -----

// A clamp at another value than zero is not a ReLU: it stays a kernel.
// CHECK-LABEL: func.func @not_relu(
// CHECK:         %[[NORELU:.*]] = arith.constant 0 : i64
// CHECK:         call @dtensor_rt_matmul_bias_f32({{.*}}, %[[NORELU]])
// CHECK:         linalg.generic
#id = affine_map<(i, j) -> (i, j)>
func.func @not_relu(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %bias: memref<32xf32>) -> memref<8x32xf32> {
  %half = arith.constant 0.5 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.broadcast ins(%bias : memref<32xf32>) outs(%c : memref<8x32xf32>) dimensions = [0]
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  %d = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x32xf32>) outs(%d : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %half : f32
    linalg.yield %m : f32
  }
  return %d : memref<8x32xf32>
}

// -----

// A ReLU right after a plain product (C zero-filled) runs in its epilogue:
// dtensor_rt_matmul_act_<T> with activation 1, no fill, no ReLU kernel, no
// C. Onto a C that is accumulated onto, the ReLU stays a kernel.
// CHECK-LABEL: func.func @relu_plain(
// CHECK-NOT:     linalg.fill
// CHECK:         %[[D:.*]] = memref.alloc() : memref<8x32xf32>
// CHECK-NOT:     memref.alloc() : memref<8x32xf32>
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[UD:.*]] = memref.cast %[[D]] : memref<8x32xf32> to memref<*xf32>
// CHECK:         call @dtensor_rt_matmul_act_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[UD]], %[[ONE]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64) -> ()
// CHECK-NOT:     linalg.generic
// CHECK:         call @dtensor_rt_matmul_f32(
// CHECK:         linalg.generic
// CHECK:         return
#id = affine_map<(i, j) -> (i, j)>
func.func @relu_plain(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %acc: memref<8x32xf32>)
    -> (memref<8x32xf32>, memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  %d = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x32xf32>) outs(%d : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  }
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%acc : memref<8x32xf32>)
  %d2 = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%acc : memref<8x32xf32>) outs(%d2 : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  }
  return %d, %d2 : memref<8x32xf32>, memref<8x32xf32>
}

// -----

// GELU in its tanh form runs in the epilogue (activation 2), however it is
// written: torch's decomposition after a bias (f32), and in bf16 through
// f32 with powf and the constant multiplied in, after a plain product.
// CHECK-LABEL: func.func @gelu(
// CHECK-NOT:     linalg.broadcast
// CHECK-NOT:     linalg.fill
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : i64
// CHECK:         call @dtensor_rt_matmul_bias_f32({{.*}}, %[[TWO]]) :
// CHECK-NOT:     linalg.generic
// CHECK:         %[[TWO2:.*]] = arith.constant 2 : i64
// CHECK:         call @dtensor_rt_matmul_act_bf16({{.*}}, %[[TWO2]]) :
// CHECK-NOT:     linalg.generic
// CHECK:         return
#id = affine_map<(i, j) -> (i, j)>
func.func @gelu(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %bias: memref<32xf32>,
                %a2: memref<8x16xbf16>, %b2: memref<16x32xbf16>)
    -> (memref<8x32xf32>, memref<8x32xbf16>) {
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %three = arith.constant 3.0 : f32
  %k = arith.constant 0.044715 : f32
  %s = arith.constant 0.797884583 : f32
  %sk = arith.constant 0.0356774069 : f32
  %zero = arith.constant 0.0 : bf16
  %c = memref.alloc() : memref<8x32xf32>
  linalg.broadcast ins(%bias : memref<32xf32>) outs(%c : memref<8x32xf32>) dimensions = [0]
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  %d = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x32xf32>) outs(%d : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %x2 = arith.mulf %x, %x : f32
    %x3 = arith.mulf %x2, %x : f32
    %kx3 = arith.mulf %x3, %k : f32
    %inner = arith.addf %x, %kx3 : f32
    %arg = arith.mulf %inner, %s : f32
    %t = math.tanh %arg : f32
    %onet = arith.addf %t, %one : f32
    %hx = arith.mulf %x, %half : f32
    %y = arith.mulf %hx, %onet : f32
    linalg.yield %y : f32
  }
  %c2 = memref.alloc() : memref<8x32xbf16>
  linalg.fill ins(%zero : bf16) outs(%c2 : memref<8x32xbf16>)
  linalg.matmul ins(%a2, %b2 : memref<8x16xbf16>, memref<16x32xbf16>) outs(%c2 : memref<8x32xbf16>)
  %d2 = memref.alloc() : memref<8x32xbf16>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c2 : memref<8x32xbf16>) outs(%d2 : memref<8x32xbf16>) {
  ^bb0(%xb: bf16, %o: bf16):
    %x = arith.extf %xb : bf16 to f32
    %x3 = math.powf %x, %three : f32
    %a1 = arith.mulf %s, %x : f32
    %a3 = arith.mulf %sk, %x3 : f32
    %arg = arith.addf %a1, %a3 : f32
    %t = math.tanh %arg : f32
    %ht = arith.mulf %half, %t : f32
    %h1 = arith.addf %ht, %half : f32
    %y = arith.mulf %x, %h1 : f32
    %yb = arith.truncf %y : f32 to bf16
    linalg.yield %yb : bf16
  }
  return %d, %d2 : memref<8x32xf32>, memref<8x32xbf16>
}

// -----

// Not GELU's tanh form, so kernels: the erf form (cuBLASLt has no such
// epilogue; it differs by up to 5e-4), a wrong cubic coefficient, and a
// plain tanh.
// CHECK-LABEL: func.func @not_gelu(
// CHECK-NOT:     dtensor_rt_matmul_act
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT:     dtensor_rt_matmul_act
// CHECK:         return
#id = affine_map<(i, j) -> (i, j)>
func.func @not_gelu(%a: memref<8x16xf32>, %b: memref<16x32xf32>)
    -> (memref<8x32xf32>, memref<8x32xf32>, memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %rsqrt2 = arith.constant 0.707106769 : f32
  %k = arith.constant 0.045 : f32
  %s = arith.constant 0.797884583 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  %d = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x32xf32>) outs(%d : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %xs = arith.mulf %x, %rsqrt2 : f32
    %e = math.erf %xs : f32
    %e1 = arith.addf %e, %one : f32
    %hx = arith.mulf %x, %half : f32
    %y = arith.mulf %hx, %e1 : f32
    linalg.yield %y : f32
  }
  %c2 = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c2 : memref<8x32xf32>)
  %d2 = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c2 : memref<8x32xf32>) outs(%d2 : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %x2 = arith.mulf %x, %x : f32
    %x3 = arith.mulf %x2, %x : f32
    %kx3 = arith.mulf %x3, %k : f32
    %inner = arith.addf %x, %kx3 : f32
    %arg = arith.mulf %inner, %s : f32
    %t = math.tanh %arg : f32
    %onet = arith.addf %t, %one : f32
    %hx = arith.mulf %x, %half : f32
    %y = arith.mulf %hx, %onet : f32
    linalg.yield %y : f32
  }
  %c3 = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c3 : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c3 : memref<8x32xf32>)
  %d3 = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c3 : memref<8x32xf32>) outs(%d3 : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.tanh %x : f32
    linalg.yield %t : f32
  }
  return %d, %d2, %d3 : memref<8x32xf32>, memref<8x32xf32>, memref<8x32xf32>
}

// -----

// A body whose values are reused (each a square of the last, 28 deep) is
// evaluated op by op, once per sample point (not as a tree: 2^28 visits),
// and is not GELU: it stays a kernel.
// CHECK-LABEL: func.func @deep_body(
// CHECK:         call @dtensor_rt_matmul_f32(
// CHECK:         linalg.generic
#id = affine_map<(i, j) -> (i, j)>
func.func @deep_body(%a: memref<8x16xf32>, %b: memref<16x32xf32>) -> memref<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  %d = memref.alloc() : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x32xf32>) outs(%d : memref<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.tanh %x : f32
    %s0 = arith.mulf %t, %t : f32
    %s1 = arith.mulf %s0, %s0 : f32
    %s2 = arith.mulf %s1, %s1 : f32
    %s3 = arith.mulf %s2, %s2 : f32
    %s4 = arith.mulf %s3, %s3 : f32
    %s5 = arith.mulf %s4, %s4 : f32
    %s6 = arith.mulf %s5, %s5 : f32
    %s7 = arith.mulf %s6, %s6 : f32
    %s8 = arith.mulf %s7, %s7 : f32
    %s9 = arith.mulf %s8, %s8 : f32
    %s10 = arith.mulf %s9, %s9 : f32
    %s11 = arith.mulf %s10, %s10 : f32
    %s12 = arith.mulf %s11, %s11 : f32
    %s13 = arith.mulf %s12, %s12 : f32
    %s14 = arith.mulf %s13, %s13 : f32
    %s15 = arith.mulf %s14, %s14 : f32
    %s16 = arith.mulf %s15, %s15 : f32
    %s17 = arith.mulf %s16, %s16 : f32
    %s18 = arith.mulf %s17, %s17 : f32
    %s19 = arith.mulf %s18, %s18 : f32
    %s20 = arith.mulf %s19, %s19 : f32
    %s21 = arith.mulf %s20, %s20 : f32
    %s22 = arith.mulf %s21, %s21 : f32
    %s23 = arith.mulf %s22, %s22 : f32
    %s24 = arith.mulf %s23, %s23 : f32
    %s25 = arith.mulf %s24, %s24 : f32
    %s26 = arith.mulf %s25, %s25 : f32
    %s27 = arith.mulf %s26, %s26 : f32
    linalg.yield %s27 : f32
  }
  return %d : memref<8x32xf32>
}

// -----

// The weight gradient of nn.Linear on [batch, seq, hidden] activations:
// dW[i, o] = sum_{b, s} x[b, s, i] dy[b, s, o], two k dims (b, s),
// contiguous in both operands: each collapsed into one k (x then
// transposed, which the runtime takes as a column-major A).
// CHECK-LABEL: func.func @weight_grad(
// CHECK-SAME:      %[[X:.*]]: memref<2x16x32xf32>, %[[DY:.*]]: memref<2x16x64xf32>, %[[DW:.*]]: memref<32x64xf32>)
// CHECK-NOT:     linalg.fill
// CHECK-NOT:     linalg.copy
// CHECK-DAG:     %[[XC:.*]] = memref.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : memref<2x16x32xf32> into memref<32x32xf32>
// CHECK-DAG:     %[[XT:.*]] = memref.transpose %[[XC]] (d0, d1) -> (d1, d0) : memref<32x32xf32> to memref<32x32xf32, strided<[1, 32]>>
// CHECK-DAG:     %[[DYC:.*]] = memref.collapse_shape %[[DY]] {{\[}}[0, 1], [2]] : memref<2x16x64xf32> into memref<32x64xf32>
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[UX:.*]] = memref.cast %[[XT]]
// CHECK-DAG:     %[[UDY:.*]] = memref.cast %[[DYC]]
// CHECK-DAG:     %[[UDW:.*]] = memref.cast %[[DW]]
// CHECK:         call @dtensor_rt_matmul_f32(%{{.*}}, %[[UX]], %[[UDY]], %[[UDW]], %[[ZERO]])
// CHECK-NOT:     linalg.generic
func.func @weight_grad(%x: memref<2x16x32xf32>, %dy: memref<2x16x64xf32>, %dw: memref<32x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%dw : memref<32x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, o, b, s) -> (b, s, i)>, affine_map<(i, o, b, s) -> (b, s, o)>, affine_map<(i, o, b, s) -> (i, o)>],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %dy : memref<2x16x32xf32>, memref<2x16x64xf32>) outs(%dw : memref<32x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The same with a dynamic batch (an uneven shard): identity layouts
// collapse whatever the sizes.
// CHECK-LABEL: func.func @weight_grad_dynamic(
// CHECK-DAG:     memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : memref<?x16x32xf32> into memref<?x32xf32>
// CHECK-DAG:     memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : memref<?x16x64xf32> into memref<?x64xf32>
// CHECK:         call @dtensor_rt_matmul_f32(
func.func @weight_grad_dynamic(%x: memref<?x16x32xf32>, %dy: memref<?x16x64xf32>, %dw: memref<32x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, o, b, s) -> (b, s, i)>, affine_map<(i, o, b, s) -> (b, s, o)>, affine_map<(i, o, b, s) -> (i, o)>],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %dy : memref<?x16x32xf32>, memref<?x16x64xf32>) outs(%dw : memref<32x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Two k dims that are not contiguous in A (a batch-reduce matmul: k is
// (b, k), A is [b, m, k]): A is copied into a dense [m, b, k] buffer (a
// kernel), then both collapse; no fill, so the call accumulates.
// CHECK-LABEL: func.func @k_not_contiguous(
// CHECK-SAME:      %[[A:.*]]: memref<2x4x3xf32>, %[[B:.*]]: memref<2x3x5xf32>, %[[C:.*]]: memref<4x5xf32>)
// CHECK:         %[[AT:.*]] = memref.transpose %[[A]] (d0, d1, d2) -> (d1, d0, d2) : memref<2x4x3xf32> to memref<4x2x3xf32, strided<[3, 12, 1]>>
// CHECK:         %[[DENSE:.*]] = memref.alloc() : memref<4x2x3xf32>
// CHECK:         linalg.copy ins(%[[AT]] : {{.*}}) outs(%[[DENSE]] : memref<4x2x3xf32>)
// CHECK-DAG:     %[[AC:.*]] = memref.collapse_shape %[[DENSE]] {{\[}}[0], [1, 2]] : memref<4x2x3xf32> into memref<4x6xf32>
// CHECK-DAG:     %[[BC:.*]] = memref.collapse_shape %[[B]] {{\[}}[0, 1], [2]] : memref<2x3x5xf32> into memref<6x5xf32>
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[UA:.*]] = memref.cast %[[AC]]
// CHECK-DAG:     %[[UB:.*]] = memref.cast %[[BC]]
// CHECK:         call @dtensor_rt_matmul_f32(%{{.*}}, %[[UA]], %[[UB]], %{{.*}}, %[[ONE]])
// CHECK-NOT:     linalg.batch_reduce_matmul
func.func @k_not_contiguous(%a: memref<2x4x3xf32>, %b: memref<2x3x5xf32>, %c: memref<4x5xf32>) {
  linalg.batch_reduce_matmul ins(%a, %b : memref<2x4x3xf32>, memref<2x3x5xf32>) outs(%c : memref<4x5xf32>)
  return
}

// -----

// Two k dims in different orders in A (k0, k1) and B (k1, k0): A's order
// is taken, B is copied into a dense [k0, k1, n] buffer.
// CHECK-LABEL: func.func @k_orders_differ(
// CHECK-SAME:      %[[A:.*]]: memref<8x3x4xf32>, %[[B:.*]]: memref<4x3x5xf32>
// CHECK:         %[[BT:.*]] = memref.transpose %[[B]] (d0, d1, d2) -> (d1, d0, d2)
// CHECK:         %[[DENSE:.*]] = memref.alloc() : memref<3x4x5xf32>
// CHECK:         linalg.copy ins(%[[BT]] : {{.*}}) outs(%[[DENSE]] : memref<3x4x5xf32>)
// CHECK-DAG:     memref.collapse_shape %[[A]] {{\[}}[0], [1, 2]] : memref<8x3x4xf32> into memref<8x12xf32>
// CHECK-DAG:     memref.collapse_shape %[[DENSE]] {{\[}}[0, 1], [2]] : memref<3x4x5xf32> into memref<12x5xf32>
// CHECK:         call @dtensor_rt_matmul_f32(
func.func @k_orders_differ(%a: memref<8x3x4xf32>, %b: memref<4x3x5xf32>, %c: memref<8x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k0, k1) -> (m, k0, k1)>, affine_map<(m, n, k0, k1) -> (k1, k0, n)>, affine_map<(m, n, k0, k1) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<8x3x4xf32>, memref<4x3x5xf32>) outs(%c : memref<8x5xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The batch dim in the middle of A and B: strided-batch views by
// transposes, no copy and no loop (the runtime takes any batch stride).
// CHECK-LABEL: func.func @batch_in_middle(
// CHECK-SAME:      %[[A:.*]]: memref<8x3x6xf32>, %[[B:.*]]: memref<6x3x5xf32>, %[[C:.*]]: memref<3x8x5xf32>)
// CHECK-NOT:     scf.for
// CHECK-NOT:     linalg.copy
// CHECK-DAG:     %[[AT:.*]] = memref.transpose %[[A]] (d0, d1, d2) -> (d1, d0, d2) : memref<8x3x6xf32> to memref<3x8x6xf32, strided<[6, 18, 1]>>
// CHECK-DAG:     %[[BT:.*]] = memref.transpose %[[B]] (d0, d1, d2) -> (d1, d0, d2) : memref<6x3x5xf32> to memref<3x6x5xf32, strided<[5, 15, 1]>>
// CHECK-DAG:     %[[UA:.*]] = memref.cast %[[AT]]
// CHECK-DAG:     %[[UB:.*]] = memref.cast %[[BT]]
// CHECK-DAG:     %[[UC:.*]] = memref.cast %[[C]] : memref<3x8x5xf32> to memref<*xf32>
// CHECK:         call @dtensor_rt_matmul_f32(%{{.*}}, %[[UA]], %[[UB]], %[[UC]], %{{.*}})
func.func @batch_in_middle(%a: memref<8x3x6xf32>, %b: memref<6x3x5xf32>, %c: memref<3x8x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (m, b, k)>, affine_map<(b, m, n, k) -> (k, b, n)>, affine_map<(b, m, n, k) -> (b, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x3x6xf32>, memref<6x3x5xf32>) outs(%c : memref<3x8x5xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The batch dim in the middle of C too: C is not dense in (batch, m, n)
// order, so the product goes to a dense temporary, copied into C's
// permuted view after the call; with a dynamic m the temporary's size is
// taken from C.
// CHECK-LABEL: func.func @batch_in_middle_output(
// CHECK-SAME:      %{{.*}}: memref<?x3x6xf32>, %{{.*}}: memref<6x3x5xf32>, %[[C:.*]]: memref<?x3x5xf32>)
// CHECK:         %[[CT:.*]] = memref.transpose %[[C]] (d0, d1, d2) -> (d1, d0, d2)
// CHECK:         %[[DIM:.*]] = memref.dim %[[CT]], %{{.*}}
// CHECK:         %[[TMP:.*]] = memref.alloc(%[[DIM]]) : memref<3x?x5xf32>
// CHECK-NOT:     linalg.copy ins(%[[CT]]
// CHECK:         %[[UT:.*]] = memref.cast %[[TMP]]
// CHECK:         call @dtensor_rt_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[UT]], %{{.*}})
// CHECK:         linalg.copy ins(%[[TMP]] : memref<3x?x5xf32>) outs(%[[CT]] : {{.*}})
func.func @batch_in_middle_output(%a: memref<?x3x6xf32>, %b: memref<6x3x5xf32>, %c: memref<?x3x5xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<?x3x5xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (m, b, k)>, affine_map<(b, m, n, k) -> (k, b, n)>, affine_map<(b, m, n, k) -> (m, b, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x3x6xf32>, memref<6x3x5xf32>) outs(%c : memref<?x3x5xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Two n dims: collapsed in B and C like the m dims of a 3-D Linear.
// CHECK-LABEL: func.func @two_n_dims(
// CHECK-DAG:     memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : memref<6x2x5xf32> into memref<6x10xf32>
// CHECK-DAG:     memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : memref<8x2x5xf32> into memref<8x10xf32>
// CHECK:         call @dtensor_rt_matmul_f32(
func.func @two_n_dims(%a: memref<8x6xf32>, %b: memref<6x2x5xf32>, %c: memref<8x2x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n0, n1, k) -> (m, k)>, affine_map<(m, n0, n1, k) -> (k, n0, n1)>, affine_map<(m, n0, n1, k) -> (m, n0, n1)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x6xf32>, memref<6x2x5xf32>) outs(%c : memref<8x2x5xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// m dims whose strides do not let them collapse (rows of a wider buffer):
// A is copied into a dense buffer first.
// CHECK-LABEL: func.func @strided_m(
// CHECK-SAME:      %[[X:.*]]: memref<2x16x32xf32, strided<[2048, 64, 1]>>
// CHECK:         %[[DENSE:.*]] = memref.alloc() : memref<2x16x32xf32>
// CHECK:         linalg.copy ins(%[[X]] : {{.*}}) outs(%[[DENSE]] : memref<2x16x32xf32>)
// CHECK:         memref.collapse_shape %[[DENSE]] {{\[}}[0, 1], [2]] : memref<2x16x32xf32> into memref<32x32xf32>
// CHECK:         call @dtensor_rt_matmul_f32(
func.func @strided_m(%x: memref<2x16x32xf32, strided<[2048, 64, 1]>>, %w: memref<32x64xf32>, %y: memref<2x16x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (k, n)>, affine_map<(b, s, n, k) -> (b, s, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<2x16x32xf32, strided<[2048, 64, 1]>>, memref<32x64xf32>) outs(%y : memref<2x16x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// m dims in another order in A than in C: A is copied in C's order.
// CHECK-LABEL: func.func @m_order(
// CHECK-SAME:      %[[X:.*]]: memref<16x2x32xf32>
// CHECK:         %[[XT:.*]] = memref.transpose %[[X]] (d0, d1, d2) -> (d1, d0, d2)
// CHECK:         %[[DENSE:.*]] = memref.alloc() : memref<2x16x32xf32>
// CHECK:         linalg.copy ins(%[[XT]] : {{.*}}) outs(%[[DENSE]] : memref<2x16x32xf32>)
// CHECK:         memref.collapse_shape %[[DENSE]] {{\[}}[0, 1], [2]] : memref<2x16x32xf32> into memref<32x32xf32>
// CHECK:         call @dtensor_rt_matmul_f32(
func.func @m_order(%x: memref<16x2x32xf32>, %w: memref<32x64xf32>, %y: memref<2x16x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, s, n, k) -> (s, b, k)>, affine_map<(b, s, n, k) -> (k, n)>, affine_map<(b, s, n, k) -> (b, s, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<16x2x32xf32>, memref<32x64xf32>) outs(%y : memref<2x16x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A bias over the last of two n dims is not a bias of the collapsed n (the
// runtime's bias is of length N): the broadcast stays, the call
// accumulates onto it.
// CHECK-LABEL: func.func @bias_two_n_dims(
// CHECK:         linalg.broadcast
// CHECK:         %[[ONE:.*]] = arith.constant 1 : i64
// CHECK:         call @dtensor_rt_matmul_f32({{.*}}, %[[ONE]])
// CHECK-NOT:     dtensor_rt_matmul_bias
func.func @bias_two_n_dims(%a: memref<8x6xf32>, %b: memref<6x2x5xf32>, %bias: memref<5xf32>) -> memref<8x2x5xf32> {
  %c = memref.alloc() : memref<8x2x5xf32>
  linalg.broadcast ins(%bias : memref<5xf32>) outs(%c : memref<8x2x5xf32>) dimensions = [0, 1]
  linalg.generic {indexing_maps = [affine_map<(m, n0, n1, k) -> (m, k)>, affine_map<(m, n0, n1, k) -> (k, n0, n1)>, affine_map<(m, n0, n1, k) -> (m, n0, n1)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x6xf32>, memref<6x2x5xf32>) outs(%c : memref<8x2x5xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return %c : memref<8x2x5xf32>
}

// -----

// Not cuBLASLt matmuls: each left in place for the kernel path
// (dtensor-cuda-map-to-gpu) with a remark saying why, never an error. A
// row dot (softmax backward's sum(dy * y): no m, no n).
// CHECK-LABEL: func.func @row_dot(
// CHECK:         linalg.generic
// CHECK-NOT:     dtensor_rt_matmul
func.func @row_dot(%dy: memref<2x4x8x16xf32>, %y: memref<2x4x8x16xf32>, %s: memref<2x4x8xf32>) {
  // expected-remark @below {{not a cuBLASLt matmul: the contraction has 3 batch, 0 m, 0 n and 1 k dimensions (a row dot; cuBLASLt needs one or more m, n and k dimensions); lowered as a generated reduction kernel}}
  linalg.generic {indexing_maps = [affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i, j)>, affine_map<(b, h, i, j) -> (b, h, i)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%dy, %y : memref<2x4x8x16xf32>, memref<2x4x8x16xf32>) outs(%s : memref<2x4x8xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// CHECK-LABEL: func.func @matvec(
// CHECK:         linalg.matvec
// CHECK-NOT:     dtensor_rt_matmul
func.func @matvec(%a: memref<4x4xf32>, %x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-remark @below {{not a cuBLASLt matmul: the contraction has 0 batch, 1 m, 0 n and 1 k dimensions (a matrix-vector product; cuBLASLt needs one or more m, n and k dimensions); lowered as a generated reduction kernel}}
  linalg.matvec ins(%a, %x : memref<4x4xf32>, memref<4xf32>) outs(%y : memref<4xf32>)
  return
}

// -----

// CHECK-LABEL: func.func @integer(
// CHECK:         linalg.matmul
// CHECK-NOT:     dtensor_rt_matmul
func.func @integer(%a: memref<4x4xi32>, %b: memref<4x4xi32>, %c: memref<4x4xi32>) {
  // expected-remark @below {{not a cuBLASLt matmul: element types 'i32', 'i32' -> 'i32' (cuBLASLt: bf16, f16 or f32, the same for A, B and C); lowered as a generated reduction kernel}}
  linalg.matmul ins(%a, %b : memref<4x4xi32>, memref<4x4xi32>) outs(%c : memref<4x4xi32>)
  return
}

// -----

// CHECK-LABEL: func.func @mixed(
// CHECK:         linalg.matmul
// CHECK-NOT:     dtensor_rt_matmul
func.func @mixed(%a: memref<4x4xbf16>, %b: memref<4x4xbf16>, %c: memref<4x4xf32>) {
  // expected-remark @below {{not a cuBLASLt matmul: element types 'bf16', 'bf16' -> 'f32'}}
  linalg.matmul ins(%a, %b : memref<4x4xbf16>, memref<4x4xbf16>) outs(%c : memref<4x4xf32>)
  return
}

// -----

// An output broadcast along a loop dim that no input is indexed by.
// CHECK-LABEL: func.func @broadcast_input(
// CHECK:         linalg.generic
// CHECK-NOT:     dtensor_rt_matmul
func.func @broadcast_input(%a: memref<4x8xf32>, %b: memref<8xf32>, %c: memref<4x5xf32>) {
  // expected-remark @below {{not a cuBLASLt matmul: 1 of its loop dimensions index the output only (a broadcast); lowered as a generated reduction kernel}}
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8xf32>) outs(%c : memref<4x5xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  }
  return
}
