// RUN: dtensor-opt %s -split-input-file --dtensor-cuda-stream-order | FileCheck %s
// RUN: dtensor-opt %S/Inputs/stream-order-errors.mlir -split-input-file --dtensor-cuda-stream-order -verify-diagnostics -o /dev/null

// Every GPU op goes on the stream of its own `gpu.wait async`
// (mgpuStreamCreate: the rank's persistent stream); no blocking wait is
// added before the runtime call or the return.
// CHECK-LABEL: func.func @ordered(
// CHECK:         %[[S0:.*]] = gpu.wait async
// CHECK-NEXT:    %[[M:.*]], %{{.*}} = gpu.alloc async [%[[S0]]] () : memref<4xf32>
// CHECK:         %[[S1:.*]] = gpu.wait async
// CHECK-NEXT:    gpu.launch_func async [%[[S1]]] @kernels::@k
// CHECK-NOT:     gpu.wait [
// CHECK:         call @dtensor_rt_all_reduce_f32
// CHECK:         %[[S2:.*]] = gpu.wait async
// CHECK-NEXT:    gpu.memcpy async [%[[S2]]]
// CHECK:         %[[S3:.*]] = gpu.wait async
// CHECK-NEXT:    gpu.dealloc async [%[[S3]]] %[[M]]
// CHECK-NOT:     gpu.wait [
// CHECK:         return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%m: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func private @dtensor_rt_all_reduce_f32(memref<*xf32>, memref<*xf32>, i64, i64, i64)
  func.func @ordered(%out: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %m = gpu.alloc () : memref<4xf32>
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : memref<4xf32>)
    %u = memref.cast %m : memref<4xf32> to memref<*xf32>
    %o = memref.cast %out : memref<4xf32> to memref<*xf32>
    %z = arith.constant 0 : i64
    call @dtensor_rt_all_reduce_f32(%u, %o, %z, %z, %z) : (memref<*xf32>, memref<*xf32>, i64, i64, i64) -> ()
    gpu.memcpy %out, %m : memref<4xf32>, memref<4xf32>
    gpu.dealloc %m : memref<4xf32>
    return
  }
}
