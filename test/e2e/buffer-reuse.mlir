// REQUIRES: cpu-target
// The buffer rules of collectives (dtensor-reuse-collective-buffers), end
// to end on 2 and 4 CPU ranks against the unsharded program, synchronous
// and scheduled for overlap (async starts, their input copies elided):
//  - @reduce_twice: one Partial matmul product is all_reduced (R) and also
//    returned as it is (P(sum)). The all_reduce's input is still used after
//    it, so it must not reduce in place: the returned partial sums would be
//    the total on every rank (the check would be off by the group size).
//  - @mlp: the product dies at its all_reduce, which then runs in place.
// RUN: for n in 2 4; do sed "s/NRANKS/$n/" %s > %t.$n.mlir; for o in --seed=7 --overlap=default; do \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --entry reduce_twice $o | FileCheck %s || exit 1; \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --entry mlp $o | FileCheck %s || exit 1; \
// RUN: done; done
// CHECK: PASS
//
// The buffers after dtensor-reuse-collective-buffers: a fresh output for
// @reduce_twice, one buffer passed twice (in place) for @mlp.
// RUN: dtensor-opt %t.4.mlir --dtensor-spmd --dtensor-cpu-lowering --mlir-print-ir-after=dtensor-reuse-collective-buffers -o /dev/null 2>&1 | FileCheck %s --check-prefix=IR
// IR-LABEL: func.func @reduce_twice
// IR:         %[[Y:.*]] = memref.alloc() {{.*}} : memref<8x8xf32>
// IR:         linalg.matmul {{.*}} outs(%[[Y]] :
// IR:         %[[R:.*]] = memref.alloc() : memref<8x8xf32>
// IR:         %[[YIN:.*]] = memref.cast %[[Y]]
// IR:         %[[ROUT:.*]] = memref.cast %[[R]]
// IR:         call @dtensor_rt_all_reduce_f32(%{{.*}}, %[[YIN]], %[[ROUT]],
// IR:         return %[[R]], %[[Y]]
// IR-LABEL: func.func @mlp
// IR:         %[[P:.*]] = memref.alloc() {{.*}} : memref<8x8xf32>
// IR-NOT:     memref.alloc
// IR:         %[[PIN:.*]] = memref.cast %[[P]]
// IR:         %[[POUT:.*]] = memref.cast %[[P]]
// IR:         call @dtensor_rt_all_reduce_f32(%{{.*}}, %[[PIN]], %[[POUT]],

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
  %p = dtensor.annotate %y layout <@tp, [P(sum)]> : tensor<8x8xf32>
  %a = dtensor.annotate %p layout <@tp, [R]> : tensor<8x8xf32>
  return %a, %p : tensor<8x8xf32>, tensor<8x8xf32>
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
