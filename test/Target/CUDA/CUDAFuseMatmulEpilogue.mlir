// RUN: dtensor-opt %s -split-input-file --verify-each --dtensor-cuda-fuse-matmul-epilogue | FileCheck %s

// A bf16 residual add through f32 (the transformer layer's h = x + attn)
// becomes the matmul accumulating onto a copy of the residual: the argument
// is never written, and no add is left.
// CHECK-LABEL: func.func @residual_bf16(
// CHECK-SAME:      %[[X:.*]]: tensor<16x32xbf16>, %[[A:.*]]: tensor<16x8xbf16>, %[[B:.*]]: tensor<8x32xbf16>)
// CHECK:         %[[INIT:.*]] = bufferization.alloc_tensor() copy(%[[X]]) : tensor<16x32xbf16>
// CHECK:         %[[MM:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<16x8xbf16>, tensor<8x32xbf16>) outs(%[[INIT]] : tensor<16x32xbf16>)
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[MM]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @residual_bf16(%x: tensor<16x32xbf16>, %a: tensor<16x8xbf16>, %b: tensor<8x32xbf16>) -> tensor<16x32xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<16x32xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %mm = linalg.matmul ins(%a, %b : tensor<16x8xbf16>, tensor<8x32xbf16>) outs(%f : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %e2 = tensor.empty() : tensor<16x32xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mm : tensor<16x32xbf16>, tensor<16x32xbf16>) outs(%e2 : tensor<16x32xbf16>) {
  ^bb0(%p: bf16, %q: bf16, %o: bf16):
    %pf = arith.extf %p : bf16 to f32
    %qf = arith.extf %q : bf16 to f32
    %s = arith.addf %pf, %qf : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<16x32xbf16>
  return %r : tensor<16x32xbf16>
}

// -----

