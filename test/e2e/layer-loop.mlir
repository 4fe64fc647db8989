// REQUIRES: cpu-target
// A layer loop with prefetch on 2 and 4 CPU ranks against this unsharded
// program: the per-rank program (Inputs/layer-loop-per-rank.mlir, FSDP +
// TP, compiled with dtensor-compile --per-rank) starts the all_gather of
// layer i + 1's weight in iteration i and waits for it in iteration i + 1
// (a future carried by scf.for), and all_reduces each layer's rowwise
// product in the loop body. Unscheduled and through the overlap passes
// (which leave loop bodies alone and keep the carried futures).
// RUN: rm -rf %t && mkdir -p %t
// RUN: dtensor-compile %s --unsharded --target cpu -o %t/ref.so
// RUN: for n in 2 4; do \
// RUN:   sed "s/NRANKS/$n/g; s/ROWS/$((8 / n))/g" %S/Inputs/layer-loop-per-rank.mlir > %t/per-rank-$n.mlir; \
// RUN:   for o in none default; do \
// RUN:     dtensor-compile %t/per-rank-$n.mlir --per-rank --target cpu --overlap=$o -o %t/loop-$n-$o.so || exit 1; \
// RUN:     timeout 120 dtensor-launch %t/loop-$n-$o.so --reference %t/ref.so --nproc $n | FileCheck %s || exit 1; \
// RUN:   done; \
// RUN: done
// CHECK: output #0 tensor<4x8xf32> on @m [R]: max relative error {{.*}} ok
// CHECK: PASS
//
// The lowered loop carries the handle and the gathered buffer; the gathers
// read the weights in place (no copy: nothing writes an argument) and the
// all_reduce reduces its dying product in place.
// RUN: dtensor-opt %t/per-rank-2.mlir --dtensor-cpu-lowering --mlir-print-ir-after=dtensor-reuse-collective-buffers -o /dev/null 2>&1 | FileCheck %s --check-prefix=IR
// IR-LABEL: func.func @layers(
// IR-NOT:     memref.copy
// IR:         %[[H0:.*]] = call @dtensor_rt_start_all_gather_f32
// IR:         scf.for {{.*}} iter_args({{.*}}, %[[H:.*]] = %[[H0]], %[[B:.*]] = %{{.*}}) -> (memref<4x8xf32>, i64, memref<8x8xf32>)
// IR:           call @dtensor_rt_wait(%{{.*}}, %[[H]])
// IR:           %[[HN:.*]] = func.call @dtensor_rt_start_all_gather_f32
// IR:           linalg.matmul ins(%{{.*}}, %[[B]] :
// IR:           %[[P:.*]] = memref.alloc() {{.*}} : memref<4x8xf32>
// IR:           linalg.matmul {{.*}} outs(%[[P]] :
// IR-DAG:       memref.cast %[[P]]
// IR-DAG:       memref.cast %[[P]]
// IR:           func.call @dtensor_rt_all_reduce_f32(%{{[^,]*}}, %cast{{[_0-9]*}}, %cast{{[_0-9]*}},
// IR:           scf.yield %[[P]], %[[HN]],
// IR-NOT:     memref.copy
// IR:         call @dtensor_rt_wait
//
// --per-rank compiles the sharded program; the reference comes from the
// global view.
// RUN: not dtensor-compile %s --per-rank --unsharded -o %t/x.so 2>&1 | FileCheck %s --check-prefix=ERR
// ERR: dtensor-compile: error: --per-rank and --unsharded exclude each other

func.func @layers(%x: tensor<4x8xf32>, %w: tensor<3x8x8xf32>, %v: tensor<3x8x8xf32>)
    -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %x) -> tensor<4x8xf32> {
    %wi = tensor.extract_slice %w[%i, 0, 0] [1, 8, 8] [1, 1, 1]
        : tensor<3x8x8xf32> to tensor<8x8xf32>
    %vi = tensor.extract_slice %v[%i, 0, 0] [1, 8, 8] [1, 1, 1]
        : tensor<3x8x8xf32> to tensor<8x8xf32>
    %e = tensor.empty() : tensor<4x8xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %h = linalg.matmul ins(%a, %wi : tensor<4x8xf32>, tensor<8x8xf32>)
                       outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
    %t = math.tanh %h : tensor<4x8xf32>
    %o = linalg.matmul ins(%t, %vi : tensor<4x8xf32>, tensor<8x8xf32>)
                       outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %o : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}
