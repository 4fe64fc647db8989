// REQUIRES: cpu-target
// The buffer rules of collectives (dtensor-reuse-collective-buffers), end
// to end on 2 and 4 CPU ranks against the unsharded program, synchronous
// and scheduled for overlap (async starts, their input copies elided):
//  - @reduce_twice: one Partial matmul product is all_reduced (R) and then
//    reduce_scattered (S(0)). The all_reduce's input is still read after it,
//    so it must not reduce in place: the reduce_scatter would read a sum of
//    sums (the numerics below would be off by the group size).
//  - @mlp: the product dies at its all_reduce, which then runs in place.
// RUN: for n in 2 4; do sed "s/NRANKS/$n/" %s > %t.$n.mlir; for o in none default; do \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --entry reduce_twice --overlap=$o | FileCheck %s || exit 1; \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --entry mlp --overlap=$o | FileCheck %s || exit 1; \
// RUN: done; done
// CHECK: PASS
//
// The lowered programs (LLVM stage; the lowering's fresh buffers, copies
// and in-place calls are visible in the per-rank program at the buffer
// level, test/Transforms/ReuseCollectiveBuffers.mlir): the in-place
// all_reduce passes one buffer twice.
// RUN: dtensor-opt %t.4.mlir --pass-pipeline='builtin.module(dtensor-spmd,dtensor-lower-to-runtime,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize,func.func(dtensor-reuse-collective-buffers))' | FileCheck %s --check-prefix=IR
// IR-LABEL: func.func @reduce_twice
// IR: %[[Y:.*]] = memref.alloc
// IR: %[[YIN:.*]] = memref.cast %[[Y]]
// IR: %[[OUT:.*]] = memref.alloc
// IR: %[[AROUT:.*]] = memref.cast %[[OUT]]
// IR: call @dtensor_rt_all_reduce_f32(%{{.*}}, %[[YIN]], %[[AROUT]],
// IR: call @dtensor_rt_reduce_scatter_f32
// IR-LABEL: func.func @mlp
// IR: %[[P:.*]] = memref.alloc
// IR: %[[PIN:.*]] = memref.cast %[[P]]
// IR: %[[POUT:.*]] = memref.cast %[[P]]
// IR: call @dtensor_rt_all_reduce_f32(%{{.*}}, %[[PIN]], %[[POUT]],

dtensor.mesh @tp shape = [NRANKS]

func.func @reduce_twice(%x: tensor<8x16xf32>, %w: tensor<16x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<8x16xf32>
  %ws = dtensor.annotate %w layout <@tp, [S(0)]> : tensor<16x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = linalg.matmul ins(%xs, %ws : tensor<8x16xf32>, tensor<16x8xf32>)
                     outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = dtensor.annotate %y layout <@tp, [R]> : tensor<8x8xf32>
  %b = dtensor.annotate %y layout <@tp, [S(0)]> : tensor<8x8xf32>
  return %a, %b : tensor<8x8xf32>, tensor<8x8xf32>
}

func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<8x16xf32>
  %ws = dtensor.annotate %w layout <@tp, [S(0)]> : tensor<16x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = linalg.matmul ins(%xs, %ws : tensor<8x16xf32>, tensor<16x8xf32>)
                     outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = dtensor.annotate %y layout <@tp, [R]> : tensor<8x8xf32>
  %t = math.tanh %a : tensor<8x8xf32>
  return %t : tensor<8x8xf32>
}
