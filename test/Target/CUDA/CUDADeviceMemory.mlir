// RUN: dtensor-opt %s -split-input-file --dtensor-cuda-device-memory | FileCheck %s
// RUN: dtensor-opt %s -split-input-file --dtensor-cuda-device-memory=deallocate=false | FileCheck %s --check-prefix=NOFREE
// RUN: dtensor-opt %S/Inputs/device-memory-errors.mlir -split-input-file --dtensor-cuda-device-memory -verify-diagnostics -o /dev/null

// Allocations move to the device and are freed after their last use;
// copies become kernels (linalg.copy); the returned buffer is not freed.
// CHECK-LABEL: func.func @buffers(
// CHECK-SAME:      %[[ARG:.*]]: memref<4xf32>, %[[N:.*]]: index)
// CHECK:         %[[T:.*]] = gpu.alloc () : memref<4xf32>
// CHECK:         linalg.copy ins(%[[ARG]] : memref<4xf32>) outs(%[[T]] : memref<4xf32>)
// CHECK:         %[[D:.*]] = gpu.alloc (%[[N]]) : memref<?xf32>
// CHECK:         %[[R:.*]] = gpu.alloc () : memref<4xf32>
// CHECK:         linalg.copy ins(%[[T]] : memref<4xf32>) outs(%[[R]] : memref<4xf32>)
// CHECK-NEXT:    gpu.dealloc %[[T]] : memref<4xf32>
// CHECK:         scf.for
// CHECK:           memref.subview %[[D]]
// CHECK:         }
// CHECK-NEXT:    gpu.dealloc %[[D]] : memref<?xf32>
// CHECK-NOT:     gpu.dealloc
// CHECK:         return %[[R]]
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// NOFREE-LABEL: func.func @buffers(
// NOFREE-NOT:    gpu.dealloc
// NOFREE:        return
func.func @buffers(%arg: memref<4xf32>, %n: index) -> memref<4xf32> {
  %t = memref.alloc() : memref<4xf32>
  memref.copy %arg, %t : memref<4xf32> to memref<4xf32>
  %d = memref.alloc(%n) : memref<?xf32>
  %r = memref.alloc() : memref<4xf32>
  memref.copy %t, %r : memref<4xf32> to memref<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.subview %d[%i] [1] [1] : memref<?xf32> to memref<1xf32, strided<[1], offset: ?>>
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%v : memref<1xf32, strided<[1], offset: ?>>)
  }
  return %r : memref<4xf32>
}

// -----

// A buffer given to an asynchronous collective lives until its wait; an
// existing memref.dealloc becomes gpu.dealloc.
// CHECK-LABEL: func.func @async_input(
// CHECK:         %[[IN:.*]] = gpu.alloc () : memref<8xf32>
// CHECK:         %[[H:.*]] = call @dtensor_rt_start_all_reduce_f32(
// CHECK:         %[[OTHER:.*]] = gpu.alloc () : memref<8xf32>
// CHECK-NEXT:    gpu.dealloc %[[OTHER]] : memref<8xf32>
// CHECK-NEXT:    call @dtensor_rt_wait(%{{.*}}, %[[H]])
// CHECK-NEXT:    gpu.dealloc %[[IN]] : memref<8xf32>
// CHECK-NOT:     memref.dealloc
func.func private @dtensor_rt_start_all_reduce_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64) -> i64
func.func private @dtensor_rt_wait(!llvm.ptr, i64)
func.func @async_input(%ctx: !llvm.ptr, %x: memref<8xf32>, %out: memref<8xf32>) {
  %in = memref.alloc() : memref<8xf32>
  memref.copy %x, %in : memref<8xf32> to memref<8xf32>
  %u = memref.cast %in : memref<8xf32> to memref<*xf32>
  %o = memref.cast %out : memref<8xf32> to memref<*xf32>
  %c0 = arith.constant 0 : i64
  %h = call @dtensor_rt_start_all_reduce_f32(%ctx, %u, %o, %c0, %c0, %c0) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64) -> i64
  %other = memref.alloc() : memref<8xf32>
  memref.dealloc %other : memref<8xf32>
  call @dtensor_rt_wait(%ctx, %h) : (!llvm.ptr, i64) -> ()
  return
}

// -----

// A constant that only runtime calls read stays a host global (a permute's
// perm).
// CHECK-LABEL: func.func @perm_constant(
// CHECK:         memref.get_global @perm
memref.global "private" constant @perm : memref<2xi64> = dense<[1, 0]>
func.func private @dtensor_rt_permute_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, memref<*xi64>)
func.func @perm_constant(%ctx: !llvm.ptr, %x: memref<*xf32>, %y: memref<*xf32>) {
  %p = memref.get_global @perm : memref<2xi64>
  %u = memref.cast %p : memref<2xi64> to memref<*xi64>
  %c0 = arith.constant 0 : i64
  call @dtensor_rt_permute_f32(%ctx, %x, %y, %c0, %c0, %u) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, memref<*xi64>) -> ()
  return
}