// f32, the matmul's result first and the residual second; a batch matmul
// is a contraction too.
// CHECK-LABEL: func.func @residual_f32_batch(
// CHECK-SAME:      %[[X:.*]]: tensor<2x16x32xf32>, %[[A:.*]]: tensor<2x16x8xf32>, %[[B:.*]]: tensor<2x8x32xf32>)
// CHECK:         %[[INIT:.*]] = bufferization.alloc_tensor() copy(%[[X]])
// CHECK:         %[[MM:.*]] = linalg.batch_matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[INIT]] : tensor<2x16x32xf32>)
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[MM]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @residual_f32_batch(%x: tensor<2x16x32xf32>, %a: tensor<2x16x8xf32>, %b: tensor<2x8x32xf32>) -> tensor<2x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %mm = linalg.batch_matmul ins(%a, %b : tensor<2x16x8xf32>, tensor<2x8x32xf32>) outs(%f : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%mm, %x : tensor<2x16x32xf32>, tensor<2x16x32xf32>) outs(%e : tensor<2x16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %q, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

// nn.Linear's bias (one value per output column, read along the last loop)
// becomes the matmul accumulating onto the bias broadcast over the rows;
// bf16 through f32 and the bias second, or f32 and the bias first.
// CHECK-LABEL: func.func @bias(
// CHECK-SAME:      %[[A:.*]]: tensor<16x8xbf16>, %[[B:.*]]: tensor<8x32xbf16>, %[[BIAS:.*]]: tensor<32xbf16>
// CHECK:         %[[BC:.*]] = linalg.broadcast ins(%[[BIAS]] : tensor<32xbf16>) outs(%{{.*}} : tensor<16x32xbf16>) dimensions = [0]
// CHECK:         %[[MM:.*]] = linalg.matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[BC]] : tensor<16x32xbf16>)
// CHECK:         linalg.broadcast ins(%{{.*}} : tensor<32xf32>) outs(%{{.*}} : tensor<2x16x32xf32>) dimensions = [0, 1]
// CHECK:         linalg.batch_matmul
// CHECK-NOT:     linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#last = affine_map<(d0, d1) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last3 = affine_map<(d0, d1, d2) -> (d2)>
func.func @bias(%a: tensor<16x8xbf16>, %b: tensor<8x32xbf16>, %bias: tensor<32xbf16>,
                %a3: tensor<2x16x8xf32>, %b3: tensor<2x8x32xf32>, %bias3: tensor<32xf32>)
    -> (tensor<16x32xbf16>, tensor<2x16x32xf32>) {
  %zero = arith.constant 0.0 : bf16
  %zf = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %mm = linalg.matmul ins(%a, %b : tensor<16x8xbf16>, tensor<8x32xbf16>) outs(%f : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %r = linalg.generic {indexing_maps = [#id, #last, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<16x32xbf16>, tensor<32xbf16>) outs(%e : tensor<16x32xbf16>) {
  ^bb0(%p: bf16, %q: bf16, %o: bf16):
    %pf = arith.extf %p : bf16 to f32
    %qf = arith.extf %q : bf16 to f32
    %s = arith.addf %pf, %qf : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<16x32xbf16>
  %e3 = tensor.empty() : tensor<2x16x32xf32>
  %f3 = linalg.fill ins(%zf : f32) outs(%e3 : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %mm3 = linalg.batch_matmul ins(%a3, %b3 : tensor<2x16x8xf32>, tensor<2x8x32xf32>) outs(%f3 : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %r3 = linalg.generic {indexing_maps = [#last3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%bias3, %mm3 : tensor<32xf32>, tensor<2x16x32xf32>) outs(%e3 : tensor<2x16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<2x16x32xf32>
  return %r, %r3 : tensor<16x32xbf16>, tensor<2x16x32xf32>
}

// -----

// Left alone: the matmul's result is used again (the product itself is
// needed), the init is not zero (the matmul already accumulates), the
// vector is broadcast along the columns (one value per row: no cuBLASLt
// epilogue adds that), the op subtracts, and the sum of a matmul with
// itself.
// CHECK-LABEL: func.func @not_fused(
// CHECK-NOT:     bufferization.alloc_tensor
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT:     bufferization.alloc_tensor
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d0)>
func.func @not_fused(%x: tensor<16x32xf32>, %a: tensor<16x8xf32>, %b: tensor<8x32xf32>, %bias: tensor<16xf32>)
    -> (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %f1 = linalg.fill ins(%one : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  // used twice
  %mm = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x32xf32>) outs(%f : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mm : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  // init of ones
  %mm1 = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x32xf32>) outs(%f1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mm1 : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  // one value per row
  %mm2 = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x32xf32>) outs(%f : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r2 = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias, %mm2 : tensor<16xf32>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  // subtraction
  %mm3 = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x32xf32>) outs(%f : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mm3 : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.subf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  // a matmul plus itself
  %mm4 = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x32xf32>) outs(%f : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r4 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm4, %mm4 : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  return %mm, %r0, %r1, %r2, %r3, %r4 : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// Left alone: the add is in a loop and the matmul outside it (fusing would
// run the matmul once per iteration), and an add whose body is not just
// the sum (a scaled residual).
// CHECK-LABEL: func.func @not_fused_loop_or_body(
// CHECK-NOT:     bufferization.alloc_tensor
// CHECK:         scf.for
// CHECK:           linalg.generic
// CHECK:         linalg.generic
// CHECK-NOT:     bufferization.alloc_tensor
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @not_fused_loop_or_body(%x: tensor<16x32xf32>, %a: tensor<16x8xf32>, %b: tensor<8x32xf32>, %n: index)
    -> (tensor<16x32xf32>, tensor<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.empty() : tensor<16x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x32xf32>) outs(%f : tensor<16x32xf32>) -> tensor<16x32xf32>
  %loop = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> tensor<16x32xf32> {
    %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%acc, %mm : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %s = arith.addf %p, %q : f32
      linalg.yield %s : f32
    } -> tensor<16x32xf32>
    scf.yield %r : tensor<16x32xf32>
  }
  %mm2 = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x32xf32>) outs(%f : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mm2 : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    %t = arith.mulf %s, %two : f32
    linalg.yield %t : f32
  } -> tensor<16x32xf32>
  return %loop, %r2 : tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// Left alone: on a square output, a vector of the right size read along the
// rows (one value per row) is not a bias of the columns.
// CHECK-LABEL: func.func @per_row_square(
// CHECK-NOT:     linalg.broadcast
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
func.func @per_row_square(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %v: tensor<16xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #rows, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %v : tensor<16x16xf32>, tensor<16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// Dynamic rows: the residual is fused (its copy has its sizes), the bias
// is not (its broadcast would need a tensor.empty of the dynamic sizes).
// CHECK-LABEL: func.func @dynamic_rows(
// CHECK:         bufferization.alloc_tensor() copy(
// CHECK:         linalg.matmul
// CHECK-NOT:     linalg.broadcast
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#last = affine_map<(d0, d1) -> (d1)>
func.func @dynamic_rows(%x: tensor<?x32xf32>, %a: tensor<?x8xf32>, %b: tensor<8x32xf32>, %bias: tensor<32xf32>)
    -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%m) : tensor<?x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<?x8xf32>, tensor<8x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mm : tensor<?x32xf32>, tensor<?x32xf32>) outs(%e : tensor<?x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  %mm2 = linalg.matmul ins(%a, %b : tensor<?x8xf32>, tensor<8x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #last, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm2, %bias : tensor<?x32xf32>, tensor<32xf32>) outs(%e : tensor<?x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  return %r, %r2 : tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// The backward's sum of two matmul products (dX = dA.W1^T + dB.W3^T of a
// SwiGLU, autodiff's linalg.add): the second matmul accumulates onto the
// first's product itself, which nothing else reads (no copy: bufferization
// writes it in place, and the matmul rewrite calls cuBLASLt with
// accumulate = 1, beta = 1). A sum whose other operand is also read
// elsewhere keeps the copy.
// CHECK-LABEL: func.func @sum_of_products(
// CHECK-SAME:      %[[DA:.*]]: tensor<16x8xbf16>, %[[W1:.*]]: tensor<32x8xbf16>, %[[DB:.*]]: tensor<16x8xbf16>, %[[W3:.*]]: tensor<32x8xbf16>
// CHECK:         %[[Q:.*]] = linalg.matmul {{.*}} ins(%[[DB]], %[[W3]] : {{.*}}) outs(%{{.*}} : tensor<16x32xbf16>)
// CHECK-NOT:     bufferization.alloc_tensor
// CHECK:         %[[S:.*]] = linalg.matmul {{.*}} ins(%[[DA]], %[[W1]] : {{.*}}) outs(%[[Q]] : tensor<16x32xbf16>)
// CHECK:         %[[P2:.*]] = linalg.matmul {{.*}} ins(%[[DA]], %[[W1]] : {{.*}}) outs(%{{.*}} : tensor<16x32xbf16>)
// CHECK:         %[[C:.*]] = bufferization.alloc_tensor() copy(%[[P2]])
// CHECK:         %[[T:.*]] = linalg.matmul {{.*}} ins(%[[DB]], %[[W3]] : {{.*}}) outs(%[[C]] : tensor<16x32xbf16>)
// CHECK-NOT:     linalg.add
// CHECK:         return %[[S]], %[[T]], %[[P2]]
#a = affine_map<(m, n, k) -> (m, k)>
#bt = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @sum_of_products(%da: tensor<16x8xbf16>, %w1: tensor<32x8xbf16>, %db: tensor<16x8xbf16>, %w3: tensor<32x8xbf16>)
    -> (tensor<16x32xbf16>, tensor<16x32xbf16>, tensor<16x32xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<16x32xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %p = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%da, %w1 : tensor<16x8xbf16>, tensor<32x8xbf16>) outs(%f : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %q = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%db, %w3 : tensor<16x8xbf16>, tensor<32x8xbf16>) outs(%f : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %s = linalg.add ins(%p, %q : tensor<16x32xbf16>, tensor<16x32xbf16>) outs(%e : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  // The same sum, its first product also returned.
  %p2 = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%da, %w1 : tensor<16x8xbf16>, tensor<32x8xbf16>) outs(%f : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %q2 = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%db, %w3 : tensor<16x8xbf16>, tensor<32x8xbf16>) outs(%f : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %t = linalg.add ins(%p2, %q2 : tensor<16x32xbf16>, tensor<16x32xbf16>) outs(%e : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  return %s, %t, %p2 : tensor<16x32xbf16>, tensor<16x32xbf16>, tensor<16x32xbf16>
}