// -----

// A constant that device code reads gets a device copy where it is taken
// (host -> device memcpy), freed after its last use; a permute's perm still
// reads the host global. Mutation: without the copy the kernel would read
// host memory.
// CHECK-LABEL: func.func @constant_in_kernel(
// CHECK:         %[[HOST:.*]] = memref.get_global @table : memref<4xf32>
// CHECK:         %[[DEV:.*]] = gpu.alloc  () : memref<4xf32>
// CHECK:         gpu.memcpy  %[[DEV]], %[[HOST]] : memref<4xf32>, memref<4xf32>
// CHECK:         linalg.copy ins(%[[DEV]] : memref<4xf32>) outs(%{{.*}} : memref<4xf32>)
// CHECK:         gpu.dealloc  %[[DEV]] : memref<4xf32>
// CHECK:         %[[U:.*]] = memref.cast %[[HOST]]
// CHECK:         call @dtensor_rt_permute_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[U]])
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func private @dtensor_rt_permute_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, memref<*xf32>)
func.func @constant_in_kernel(%ctx: !llvm.ptr, %x: memref<*xf32>, %y: memref<4xf32>) {
  %t = memref.get_global @table : memref<4xf32>
  linalg.copy ins(%t : memref<4xf32>) outs(%y : memref<4xf32>)
  %u = memref.cast %t : memref<4xf32> to memref<*xf32>
  %c0 = arith.constant 0 : i64
  call @dtensor_rt_permute_f32(%ctx, %x, %x, %c0, %c0, %u) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, memref<*xf32>) -> ()
  return
}

// -----

// A view through memref.transpose (not a ViewLikeOpInterface op in MLIR 22)
// keeps its buffer alive: the free comes after the runtime call that reads
// the collapsed transpose, not after the transpose. Regression: the
// transformer's attention read freed (and reused) memory.
// CHECK-LABEL: func.func @transposed_view_alive(
// CHECK:         %[[BUF:.*]] = gpu.alloc  () : memref<2x4x8xf32>
// CHECK:         memref.transpose %[[BUF]]
// CHECK-NOT:     gpu.dealloc
// CHECK:         call @dtensor_rt_matmul_f32(
// CHECK-NEXT:    gpu.dealloc  %[[BUF]] : memref<2x4x8xf32>
func.func private @dtensor_rt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64)
func.func @transposed_view_alive(%x: memref<2x4x8xf32>, %b: memref<*xf32>, %c: memref<*xf32>) {
  %buf = memref.alloc() : memref<2x4x8xf32>
  linalg.copy ins(%x : memref<2x4x8xf32>) outs(%buf : memref<2x4x8xf32>)
  %t = memref.transpose %buf (d0, d1, d2) -> (d1, d0, d2) : memref<2x4x8xf32> to memref<4x2x8xf32, strided<[8, 32, 1]>>
  %v = memref.cast %t : memref<4x2x8xf32, strided<[8, 32, 1]>> to memref<*xf32>
  %c1 = arith.constant 1 : i64
  call @dtensor_rt_matmul_f32(%v, %b, %c, %c1) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64) -> ()
  return
}

// -----

// A handle carried to the next iteration of a loop is waited there: the
// buffers of its collective are not freed in the body.
// CHECK-LABEL: func.func @carried_handle(
// CHECK:         scf.for
// CHECK:           call @dtensor_rt_start_all_reduce_f32(
// CHECK-NOT:       gpu.dealloc
// CHECK:           scf.yield
func.func private @dtensor_rt_start_all_reduce_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64) -> i64
func.func private @dtensor_rt_wait(!llvm.ptr, i64)
func.func @carried_handle(%ctx: !llvm.ptr, %x: memref<8xf32>, %h0: i64, %n: index) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%h = %h0) -> i64 {
    func.call @dtensor_rt_wait(%ctx, %h) : (!llvm.ptr, i64) -> ()
    %in = memref.alloc() : memref<8xf32>
    memref.copy %x, %in : memref<8xf32> to memref<8xf32>
    %out = memref.alloc() : memref<8xf32>
    %u = memref.cast %in : memref<8xf32> to memref<*xf32>
    %o = memref.cast %out : memref<8xf32> to memref<*xf32>
    %h2 = func.call @dtensor_rt_start_all_reduce_f32(%ctx, %u, %o, %z, %z, %z) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64) -> i64
    scf.yield %h2 : i64
  }
  return %r : i64
}
