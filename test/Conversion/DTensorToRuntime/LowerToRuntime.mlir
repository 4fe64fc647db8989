// RUN: split-file %s %t
// RUN: dtensor-opt %t/lower.mlir -split-input-file --dtensor-lower-to-runtime > %t/lowered.mlir
// RUN: FileCheck %s < %t/lowered.mlir
// RUN: FileCheck %s --check-prefix=NODT < %t/lowered.mlir

// Errors: element types the runtime has no collectives for, global-view ops
// left over, collectives and coordinates on a mesh that is missing (only
// possible in unverified IR: the verifier rejects it as COLL1).
// RUN: dtensor-opt %t/errors.mlir -split-input-file --dtensor-lower-to-runtime -verify-diagnostics -o /dev/null
// RUN: dtensor-opt %t/unverified.mlir -split-input-file --mlir-very-unsafe-disable-verifier-on-parsing --dtensor-lower-to-runtime -verify-diagnostics -o /dev/null

// The whole CPU pipeline takes every program below to the LLVM dialect alone,
// which translates to LLVM IR calling the C ABI of Runtime.h.
// RUN: dtensor-opt %t/lower.mlir -split-input-file --dtensor-cpu-lowering > %t/cpu.mlir
// RUN: FileCheck %s --check-prefix=CPU < %t/cpu.mlir
// RUN: FileCheck %s --check-prefix=ONLYLLVM < %t/cpu.mlir
// RUN: mlir-translate -split-input-file --mlir-to-llvmir %t/cpu.mlir | FileCheck %s --check-prefix=LLVMIR

// Nothing of the dtensor dialect survives the pass: no op, no mesh, no
// attribute, no type (runtime symbols are spelled dtensor_rt_*).
// NODT-NOT: dtensor.
// NODT-NOT: dtensor<
// NODT-NOT: !dtensor

// ONLYLLVM-NOT: dtensor.
// ONLYLLVM-NOT: {{^ *(%[^ ]+ = )?"?(affine|arith|bufferization|builtin|cf|func|index|linalg|math|memref|scf|tensor|ub)\.}}
// ONLYLLVM-NOT: memref<

// CPU:      llvm.func @all_reduce_each_kind(
// CPU:        llvm.call @dtensor_rt_all_reduce_f32({{.*}}) : (!llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, i64, i64) -> ()
// CPU:      llvm.func @_mlir_ciface_all_reduce_each_kind(
// CPU:      llvm.func @all_gather_dynamic(
// CPU:        llvm.call @dtensor_rt_all_gather_f32({{.*}}) : (!llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, i64, i64) -> ()
// CPU:      llvm.func @permute(
// CPU:        llvm.call @dtensor_rt_permute_i64({{.*}}) : (!llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr) -> ()
// CPU:      llvm.func @dtensor_rt_all_gather_f32(!llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, i64, i64) attributes {sym_visibility = "private"}
// CPU:      llvm.func @coords(
// CPU:        llvm.call @dtensor_rt_coord({{.*}}) : (i64, i64) -> i64
// CPU:      llvm.func @async_all_gather(
// CPU:        llvm.call @dtensor_rt_start_all_gather_f32({{.*}}) : (!llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, i64, i64) -> i64
// CPU:        llvm.call @dtensor_rt_wait({{.*}}) : (!llvm.ptr, i64) -> ()
// CPU:      llvm.func @public_entry(
// CPU:      llvm.func @_mlir_ciface_public_entry(
// CPU:      llvm.func @private_helper(
// CPU-NOT:  @_mlir_ciface_private_helper

// LLVMIR-DAG: declare void @dtensor_rt_all_reduce_f32(ptr, i64, ptr, i64, ptr, i64, i64, i64)
// LLVMIR-DAG: declare void @dtensor_rt_all_gather_f64(ptr, i64, ptr, i64, ptr, i64, i64, i64)
// LLVMIR-DAG: declare void @dtensor_rt_reduce_scatter_i64(ptr, i64, ptr, i64, ptr, i64, i64, i64, i64)
// LLVMIR-DAG: declare void @dtensor_rt_all_to_all_i32(ptr, i64, ptr, i64, ptr, i64, i64, i64, i64)
// LLVMIR-DAG: declare void @dtensor_rt_permute_i64(ptr, i64, ptr, i64, ptr, i64, i64, i64, ptr)
// LLVMIR-DAG: declare void @dtensor_rt_broadcast_f64(ptr, i64, ptr, i64, ptr, i64, i64, i64)
// LLVMIR-DAG: declare i64 @dtensor_rt_coord(i64, i64)
// LLVMIR-DAG: declare i64 @dtensor_rt_start_permute_i32(ptr, i64, ptr, i64, ptr, i64, i64, i64, ptr)
// LLVMIR-DAG: declare void @dtensor_rt_wait(ptr, i64)
// LLVMIR-DAG: declare i64 @dtensor_rt_total_size(ptr, i64, ptr)
// LLVMIR-DAG: declare void @dtensor_rt_all_to_all_v_f32(ptr, i64, ptr, i64, ptr, i64, ptr, i64, ptr, i64, i64)
// LLVMIR-DAG: define void @_mlir_ciface_all_reduce_each_kind(ptr %0, ptr %1)

//--- lower.mlir

// Every synchronous collective, on two meshes: @tp is mesh 0 and @m2 is
// mesh 1 (module order). Each becomes one call on an unranked view of the
// operand (to_buffer with a fully dynamic layout) and of a fresh output
// buffer of the result shape, with the mesh id, the axes mask (bit i = mesh
// axis i) and the op's own trailing arguments; the output turns back into a
// tensor with to_tensor restrict writable.

dtensor.mesh @tp shape = [4]
dtensor.mesh @m2 shape = [2, 4] names = ["dp", "tp"]

// Reduce codes: 0 sum, 1 avg, 2 product, 3 min, 4 max.
// CHECK-LABEL: func.func @all_reduce_each_kind(
// CHECK-SAME:      %[[X:.*]]: tensor<4x16xf32>) -> tensor<4x16xf32> attributes {llvm.emit_c_interface} {
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK-NEXT:    %[[SUM:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<4x16xf32> to memref<4x16xf32, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<4x16xf32>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]] : memref<4x16xf32, strided<[?, ?], offset: ?>> to memref<*xf32>
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<4x16xf32> to memref<*xf32>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_all_reduce_f32(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[SUM]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64) -> ()
// CHECK-NEXT:    %[[R0:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<4x16xf32> to tensor<4x16xf32>
// CHECK-NEXT:    %[[AVG:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[R0]] read_only
// CHECK:         %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_all_reduce_f32(%[[CTX]], %{{.*}}, %{{.*}}, %[[MESH]], %[[MASK]], %[[AVG]])
// CHECK-NEXT:    %[[R1:.*]] = bufferization.to_tensor
// CHECK-NEXT:    %[[PROD:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[R1]] read_only
// CHECK:         %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_all_reduce_f32(%[[CTX]], %{{.*}}, %{{.*}}, %[[MESH]], %[[MASK]], %[[PROD]])
// CHECK-NEXT:    %[[R2:.*]] = bufferization.to_tensor
// CHECK-NEXT:    %[[MIN:.*]] = arith.constant 3 : i64
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[R2]] read_only
// CHECK:         %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    call @dtensor_rt_all_reduce_f32(%[[CTX]], %{{.*}}, %{{.*}}, %[[MESH]], %[[MASK]], %[[MIN]])
// CHECK-NEXT:    %[[R3:.*]] = bufferization.to_tensor
// CHECK-NEXT:    %[[MAX:.*]] = arith.constant 4 : i64
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[R3]] read_only
// CHECK:         %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 3 : i64
// CHECK-NEXT:    call @dtensor_rt_all_reduce_f32(%[[CTX]], %{{.*}}, %{{.*}}, %[[MESH]], %[[MASK]], %[[MAX]])
// CHECK-NEXT:    %[[R4:.*]] = bufferization.to_tensor
// CHECK-NEXT:    return %[[R4]] : tensor<4x16xf32>
func.func @all_reduce_each_kind(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4x16xf32>
  %1 = dtensor.all_reduce %0 on @tp axes = [0] reduce = avg : tensor<4x16xf32>
  %2 = dtensor.all_reduce %1 on @m2 axes = [0] reduce = product : tensor<4x16xf32>
  %3 = dtensor.all_reduce %2 on @m2 axes = [1] reduce = min : tensor<4x16xf32>
  %4 = dtensor.all_reduce %3 on @m2 axes = [0, 1] reduce = max : tensor<4x16xf32>
  return %4 : tensor<4x16xf32>
}

// The output is the group size (4 along mesh axis 1, 2 along axis 0) times
// the operand along the gather dim.
// CHECK-LABEL: func.func @all_gather_dims(
// CHECK-SAME:      %[[X:.*]]: tensor<2x8xf64>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[DIM0:.*]] = arith.constant 0 : i64
// CHECK:         %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<2x8xf64> to memref<2x8xf64, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<8x8xf64>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]] : memref<2x8xf64, strided<[?, ?], offset: ?>> to memref<*xf64>
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<8x8xf64> to memref<*xf64>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    call @dtensor_rt_all_gather_f64(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[DIM0]]) : (!llvm.ptr, memref<*xf64>, memref<*xf64>, i64, i64, i64) -> ()
// CHECK-NEXT:    %[[G0:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<8x8xf64> to tensor<8x8xf64>
// CHECK-NEXT:    %[[DIM1:.*]] = arith.constant 1 : i64
// CHECK:         %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<2x8xf64> to memref<2x8xf64, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<2x16xf64>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]]
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<2x16xf64> to memref<*xf64>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_all_gather_f64(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[DIM1]])
// CHECK-NEXT:    %[[G1:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<2x16xf64> to tensor<2x16xf64>
// CHECK-NEXT:    return %[[G0]], %[[G1]]
func.func @all_gather_dims(%x: tensor<2x8xf64>) -> (tensor<8x8xf64>, tensor<2x16xf64>) {
  %0 = dtensor.all_gather %x on @m2 axes = [1] gather_dim = 0 : tensor<2x8xf64> -> tensor<8x8xf64>
  %1 = dtensor.all_gather %x on @m2 axes = [0] gather_dim = 1 : tensor<2x8xf64> -> tensor<2x16xf64>
  return %0, %1 : tensor<8x8xf64>, tensor<2x16xf64>
}

// Dynamic output sizes: the operand's, times the group size (8 over both
// axes of @m2, 4 over @tp) along the gather dim.
// CHECK-LABEL: func.func @all_gather_dynamic(
// CHECK-SAME:      %[[X:.*]]: tensor<?x?xf32>, %[[Y:.*]]: tensor<3x?xi32>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[D0:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x?xf32>
// CHECK:         %[[D1:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x?xf32>
// CHECK:         %[[DIM0:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[N0:.*]] = arith.muli %[[D0]], %[[C8]] : index
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<?x?xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc(%[[N0]], %[[D1]]) : memref<?x?xf32>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]] : memref<?x?xf32, strided<[?, ?], offset: ?>> to memref<*xf32>
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<?x?xf32> to memref<*xf32>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 3 : i64
// CHECK-NEXT:    call @dtensor_rt_all_gather_f32(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[DIM0]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64) -> ()
// CHECK-NEXT:    %[[G0:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<?x?xf32> to tensor<?x?xf32>
// CHECK:         %[[E1:.*]] = tensor.dim %[[Y]], %{{.*}} : tensor<3x?xi32>
// CHECK-NEXT:    %[[DIM1:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[N1:.*]] = arith.muli %[[E1]], %[[C4]] : index
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[Y]] read_only : tensor<3x?xi32> to memref<3x?xi32, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc(%[[N1]]) : memref<3x?xi32>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]] : memref<3x?xi32, strided<[?, ?], offset: ?>> to memref<*xi32>
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<3x?xi32> to memref<*xi32>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_all_gather_i32(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[DIM1]]) : (!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, i64) -> ()
// CHECK-NEXT:    %[[G1:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<3x?xi32> to tensor<3x?xi32>
// CHECK-NEXT:    return %[[G0]], %[[G1]]
func.func @all_gather_dynamic(%x: tensor<?x?xf32>, %y: tensor<3x?xi32>) -> (tensor<?x?xf32>, tensor<3x?xi32>) {
  %0 = dtensor.all_gather %x on @m2 axes = [0, 1] gather_dim = 0 : tensor<?x?xf32> -> tensor<?x?xf32>
  %1 = dtensor.all_gather %y on @tp axes = [0] gather_dim = 1 : tensor<3x?xi32> -> tensor<3x?xi32>
  return %0, %1 : tensor<?x?xf32>, tensor<3x?xi32>
}

// Trailing arguments (scatter dim, reduce code); the output is the operand
// divided by the group size along the scatter dim.
// CHECK-LABEL: func.func @reduce_scatter(
// CHECK-SAME:      %[[X:.*]]: tensor<8x?xi64>, %[[Y:.*]]: tensor<?x4xi32>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[D1:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<8x?xi64>
// CHECK-NEXT:    %[[DIM:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MAX:.*]] = arith.constant 4 : i64
// CHECK:         %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<8x?xi64> to memref<8x?xi64, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc(%[[D1]]) : memref<2x?xi64>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]] : memref<8x?xi64, strided<[?, ?], offset: ?>> to memref<*xi64>
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<2x?xi64> to memref<*xi64>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_reduce_scatter_i64(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[DIM]], %[[MAX]]) : (!llvm.ptr, memref<*xi64>, memref<*xi64>, i64, i64, i64, i64) -> ()
// CHECK-NEXT:    %[[S0:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<2x?xi64> to tensor<2x?xi64>
// CHECK:         %[[E0:.*]] = tensor.dim %[[Y]], %{{.*}} : tensor<?x4xi32>
// CHECK-NEXT:    %[[DIM:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[SUM:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[N:.*]] = arith.divui %[[E0]], %[[C4]] : index
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[Y]] read_only
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc(%[[N]]) : memref<?x4xi32>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]]
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<?x4xi32> to memref<*xi32>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    call @dtensor_rt_reduce_scatter_i32(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[DIM]], %[[SUM]]) : (!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, i64, i64) -> ()
// CHECK-NEXT:    %[[S1:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<?x4xi32> to tensor<?x4xi32>
// CHECK-NEXT:    return %[[S0]], %[[S1]]
func.func @reduce_scatter(%x: tensor<8x?xi64>, %y: tensor<?x4xi32>) -> (tensor<2x?xi64>, tensor<?x4xi32>) {
  %0 = dtensor.reduce_scatter %x on @tp axes = [0] scatter_dim = 0 reduce = max : tensor<8x?xi64> -> tensor<2x?xi64>
  %1 = dtensor.reduce_scatter %y on @m2 axes = [1] scatter_dim = 0 reduce = sum : tensor<?x4xi32> -> tensor<?x4xi32>
  return %0, %1 : tensor<2x?xi64>, tensor<?x4xi32>
}

// Trailing arguments (split dim, concat dim). With split == concat the
// shape is unchanged.
// CHECK-LABEL: func.func @all_to_all(
// CHECK-SAME:      %[[X:.*]]: tensor<2x16xi32>, %[[Y:.*]]: tensor<8x4xi64>, %[[Z:.*]]: tensor<?x16xf32>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK-NEXT:    %[[SPLIT:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[CONCAT:.*]] = arith.constant 0 : i64
// CHECK:         %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<2x16xi32> to memref<2x16xi32, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<8x4xi32>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]]
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<8x4xi32> to memref<*xi32>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_all_to_all_i32(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[SPLIT]], %[[CONCAT]]) : (!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, i64, i64) -> ()
// CHECK-NEXT:    %[[A0:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<8x4xi32> to tensor<8x4xi32>
// CHECK-NEXT:    %[[SPLIT:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[CONCAT:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[Y]] read_only : tensor<8x4xi64> to memref<8x4xi64, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<8x4xi64>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]]
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<8x4xi64> to memref<*xi64>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_all_to_all_i64(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[SPLIT]], %[[CONCAT]]) : (!llvm.ptr, memref<*xi64>, memref<*xi64>, i64, i64, i64, i64) -> ()
// CHECK-NEXT:    %[[A1:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<8x4xi64> to tensor<8x4xi64>
// CHECK-NEXT:    %{{.*}} = arith.constant 0 : index
// CHECK-NEXT:    %[[D0:.*]] = tensor.dim %[[Z]], %{{.*}} : tensor<?x16xf32>
// CHECK-NEXT:    %[[SPLIT:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[CONCAT:.*]] = arith.constant 0 : i64
// CHECK:         arith.divui
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[N:.*]] = arith.muli %[[D0]], %[[C4]] : index
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[Z]] read_only
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc(%[[N]]) : memref<?x4xf32>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]]
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<?x4xf32> to memref<*xf32>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    call @dtensor_rt_all_to_all_f32(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[SPLIT]], %[[CONCAT]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64) -> ()
// CHECK-NEXT:    %[[A2:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<?x4xf32> to tensor<?x4xf32>
// CHECK-NEXT:    return %[[A0]], %[[A1]], %[[A2]]
func.func @all_to_all(%x: tensor<2x16xi32>, %y: tensor<8x4xi64>, %z: tensor<?x16xf32>) -> (tensor<8x4xi32>, tensor<8x4xi64>, tensor<?x4xf32>) {
  %0 = dtensor.all_to_all %x on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xi32> -> tensor<8x4xi32>
  %1 = dtensor.all_to_all %y on @tp axes = [0] split_dim = 0 concat_dim = 0 : tensor<8x4xi64> -> tensor<8x4xi64>
  %2 = dtensor.all_to_all %z on @m2 axes = [1] split_dim = 1 concat_dim = 0 : tensor<?x16xf32> -> tensor<?x4xf32>
  return %0, %1, %2 : tensor<8x4xi32>, tensor<8x4xi64>, tensor<?x4xf32>
}

// Split sizes at run time: the output's rows are the sum of the recv sizes
// (dtensor_rt_total_size), then one call with both size buffers after the
// output, before the mesh.
// CHECK-LABEL: func.func @all_to_all_v(
// CHECK-SAME:      %[[X:.*]]: tensor<6x3xf32>, %[[S:.*]]: tensor<4xi64>, %[[R:.*]]: tensor<4xi64>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[SB:.*]] = bufferization.to_buffer %[[S]] read_only
// CHECK-NEXT:    %[[SU:.*]] = memref.cast %[[SB]] {{.*}} to memref<*xi64>
// CHECK-NEXT:    %[[RB:.*]] = bufferization.to_buffer %[[R]] read_only
// CHECK-NEXT:    %[[RU:.*]] = memref.cast %[[RB]] {{.*}} to memref<*xi64>
// CHECK-NEXT:    %[[ROWS:.*]] = call @dtensor_rt_total_size(%[[CTX]], %[[RU]]) : (!llvm.ptr, memref<*xi64>) -> i64
// CHECK-NEXT:    %[[N:.*]] = arith.index_cast %[[ROWS]] : i64 to index
// CHECK:         %[[OUT:.*]] = memref.alloc(%[[N]]) : memref<?x3xf32>
// CHECK:         call @dtensor_rt_all_to_all_v_f32(%[[CTX]], %{{.*}}, %{{.*}}, %[[SU]], %[[RU]], %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xi64>, memref<*xi64>, i64, i64) -> ()
// CHECK-NEXT:    bufferization.to_tensor %[[OUT]] restrict writable : memref<?x3xf32> to tensor<?x3xf32>
func.func @all_to_all_v(%x: tensor<6x3xf32>, %s: tensor<4xi64>, %r: tensor<4xi64>) -> tensor<?x3xf32> {
  %0 = dtensor.all_to_all_v %x, %s, %r on @tp axes = [0] : tensor<6x3xf32>, tensor<4xi64>, tensor<4xi64> -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// A routed matmul becomes one generic reading the expert's weights at the
// id taken modulo E (floor modulo: remsi, then + E where negative).
// CHECK-LABEL: func.func @routed_matmul(
// CHECK:         linalg.fill
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK:           arith.extsi %{{.*}} : i32 to i64
// CHECK:           arith.remsi
// CHECK:           arith.select
// CHECK:           tensor.extract %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : tensor<3x8x6xf32>
// CHECK:           arith.mulf
// CHECK:           arith.addf
func.func @routed_matmul(%x: tensor<?x8xf32>, %ids: tensor<?x2xi32>, %w: tensor<3x8x6xf32>) -> tensor<?x2x6xf32> {
  %0 = dtensor.routed_matmul %x, %ids, %w : tensor<?x8xf32>, tensor<?x2xi32>, tensor<3x8x6xf32> -> tensor<?x2x6xf32>
  return %0 : tensor<?x2x6xf32>
}

// The permutation is a constant rank-1 i64 buffer passed last.
// CHECK-LABEL: func.func @permute(
// CHECK-SAME:      %[[X:.*]]: tensor<4x16xi64>, %[[Y:.*]]: tensor<?xf32>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK-NEXT:    %[[PERM:.*]] = arith.constant dense<[1, 2, 3, 0]> : tensor<4xi64>
// CHECK-NEXT:    %[[PERMB:.*]] = bufferization.to_buffer %[[PERM]] read_only : tensor<4xi64> to memref<4xi64, strided<[?], offset: ?>>
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<4x16xi64> to memref<4x16xi64, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<4x16xi64>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]]
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<4x16xi64> to memref<*xi64>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[PERMU:.*]] = memref.cast %[[PERMB]] : memref<4xi64, strided<[?], offset: ?>> to memref<*xi64>
// CHECK-NEXT:    call @dtensor_rt_permute_i64(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[PERMU]]) : (!llvm.ptr, memref<*xi64>, memref<*xi64>, i64, i64, memref<*xi64>) -> ()
// CHECK-NEXT:    %[[P0:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<4x16xi64> to tensor<4x16xi64>
// CHECK-NEXT:    %{{.*}} = arith.constant 0 : index
// CHECK-NEXT:    %[[D0:.*]] = tensor.dim %[[Y]], %{{.*}} : tensor<?xf32>
// CHECK-NEXT:    %[[PERM:.*]] = arith.constant dense<[1, 0]> : tensor<2xi64>
// CHECK-NEXT:    %[[PERMB:.*]] = bufferization.to_buffer %[[PERM]] read_only : tensor<2xi64> to memref<2xi64, strided<[?], offset: ?>>
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[Y]] read_only : tensor<?xf32> to memref<?xf32, strided<[?], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc(%[[D0]]) : memref<?xf32>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]]
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<?xf32> to memref<*xf32>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[PERMU:.*]] = memref.cast %[[PERMB]] : memref<2xi64, strided<[?], offset: ?>> to memref<*xi64>
// CHECK-NEXT:    call @dtensor_rt_permute_f32(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[PERMU]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, memref<*xi64>) -> ()
// CHECK-NEXT:    %[[P1:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<?xf32> to tensor<?xf32>
// CHECK-NEXT:    return %[[P0]], %[[P1]]
func.func @permute(%x: tensor<4x16xi64>, %y: tensor<?xf32>) -> (tensor<4x16xi64>, tensor<?xf32>) {
  %0 = dtensor.permute %x on @tp axes = [0] perm = [1, 2, 3, 0] : tensor<4x16xi64>
  %1 = dtensor.permute %y on @m2 axes = [0] perm = [1, 0] : tensor<?xf32>
  return %0, %1 : tensor<4x16xi64>, tensor<?xf32>
}

// Trailing argument: the root. Rank 0 works like any rank.
// CHECK-LABEL: func.func @broadcast(
// CHECK-SAME:      %[[X:.*]]: tensor<3xf64>, %[[Y:.*]]: tensor<i32>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK-NEXT:    %[[ROOT:.*]] = arith.constant 3 : i64
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<3xf64> to memref<3xf64, strided<[?], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<3xf64>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]]
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<3xf64> to memref<*xf64>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    call @dtensor_rt_broadcast_f64(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[ROOT]]) : (!llvm.ptr, memref<*xf64>, memref<*xf64>, i64, i64, i64) -> ()
// CHECK-NEXT:    %[[B0:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<3xf64> to tensor<3xf64>
// CHECK-NEXT:    %[[ROOT:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[Y]] read_only : tensor<i32> to memref<i32, strided<[], offset: ?>>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<i32>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[IN]] : memref<i32, strided<[], offset: ?>> to memref<*xi32>
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<i32> to memref<*xi32>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_broadcast_i32(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[ROOT]]) : (!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, i64) -> ()
// CHECK-NEXT:    %[[B1:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<i32> to tensor<i32>
// CHECK-NEXT:    return %[[B0]], %[[B1]]
func.func @broadcast(%x: tensor<3xf64>, %y: tensor<i32>) -> (tensor<3xf64>, tensor<i32>) {
  %0 = dtensor.broadcast %x on @m2 axes = [1] root = 3 : tensor<3xf64>
  %1 = dtensor.broadcast %y on @tp axes = [0] root = 0 : tensor<i32>
  return %0, %1 : tensor<3xf64>, tensor<i32>
}

// One private declaration per entry point used: unranked memrefs, then
// i64s; the permutation is an unranked i64 memref.
// CHECK-DAG: func.func private @dtensor_rt_all_reduce_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_all_gather_f64(!llvm.ptr, memref<*xf64>, memref<*xf64>, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_all_gather_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_all_gather_i32(!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_reduce_scatter_i64(!llvm.ptr, memref<*xi64>, memref<*xi64>, i64, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_reduce_scatter_i32(!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_all_to_all_i32(!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_all_to_all_i64(!llvm.ptr, memref<*xi64>, memref<*xi64>, i64, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_all_to_all_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_permute_i64(!llvm.ptr, memref<*xi64>, memref<*xi64>, i64, i64, memref<*xi64>){{$}}
// CHECK-DAG: func.func private @dtensor_rt_permute_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, memref<*xi64>){{$}}
// CHECK-DAG: func.func private @dtensor_rt_broadcast_f64(!llvm.ptr, memref<*xf64>, memref<*xf64>, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_broadcast_i32(!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, i64){{$}}

// -----

// Coalesced collectives: one call per tensor, each with its own element
// type suffix and its own dim.

dtensor.mesh @tp shape = [4]

// CHECK-LABEL: func.func @coalesced(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<4xf32>, %[[Y:[^:]*]]: tensor<8x8xi32>, %[[A:[^:]*]]: tensor<?x4xf32>, %[[B:[^:]*]]: tensor<4x2xf64>, %[[C:[^:]*]]: tensor<8xi64>, %[[D:[^:]*]]: tensor<2x8xf32>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK-NEXT:    %[[PROD:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    bufferization.to_buffer %[[X]] read_only
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         call @dtensor_rt_all_reduce_f32(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PROD]])
// CHECK-NEXT:    %[[R0:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<4xf32> to tensor<4xf32>
// CHECK-NEXT:    %[[PROD:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    bufferization.to_buffer %[[Y]] read_only
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<8x8xi32>
// CHECK:         call @dtensor_rt_all_reduce_i32(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PROD]])
// CHECK-NEXT:    %[[R1:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<8x8xi32> to tensor<8x8xi32>
// CHECK:         %[[DA:.*]] = tensor.dim %[[A]], %{{.*}} : tensor<?x4xf32>
// CHECK-NEXT:    %[[DIM0:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[N:.*]] = arith.muli %[[DA]], %[[C4]] : index
// CHECK-NEXT:    bufferization.to_buffer %[[A]] read_only
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc(%[[N]]) : memref<?x4xf32>
// CHECK:         call @dtensor_rt_all_gather_f32(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[DIM0]])
// CHECK-NEXT:    %[[G0:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<?x4xf32> to tensor<?x4xf32>
// CHECK-NEXT:    %[[DIM1:.*]] = arith.constant 1 : i64
// CHECK:         bufferization.to_buffer %[[B]] read_only
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<4x8xf64>
// CHECK:         call @dtensor_rt_all_gather_f64(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[DIM1]])
// CHECK-NEXT:    %[[G1:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<4x8xf64> to tensor<4x8xf64>
// CHECK-NEXT:    %[[DIM0:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[AVG:.*]] = arith.constant 1 : i64
// CHECK:         bufferization.to_buffer %[[C]] read_only
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<2xi64>
// CHECK:         call @dtensor_rt_reduce_scatter_i64(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[DIM0]], %[[AVG]])
// CHECK-NEXT:    %[[S0:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<2xi64> to tensor<2xi64>
// CHECK-NEXT:    %[[DIM1:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[AVG:.*]] = arith.constant 1 : i64
// CHECK:         bufferization.to_buffer %[[D]] read_only
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<2x2xf32>
// CHECK:         call @dtensor_rt_reduce_scatter_f32(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[DIM1]], %[[AVG]])
// CHECK-NEXT:    %[[S1:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<2x2xf32> to tensor<2x2xf32>
// CHECK-NEXT:    return %[[R0]], %[[R1]], %[[G0]], %[[G1]], %[[S0]], %[[S1]]
// CHECK-NOT:   call
// CHECK-DAG: func.func private @dtensor_rt_all_reduce_i32(!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_all_gather_f64(!llvm.ptr, memref<*xf64>, memref<*xf64>, i64, i64, i64){{$}}
// CHECK-DAG: func.func private @dtensor_rt_reduce_scatter_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64){{$}}
func.func @coalesced(%x: tensor<4xf32>, %y: tensor<8x8xi32>, %a: tensor<?x4xf32>, %b: tensor<4x2xf64>, %c: tensor<8xi64>, %d: tensor<2x8xf32>)
    -> (tensor<4xf32>, tensor<8x8xi32>, tensor<?x4xf32>, tensor<4x8xf64>, tensor<2xi64>, tensor<2x2xf32>) {
  %0:2 = dtensor.all_reduce_coalesced %x, %y on @tp axes = [0] reduce = product : tensor<4xf32>, tensor<8x8xi32>
  %1:2 = dtensor.all_gather_coalesced %a, %b on @tp axes = [0] gather_dims = [0, 1] : tensor<?x4xf32>, tensor<4x2xf64> -> tensor<?x4xf32>, tensor<4x8xf64>
  %2:2 = dtensor.reduce_scatter_coalesced %c, %d on @tp axes = [0] scatter_dims = [0, 1] reduce = avg : tensor<8xi64>, tensor<2x8xf32> -> tensor<2xi64>, tensor<2x2xf32>
  return %0#0, %0#1, %1#0, %1#1, %2#0, %2#1 : tensor<4xf32>, tensor<8x8xi32>, tensor<?x4xf32>, tensor<4x8xf64>, tensor<2xi64>, tensor<2x2xf32>
}

// -----

// dtensor.coord asks the runtime for the group index over (mesh, mask).
// Meshes are numbered in module order, also when declared after their
// users: @grid is mesh 0, @cube mesh 1. Coordinates and collectives in
// nested regions are lowered in place.

dtensor.mesh @grid shape = [2, 4]

// CHECK-LABEL: func.func @coords(
// CHECK-SAME:      %[[P:.*]]: i1, %[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[V0:.*]] = call @dtensor_rt_coord(%[[MESH]], %[[MASK]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[C0:.*]] = arith.index_cast %[[V0]] : i64 to index
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    %[[V1:.*]] = call @dtensor_rt_coord(%[[MESH]], %[[MASK]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[C1:.*]] = arith.index_cast %[[V1]] : i64 to index
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 3 : i64
// CHECK-NEXT:    %[[V2:.*]] = call @dtensor_rt_coord(%[[MESH]], %[[MASK]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[C2:.*]] = arith.index_cast %[[V2]] : i64 to index
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 5 : i64
// CHECK-NEXT:    %[[V3:.*]] = call @dtensor_rt_coord(%[[MESH]], %[[MASK]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[C3:.*]] = arith.index_cast %[[V3]] : i64 to index
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 6 : i64
// CHECK-NEXT:    %[[V4:.*]] = call @dtensor_rt_coord(%[[MESH]], %[[MASK]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[C4:.*]] = arith.index_cast %[[V4]] : i64 to index
// CHECK-NEXT:    %[[IF:.*]] = scf.if %[[P]] -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:      %[[MASK:.*]] = arith.constant 4 : i64
// CHECK-NEXT:      %[[V5:.*]] = func.call @dtensor_rt_coord(%[[MESH]], %[[MASK]]) : (i64, i64) -> i64
// CHECK-NEXT:      %[[C5:.*]] = arith.index_cast %[[V5]] : i64 to index
// CHECK-NEXT:      %[[SUM:.*]] = arith.constant 0 : i64
// CHECK-NEXT:      bufferization.to_buffer %[[X]] read_only
// CHECK-NEXT:      %[[OUT:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:      memref.cast
// CHECK-NEXT:      memref.cast
// CHECK-NEXT:      %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:      %[[MASK:.*]] = arith.constant 7 : i64
// CHECK-NEXT:      func.call @dtensor_rt_all_reduce_f32(%[[CTX]], %{{.*}}, %{{.*}}, %[[MESH]], %[[MASK]], %[[SUM]])
// CHECK-NEXT:      %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<4xf32> to tensor<4xf32>
// CHECK:           tensor.insert %{{.*}} into %[[R]][%[[C5]]] : tensor<4xf32>
// CHECK:         return %[[C0]], %[[C1]], %[[C2]], %[[C3]], %[[C4]], %[[IF]]
// CHECK:       func.func private @dtensor_rt_coord(i64, i64) -> i64{{$}}
func.func @coords(%p: i1, %x: tensor<4xf32>) -> (index, index, index, index, index, tensor<4xf32>) {
  %0 = dtensor.coord @grid axes = [0] : index
  %1 = dtensor.coord @grid axes = [1] : index
  %2 = dtensor.coord @grid axes = [0, 1] : index
  %3 = dtensor.coord @cube axes = [0, 2] : index
  %4 = dtensor.coord @cube axes = [1, 2] : index
  %5 = scf.if %p -> tensor<4xf32> {
    %c = dtensor.coord @cube axes = [2] : index
    %r = dtensor.all_reduce %x on @cube axes = [0, 1, 2] reduce = sum : tensor<4xf32>
    %v = arith.index_cast %c : index to i32
    %f = arith.sitofp %v : i32 to f32
    %i = tensor.insert %f into %r[%c] : tensor<4xf32>
    scf.yield %i : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  return %0, %1, %2, %3, %4, %5 : index, index, index, index, index, tensor<4xf32>
}

dtensor.mesh @cube shape = [2, 2, 2]

// -----

// Asynchronous collectives: the start_* call is placed at the async_start
// and returns a handle; the runtime reads the input until the wait, so it
// gets its own copy. dtensor_rt_wait is called where the dtensor.wait was,
// and the output buffer becomes a tensor only there.

dtensor.mesh @tp shape = [4]
dtensor.mesh @m2 shape = [2, 4] names = ["dp", "tp"]

// CHECK-LABEL: func.func @async_all_gather(
// CHECK-SAME:      %[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[D0:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x4xf32>
// CHECK-NEXT:    %[[DIM:.*]] = arith.constant 1 : i64
// CHECK:         %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<?x4xf32> to memref<?x4xf32, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    %{{.*}} = arith.constant 0 : index
// CHECK-NEXT:    %[[D0C:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x4xf32>
// CHECK-NEXT:    %[[COPY:.*]] = memref.alloc(%[[D0C]]) : memref<?x4xf32>
// CHECK-NEXT:    memref.copy %[[IN]], %[[COPY]] : memref<?x4xf32, strided<[?, ?], offset: ?>> to memref<?x4xf32>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc(%[[D0]]) : memref<?x16xf32>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[COPY]] : memref<?x4xf32> to memref<*xf32>
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<?x16xf32> to memref<*xf32>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    %[[H:.*]] = call @dtensor_rt_start_all_gather_f32(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[DIM]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64) -> i64
// CHECK-NEXT:    %[[SUM:.*]] = arith.addf %[[X]], %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    call @dtensor_rt_wait(%[[CTX]], %[[H]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[G:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<?x16xf32> to tensor<?x16xf32>
// CHECK-NEXT:    return %[[SUM]], %[[G]]
func.func @async_all_gather(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x16xf32>) {
  %f = dtensor.async_start {
    %g = dtensor.all_gather %x on @m2 axes = [1] gather_dim = 1 : tensor<?x4xf32> -> tensor<?x16xf32>
    dtensor.yield %g : tensor<?x16xf32>
  } : !dtensor.future<tensor<?x16xf32>>
  %y = arith.addf %x, %x : tensor<?x4xf32>
  %g = dtensor.wait %f : !dtensor.future<tensor<?x16xf32>>
  return %y, %g : tensor<?x4xf32>, tensor<?x16xf32>
}

// Three starts in program order, waits in another order.
// CHECK-LABEL: func.func @async_three(
// CHECK-SAME:      %[[X:.*]]: tensor<4xi32>, %[[Y:.*]]: tensor<8x2xi64>, %[[Z:.*]]: tensor<2xf64>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK-NEXT:    %[[PERM:.*]] = arith.constant dense<[3, 0, 1, 2]> : tensor<4xi64>
// CHECK-NEXT:    %[[PERMB:.*]] = bufferization.to_buffer %[[PERM]] read_only
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<4xi32> to memref<4xi32, strided<[?], offset: ?>>
// CHECK-NEXT:    %[[COPY:.*]] = memref.alloc() : memref<4xi32>
// CHECK-NEXT:    memref.copy %[[IN]], %[[COPY]] : memref<4xi32, strided<[?], offset: ?>> to memref<4xi32>
// CHECK-NEXT:    %[[OUTP:.*]] = memref.alloc() : memref<4xi32>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[COPY]] : memref<4xi32> to memref<*xi32>
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUTP]] : memref<4xi32> to memref<*xi32>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[PERMU:.*]] = memref.cast %[[PERMB]] : memref<4xi64, strided<[?], offset: ?>> to memref<*xi64>
// CHECK-NEXT:    %[[HP:.*]] = call @dtensor_rt_start_permute_i32(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[PERMU]]) : (!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, memref<*xi64>) -> i64
// CHECK-NEXT:    %[[SPLIT:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[CONCAT:.*]] = arith.constant 1 : i64
// CHECK:         %[[IN:.*]] = bufferization.to_buffer %[[Y]] read_only
// CHECK-NEXT:    %[[COPY:.*]] = memref.alloc() : memref<8x2xi64>
// CHECK-NEXT:    memref.copy %[[IN]], %[[COPY]]
// CHECK-NEXT:    %[[OUTA:.*]] = memref.alloc() : memref<2x8xi64>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[COPY]] : memref<8x2xi64> to memref<*xi64>
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUTA]] : memref<2x8xi64> to memref<*xi64>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[HA:.*]] = call @dtensor_rt_start_all_to_all_i64(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[SPLIT]], %[[CONCAT]]) : (!llvm.ptr, memref<*xi64>, memref<*xi64>, i64, i64, i64, i64) -> i64
// CHECK-NEXT:    %[[ROOT:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[Z]] read_only
// CHECK-NEXT:    %[[COPY:.*]] = memref.alloc() : memref<2xf64>
// CHECK-NEXT:    memref.copy %[[IN]], %[[COPY]]
// CHECK-NEXT:    %[[OUTB:.*]] = memref.alloc() : memref<2xf64>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[COPY]] : memref<2xf64> to memref<*xf64>
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUTB]] : memref<2xf64> to memref<*xf64>
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[HB:.*]] = call @dtensor_rt_start_broadcast_f64(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[ROOT]]) : (!llvm.ptr, memref<*xf64>, memref<*xf64>, i64, i64, i64) -> i64
// CHECK-NEXT:    call @dtensor_rt_wait(%[[CTX]], %[[HA]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[A:.*]] = bufferization.to_tensor %[[OUTA]] restrict writable : memref<2x8xi64> to tensor<2x8xi64>
// CHECK-NEXT:    call @dtensor_rt_wait(%[[CTX]], %[[HB]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[B:.*]] = bufferization.to_tensor %[[OUTB]] restrict writable : memref<2xf64> to tensor<2xf64>
// CHECK-NEXT:    call @dtensor_rt_wait(%[[CTX]], %[[HP]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[P:.*]] = bufferization.to_tensor %[[OUTP]] restrict writable : memref<4xi32> to tensor<4xi32>
// CHECK-NEXT:    return %[[P]], %[[A]], %[[B]]
func.func @async_three(%x: tensor<4xi32>, %y: tensor<8x2xi64>, %z: tensor<2xf64>) -> (tensor<4xi32>, tensor<2x8xi64>, tensor<2xf64>) {
  %f0 = dtensor.async_start {
    %p = dtensor.permute %x on @tp axes = [0] perm = [3, 0, 1, 2] : tensor<4xi32>
    dtensor.yield %p : tensor<4xi32>
  } : !dtensor.future<tensor<4xi32>>
  %f1 = dtensor.async_start {
    %a = dtensor.all_to_all %y on @tp axes = [0] split_dim = 0 concat_dim = 1 : tensor<8x2xi64> -> tensor<2x8xi64>
    dtensor.yield %a : tensor<2x8xi64>
  } : !dtensor.future<tensor<2x8xi64>>
  %f2 = dtensor.async_start {
    %b = dtensor.broadcast %z on @m2 axes = [0] root = 1 : tensor<2xf64>
    dtensor.yield %b : tensor<2xf64>
  } : !dtensor.future<tensor<2xf64>>
  %a = dtensor.wait %f1 : !dtensor.future<tensor<2x8xi64>>
  %b = dtensor.wait %f2 : !dtensor.future<tensor<2xf64>>
  %p = dtensor.wait %f0 : !dtensor.future<tensor<4xi32>>
  return %p, %a, %b : tensor<4xi32>, tensor<2x8xi64>, tensor<2xf64>
}

// A coalesced collective starts one call per tensor; each future's wait
// completes its own handle.
// CHECK-LABEL: func.func @async_coalesced(
// CHECK-SAME:      %[[X:.*]]: tensor<8xf32>, %[[Y:.*]]: tensor<4x?xi64>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[OUTX:.*]] = memref.alloc() : memref<2xf32>
// CHECK:         %[[HX:.*]] = call @dtensor_rt_start_reduce_scatter_f32(%[[CTX]], 
// CHECK:         %[[D1:.*]] = tensor.dim %[[Y]], %{{.*}} : tensor<4x?xi64>
// CHECK:         %[[OUTY:.*]] = memref.alloc(%[[D1]]) : memref<1x?xi64>
// CHECK:         %[[HY:.*]] = call @dtensor_rt_start_reduce_scatter_i64(%[[CTX]], 
// CHECK-NEXT:    call @dtensor_rt_wait(%[[CTX]], %[[HY]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[W:.*]] = bufferization.to_tensor %[[OUTY]] restrict writable : memref<1x?xi64> to tensor<1x?xi64>
// CHECK-NEXT:    call @dtensor_rt_wait(%[[CTX]], %[[HX]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[V:.*]] = bufferization.to_tensor %[[OUTX]] restrict writable : memref<2xf32> to tensor<2xf32>
// CHECK-NEXT:    return %[[V]], %[[W]]
func.func @async_coalesced(%x: tensor<8xf32>, %y: tensor<4x?xi64>) -> (tensor<2xf32>, tensor<1x?xi64>) {
  %f:2 = dtensor.async_start {
    %a, %b = dtensor.reduce_scatter_coalesced %x, %y on @tp axes = [0] scatter_dims = [0, 0] reduce = min : tensor<8xf32>, tensor<4x?xi64> -> tensor<2xf32>, tensor<1x?xi64>
    dtensor.yield %a, %b : tensor<2xf32>, tensor<1x?xi64>
  } : !dtensor.future<tensor<2xf32>>, !dtensor.future<tensor<1x?xi64>>
  %w = dtensor.wait %f#1 : !dtensor.future<tensor<1x?xi64>>
  %v = dtensor.wait %f#0 : !dtensor.future<tensor<2xf32>>
  return %v, %w : tensor<2xf32>, tensor<1x?xi64>
}

// CHECK-LABEL: func.func @async_all_reduce(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf64>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK-NEXT:    %[[AVG:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only
// CHECK-NEXT:    %[[COPY:.*]] = memref.alloc() : memref<4xf64>
// CHECK-NEXT:    memref.copy %[[IN]], %[[COPY]]
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<4xf64>
// CHECK-NEXT:    %[[INU:.*]] = memref.cast %[[COPY]]
// CHECK-NEXT:    %[[OUTU:.*]] = memref.cast %[[OUT]]
// CHECK-NEXT:    %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 3 : i64
// CHECK-NEXT:    %[[H:.*]] = call @dtensor_rt_start_all_reduce_f64(%[[CTX]], %[[INU]], %[[OUTU]], %[[MESH]], %[[MASK]], %[[AVG]]) : (!llvm.ptr, memref<*xf64>, memref<*xf64>, i64, i64, i64) -> i64
// CHECK-NEXT:    call @dtensor_rt_wait(%[[CTX]], %[[H]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<4xf64> to tensor<4xf64>
// CHECK-NEXT:    return %[[R]]
// CHECK-DAG: func.func private @dtensor_rt_start_all_gather_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_start_permute_i32(!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, memref<*xi64>) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_start_all_to_all_i64(!llvm.ptr, memref<*xi64>, memref<*xi64>, i64, i64, i64, i64) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_start_broadcast_f64(!llvm.ptr, memref<*xf64>, memref<*xf64>, i64, i64, i64) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_start_reduce_scatter_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_start_reduce_scatter_i64(!llvm.ptr, memref<*xi64>, memref<*xi64>, i64, i64, i64, i64) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_start_all_reduce_f64(!llvm.ptr, memref<*xf64>, memref<*xf64>, i64, i64, i64) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_wait(!llvm.ptr, i64){{$}}
func.func @async_all_reduce(%x: tensor<4xf64>) -> tensor<4xf64> {
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @m2 axes = [0, 1] reduce = avg : tensor<4xf64>
    dtensor.yield %r : tensor<4xf64>
  } : !dtensor.future<tensor<4xf64>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf64>>
  return %y : tensor<4xf64>
}

// -----

// Fused ops become ring pipelines (docs/fusion.md): the group index from
// dtensor_rt_coord, one start_permute per step on a copy of the chunk in
// flight, the step's matmuls before its wait. all_gather_matmul shifts
// chunks to index i - 1, matmul_reduce_scatter accumulators to i + 1.

dtensor.mesh @tp shape = [4]
dtensor.mesh @grid shape = [2, 2]

// Group of 4: three shifts; the own chunk is multiplied before the first
// wait, each received one after its wait.
// CHECK-LABEL: func.func @all_gather_matmul(
// CHECK-SAME:      %[[A:.*]]: tensor<2x4xf32>, %[[B0:.*]]: tensor<4x3xf32>, %[[B1:.*]]: tensor<4x5xf32>) -> (tensor<8x4xf32>, tensor<8x3xf32>, tensor<8x5xf32>)
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[V:.*]] = call @dtensor_rt_coord(%[[MESH]], %[[MASK]]) : (i64, i64) -> i64
// CHECK-NEXT:    %[[R:.*]] = arith.index_cast %[[V]] : i64 to index
// CHECK-NEXT:    %[[PERM:.*]] = arith.constant dense<[3, 0, 1, 2]> : tensor<4xi64>
// CHECK:         %[[IN:.*]] = bufferization.to_buffer %[[A]] read_only : tensor<2x4xf32> to memref<2x4xf32, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    %[[COPY:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK-NEXT:    memref.copy %[[IN]], %[[COPY]]
// CHECK-NEXT:    %[[RECV1:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK:         %[[H1:.*]] = call @dtensor_rt_start_permute_f32(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, memref<*xi64>) -> i64
// CHECK:         linalg.matmul ins(%[[A]], %[[B0]] : tensor<2x4xf32>, tensor<4x3xf32>) outs(%{{.*}} : tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         linalg.matmul ins(%[[A]], %[[B1]] : tensor<2x4xf32>, tensor<4x5xf32>) outs(%{{.*}} : tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK:         tensor.insert_slice %[[A]] into %{{.*}} : tensor<2x4xf32> into tensor<8x4xf32>
// CHECK-NEXT:    call @dtensor_rt_wait(%[[CTX]], %[[H1]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[C1:.*]] = bufferization.to_tensor %[[RECV1]] restrict writable : memref<2x4xf32> to tensor<2x4xf32>
// CHECK:         %[[H2:.*]] = call @dtensor_rt_start_permute_f32(%[[CTX]], 
// CHECK:         linalg.matmul ins(%[[C1]], %[[B0]] : tensor<2x4xf32>, tensor<4x3xf32>)
// CHECK:         linalg.matmul ins(%[[C1]], %[[B1]] : tensor<2x4xf32>, tensor<4x5xf32>)
// CHECK:         call @dtensor_rt_wait(%[[CTX]], %[[H2]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[C2:.*]] = bufferization.to_tensor
// CHECK:         %[[H3:.*]] = call @dtensor_rt_start_permute_f32(%[[CTX]], 
// CHECK:         linalg.matmul ins(%[[C2]], %[[B0]] : tensor<2x4xf32>, tensor<4x3xf32>)
// CHECK:         linalg.matmul ins(%[[C2]], %[[B1]] : tensor<2x4xf32>, tensor<4x5xf32>)
// CHECK:         call @dtensor_rt_wait(%[[CTX]], %[[H3]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[C3:.*]] = bufferization.to_tensor
// CHECK-NOT:     call
// CHECK:         linalg.matmul ins(%[[C3]], %[[B0]] : tensor<2x4xf32>, tensor<4x3xf32>)
// CHECK:         linalg.matmul ins(%[[C3]], %[[B1]] : tensor<2x4xf32>, tensor<4x5xf32>)
// CHECK:         %[[G:.*]] = tensor.insert_slice %[[C3]] into %{{.*}} : tensor<2x4xf32> into tensor<8x4xf32>
// CHECK-NEXT:    return %[[G]], %{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<8x3xf32>, tensor<8x5xf32>
func.func @all_gather_matmul(%a: tensor<2x4xf32>, %b0: tensor<4x3xf32>, %b1: tensor<4x5xf32>) -> (tensor<8x4xf32>, tensor<8x3xf32>, tensor<8x5xf32>) {
  %g, %c0, %c1 = dtensor.all_gather_matmul %a, %b0, %b1 on @tp axes = [0] gather_dim = 0 : tensor<2x4xf32>, tensor<4x3xf32>, tensor<4x5xf32> -> tensor<8x4xf32>, tensor<8x3xf32>, tensor<8x5xf32>
  return %g, %c0, %c1 : tensor<8x4xf32>, tensor<8x3xf32>, tensor<8x5xf32>
}

// Rank-3 A, gathered along dim 1 over mesh axis 0 of @grid (mesh 1, mask
// 1): chunks are multiplied on their flattened rows.
// CHECK-LABEL: func.func @all_gather_matmul_rank3(
// CHECK-SAME:      %[[A:.*]]: tensor<2x3x4xf64>, %[[B:.*]]: tensor<4x5xf64>) -> tensor<2x6x5xf64>
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_coord(%[[MESH]], %[[MASK]]) : (i64, i64) -> i64
// CHECK:         arith.constant dense<[1, 0]> : tensor<2xi64>
// CHECK:         memref.copy %{{.*}}, %{{.*}} : memref<2x3x4xf64, strided<[?, ?, ?], offset: ?>> to memref<2x3x4xf64>
// CHECK-NEXT:    %[[RECV:.*]] = memref.alloc() : memref<2x3x4xf64>
// CHECK:         %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[PERMU:.*]] = memref.cast
// CHECK-NEXT:    %[[H:.*]] = call @dtensor_rt_start_permute_f64(%[[CTX]], %{{.*}}, %{{.*}}, %[[MESH]], %[[MASK]], %[[PERMU]]) : (!llvm.ptr, memref<*xf64>, memref<*xf64>, i64, i64, memref<*xi64>) -> i64
// CHECK:         %[[FLAT:.*]] = tensor.collapse_shape %[[A]] {{\[\[}}0, 1], [2]] : tensor<2x3x4xf64> into tensor<6x4xf64>
// CHECK:         linalg.matmul ins(%[[FLAT]], %[[B]] : tensor<6x4xf64>, tensor<4x5xf64>) outs(%{{.*}} : tensor<6x5xf64>) -> tensor<6x5xf64>
// CHECK:         tensor.insert_slice %{{.*}} into %{{.*}}[0, %{{.*}}, 0] [2, 3, 5] [1, 1, 1] : tensor<2x3x5xf64> into tensor<2x6x5xf64>
// CHECK-NEXT:    call @dtensor_rt_wait(%[[CTX]], %[[H]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[C:.*]] = bufferization.to_tensor %[[RECV]] restrict writable : memref<2x3x4xf64> to tensor<2x3x4xf64>
// CHECK-NOT:     call
// CHECK:         tensor.collapse_shape %[[C]] {{\[\[}}0, 1], [2]] : tensor<2x3x4xf64> into tensor<6x4xf64>
// CHECK:         linalg.matmul
// CHECK:         %[[OUT:.*]] = tensor.insert_slice %{{.*}} : tensor<2x3x5xf64> into tensor<2x6x5xf64>
// CHECK-NEXT:    return %[[OUT]] : tensor<2x6x5xf64>
func.func @all_gather_matmul_rank3(%a: tensor<2x3x4xf64>, %b: tensor<4x5xf64>) -> tensor<2x6x5xf64> {
  %g, %c = dtensor.all_gather_matmul %a, %b on @grid axes = [0] gather_dim = 1 : tensor<2x3x4xf64>, tensor<4x5xf64> -> tensor<2x6x4xf64>, tensor<2x6x5xf64>
  return %c : tensor<2x6x5xf64>
}

// In an async_start the pipeline runs where the start was; the waits of
// its futures are replaced by its results.
// CHECK-LABEL: func.func @all_gather_matmul_async(
// CHECK-SAME:      %[[A:.*]]: tensor<2x4xi32>, %[[B:.*]]: tensor<4x3xi32>) -> tensor<4x3xi32>
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    call @dtensor_rt_coord(%[[MESH]], %[[MASK]]) : (i64, i64) -> i64
// CHECK:         memref.copy %{{.*}}, %{{.*}} : memref<2x4xi32, strided<[?, ?], offset: ?>> to memref<2x4xi32>
// CHECK-NEXT:    %[[RECV:.*]] = memref.alloc() : memref<2x4xi32>
// CHECK:         %[[H:.*]] = call @dtensor_rt_start_permute_i32(%[[CTX]], 
// CHECK:         linalg.matmul ins(%[[A]], %[[B]] : tensor<2x4xi32>, tensor<4x3xi32>)
// CHECK:         call @dtensor_rt_wait(%[[CTX]], %[[H]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[C:.*]] = bufferization.to_tensor %[[RECV]] restrict writable : memref<2x4xi32> to tensor<2x4xi32>
// CHECK:         linalg.matmul ins(%[[C]], %[[B]] : tensor<2x4xi32>, tensor<4x3xi32>)
// CHECK:         %[[OUT:.*]] = tensor.insert_slice %{{.*}} : tensor<2x3xi32> into tensor<4x3xi32>
// CHECK-NEXT:    return %[[OUT]] : tensor<4x3xi32>
func.func @all_gather_matmul_async(%a: tensor<2x4xi32>, %b: tensor<4x3xi32>) -> tensor<4x3xi32> {
  %f:2 = dtensor.async_start {
    %g, %c = dtensor.all_gather_matmul %a, %b on @grid axes = [1] gather_dim = 0 : tensor<2x4xi32>, tensor<4x3xi32> -> tensor<4x4xi32>, tensor<4x3xi32>
    dtensor.yield %g, %c : tensor<4x4xi32>, tensor<4x3xi32>
  } : !dtensor.future<tensor<4x4xi32>>, !dtensor.future<tensor<4x3xi32>>
  %c = dtensor.wait %f#1 : !dtensor.future<tensor<4x3xi32>>
  %g = dtensor.wait %f#0 : !dtensor.future<tensor<4x4xi32>>
  return %c : tensor<4x3xi32>
}

// Group of 4: the accumulator travels three times; each received one is
// added to the partial product computed while it was in flight.
// CHECK-LABEL: func.func @matmul_reduce_scatter(
// CHECK-SAME:      %[[A:.*]]: tensor<4x8xf64>, %[[B:.*]]: tensor<8x6xf64>) -> tensor<1x6xf64>
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[MESH:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_coord(%[[MESH]], %[[MASK]]) : (i64, i64) -> i64
// CHECK:         %[[P0:.*]] = linalg.matmul ins(%{{.*}}, %[[B]] : tensor<1x8xf64>, tensor<8x6xf64>)
// CHECK-NEXT:    arith.constant dense<[1, 2, 3, 0]> : tensor<4xi64>
// CHECK-NEXT:    bufferization.to_buffer
// CHECK-NEXT:    bufferization.to_buffer %[[P0]] read_only : tensor<1x6xf64> to memref<1x6xf64, strided<[?, ?], offset: ?>>
// CHECK-NEXT:    memref.alloc() : memref<1x6xf64>
// CHECK-NEXT:    memref.copy
// CHECK-NEXT:    %[[RECV:.*]] = memref.alloc() : memref<1x6xf64>
// CHECK:         %[[H:.*]] = call @dtensor_rt_start_permute_f64(%[[CTX]], 
// CHECK:         %[[P1:.*]] = linalg.matmul ins(%{{.*}}, %[[B]] : tensor<1x8xf64>, tensor<8x6xf64>)
// CHECK-NEXT:    call @dtensor_rt_wait(%[[CTX]], %[[H]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    %[[ACC:.*]] = bufferization.to_tensor %[[RECV]] restrict writable : memref<1x6xf64> to tensor<1x6xf64>
// CHECK-NEXT:    tensor.empty() : tensor<1x6xf64>
// CHECK-NEXT:    linalg.add ins(%[[ACC]], %[[P1]] : tensor<1x6xf64>, tensor<1x6xf64>)
// CHECK:         call @dtensor_rt_start_permute_f64(%[[CTX]], 
// CHECK:         call @dtensor_rt_wait(
// CHECK:         call @dtensor_rt_start_permute_f64(%[[CTX]], 
// CHECK:         %[[P3:.*]] = linalg.matmul
// CHECK-NEXT:    call @dtensor_rt_wait(
// CHECK-NEXT:    %[[ACC:.*]] = bufferization.to_tensor
// CHECK-NEXT:    tensor.empty() : tensor<1x6xf64>
// CHECK-NEXT:    %[[SUM:.*]] = linalg.add ins(%[[ACC]], %[[P3]] : tensor<1x6xf64>, tensor<1x6xf64>)
// CHECK-NEXT:    return %[[SUM]] : tensor<1x6xf64>
func.func @matmul_reduce_scatter(%a: tensor<4x8xf64>, %b: tensor<8x6xf64>) -> tensor<1x6xf64> {
  %c = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<4x8xf64>, tensor<8x6xf64> -> tensor<1x6xf64>
  return %c : tensor<1x6xf64>
}

// Scatter along the last dim (column blocks of B), avg (an integer
// division by the group size at the end), asynchronous.
// CHECK-LABEL: func.func @matmul_reduce_scatter_async(
// CHECK-SAME:      %[[A:.*]]: tensor<4x8xi64>, %[[B:.*]]: tensor<8x6xi64>) -> tensor<4x3xi64>
// CHECK-NEXT:    %[[CTX:.*]] = call @dtensor_rt_context() : () -> !llvm.ptr
// CHECK:         %[[MESH:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MASK:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    call @dtensor_rt_coord(%[[MESH]], %[[MASK]]) : (i64, i64) -> i64
// CHECK:         tensor.extract_slice %[[B]][0, %{{.*}}] [8, 3] [1, 1] : tensor<8x6xi64> to tensor<8x3xi64>
// CHECK:         linalg.matmul ins(%[[A]], %{{.*}} : tensor<4x8xi64>, tensor<8x3xi64>)
// CHECK:         %[[H:.*]] = call @dtensor_rt_start_permute_i64(%[[CTX]], 
// CHECK:         call @dtensor_rt_wait(%[[CTX]], %[[H]]) : (!llvm.ptr, i64) -> ()
// CHECK-NOT:     call
// CHECK:         linalg.add
// CHECK:         arith.divsi %{{.*}}, %{{.*}} : i64
// CHECK:         return %{{.*}} : tensor<4x3xi64>
// CHECK-DAG: func.func private @dtensor_rt_coord(i64, i64) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_start_permute_f32(!llvm.ptr, memref<*xf32>, memref<*xf32>, i64, i64, memref<*xi64>) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_start_permute_f64(!llvm.ptr, memref<*xf64>, memref<*xf64>, i64, i64, memref<*xi64>) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_start_permute_i32(!llvm.ptr, memref<*xi32>, memref<*xi32>, i64, i64, memref<*xi64>) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_start_permute_i64(!llvm.ptr, memref<*xi64>, memref<*xi64>, i64, i64, memref<*xi64>) -> i64{{$}}
// CHECK-DAG: func.func private @dtensor_rt_wait(!llvm.ptr, i64){{$}}
func.func @matmul_reduce_scatter_async(%a: tensor<4x8xi64>, %b: tensor<8x6xi64>) -> tensor<4x3xi64> {
  %f = dtensor.async_start {
    %c = dtensor.matmul_reduce_scatter %a, %b on @grid axes = [0] scatter_dim = 1 reduce = avg : tensor<4x8xi64>, tensor<8x6xi64> -> tensor<4x3xi64>
    dtensor.yield %c : tensor<4x3xi64>
  } : !dtensor.future<tensor<4x3xi64>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4x3xi64>>
  return %y : tensor<4x3xi64>
}

// -----

// Ops without a bufferization model are expanded.

// Embedding lookup: out[b..., j] = table[ids[b..., 0], j], ids cast to
// index where needed. (Constants are not folded or hoisted here: the pass
// rewrites only what it lowers; the pipeline canonicalizes after it.)
// CHECK-LABEL: func.func @embedding(
// CHECK-SAME:      %[[T:.*]]: tensor<16x8xf32>, %[[IDS:.*]]: tensor<?x3x1xi32>) -> tensor<?x3x8xf32>
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[B:.*]] = tensor.dim %[[IDS]], %[[C0]] : tensor<?x3x1xi32>
// CHECK-NEXT:    %[[INIT:.*]] = tensor.empty(%[[B]]) : tensor<?x3x8xf32>
// CHECK-NEXT:    %[[G:.*]] = linalg.generic {indexing_maps = [#{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} outs(%[[INIT]] : tensor<?x3x8xf32>) {
// CHECK-NEXT:    ^bb0(%{{.*}}: f32):
// CHECK-NEXT:      %[[I0:.*]] = linalg.index 0 : index
// CHECK-NEXT:      %[[I1:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[C0B:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[ID:.*]] = tensor.extract %[[IDS]][%[[I0]], %[[I1]], %[[C0B]]] : tensor<?x3x1xi32>
// CHECK-NEXT:      %[[ROW:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK-NEXT:      %[[COL:.*]] = linalg.index 2 : index
// CHECK-NEXT:      %[[V:.*]] = tensor.extract %[[T]][%[[ROW]], %[[COL]]] : tensor<16x8xf32>
// CHECK-NEXT:      linalg.yield %[[V]] : f32
// CHECK-NEXT:    } -> tensor<?x3x8xf32>
// CHECK-NEXT:    return %[[G]]
func.func @embedding(%table: tensor<16x8xf32>, %ids: tensor<?x3x1xi32>) -> tensor<?x3x8xf32> {
  %g = tensor.gather %table[%ids] gather_dims([0]) : (tensor<16x8xf32>, tensor<?x3x1xi32>) -> tensor<?x3x8xf32>
  return %g : tensor<?x3x8xf32>
}

// CHECK-LABEL: func.func @embedding_index(
// CHECK-SAME:      %[[T:.*]]: tensor<16x8xi64>, %[[IDS:.*]]: tensor<4x1xindex>) -> tensor<4x8xi64>
// CHECK:         linalg.generic
// CHECK:           %[[ID:.*]] = tensor.extract %[[IDS]][%{{.*}}, %{{.*}}] : tensor<4x1xindex>
// CHECK-NEXT:      %[[COL:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[V:.*]] = tensor.extract %[[T]][%[[ID]], %[[COL]]] : tensor<16x8xi64>
// CHECK-NEXT:      linalg.yield %[[V]] : i64
// CHECK-NOT:     tensor.gather
func.func @embedding_index(%table: tensor<16x8xi64>, %ids: tensor<4x1xindex>) -> tensor<4x8xi64> {
  %g = tensor.gather %table[%ids] gather_dims([0]) unique : (tensor<16x8xi64>, tensor<4x1xindex>) -> tensor<4x8xi64>
  return %g : tensor<4x8xi64>
}

// CHECK-LABEL: func.func @concat(
// CHECK-SAME:      %[[A:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         %[[D:.*]] = tensor.dim %[[B]], %{{.*}} : tensor<?x4xf32>
// CHECK-NEXT:    %[[N:.*]] = affine.apply #{{.*}}()[%[[D]]]
// CHECK-NEXT:    %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x4xf32>
// CHECK-NEXT:    %[[I0:.*]] = tensor.insert_slice %[[A]] into %[[E]][0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<?x4xf32>
// CHECK-NEXT:    %[[I1:.*]] = tensor.insert_slice %[[B]] into %[[I0]][2, 0] [%[[D]], 4] [1, 1] : tensor<?x4xf32> into tensor<?x4xf32>
// CHECK-NEXT:    return %[[I1]]
func.func @concat(%a: tensor<2x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c = tensor.concat dim(0) %a, %b : (tensor<2x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %c : tensor<?x4xf32>
}

// Softmax: max, exp(x - max), sum, divide.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:      %[[X:.*]]: tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NOT:     linalg.softmax
// CHECK:         %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<2x8xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK:           arith.maxnumf
// CHECK:         %[[EXP:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[MAX]] : tensor<2x8xf32>, tensor<2xf32>) outs(%{{.*}} : tensor<2x8xf32>)
// CHECK:           arith.subf
// CHECK-NEXT:      math.exp
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[EXP]] : tensor<2x8xf32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK:           arith.addf
// CHECK:         %[[DIV:.*]] = linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]] : tensor<2x8xf32>, tensor<2xf32>) outs(%{{.*}} : tensor<2x8xf32>)
// CHECK:           arith.divf
// CHECK:         return %[[DIV]]
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %e = tensor.empty() : tensor<2x8xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) -> tensor<2x8xf32>
  return %s : tensor<2x8xf32>
}

// -----

// dtensor attributes go (function, argument, result and op attributes,
// others stay); public functions get llvm.emit_c_interface, private ones
// do not; meshes are removed (NODT above).

dtensor.mesh @tp shape = [4]

// CHECK-LABEL: func.func @public_entry(
// CHECK-SAME:      %[[X:.*]]: tensor<4xf32> {llvm.noalias}) -> tensor<4xf32> attributes {llvm.emit_c_interface} {
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[Y:.*]] = linalg.add {keep} ins(%[[X]], %[[X]] : tensor<4xf32>, tensor<4xf32>) outs(%[[E]] : tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[Z:.*]] = call @private_helper(%[[Y]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    return %[[Z]] : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @private_helper(%{{.*}}: tensor<4xf32>) -> tensor<4xf32> {
func.func @public_entry(%x: tensor<4xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>, llvm.noalias})
    -> (tensor<4xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) attributes {dtensor.mesh = @tp} {
  %e = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<4xf32>
  %y = linalg.add {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>], dtensor.module = "mlp.fc1", keep} ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %z = func.call @private_helper(%y) : (tensor<4xf32>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}

func.func private @private_helper(%x: tensor<4xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>}) -> tensor<4xf32> attributes {dtensor.mesh = @tp} {
  return %x : tensor<4xf32>
}

// -----

// Futures carried by structured control flow become a (handle, output
// buffer) pair: the start before the loop, the wait in the body, a new
// start yielded to the next iteration, the last wait after the loop; the
// same through scf.while and scf.if.

dtensor.mesh @tp shape = [4]

// CHECK-LABEL: func.func @carried_for(
// CHECK:         %[[OUT0:.*]] = memref.alloc() : memref<16xf32>
// CHECK:         %[[H0:.*]] = call @dtensor_rt_start_all_gather_f32(
// CHECK:         %[[R:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %{{.*}}, %[[H:.*]] = %[[H0]], %[[B:.*]] = %[[OUT0]]) -> (tensor<16xf32>, i64, memref<16xf32>) {
// CHECK:           func.call @dtensor_rt_wait(%{{.*}}, %[[H]])
// CHECK:           %[[G:.*]] = bufferization.to_tensor %[[B]] restrict writable
// CHECK:           %[[OUT:.*]] = memref.alloc() : memref<16xf32>
// CHECK:           %[[HN:.*]] = func.call @dtensor_rt_start_all_gather_f32(
// CHECK:           scf.yield %{{.*}}, %[[HN]], %[[OUT]] : tensor<16xf32>, i64, memref<16xf32>
// CHECK:         call @dtensor_rt_wait(%{{.*}}, %[[R]]#1)
// CHECK:         bufferization.to_tensor %[[R]]#2
// CHECK-NOT:     unrealized_conversion_cast
func.func @carried_for(%x: tensor<4xf32>, %n: index) -> (tensor<16xf32>, tensor<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f0 = dtensor.async_start {
    %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = 0 : tensor<4xf32> -> tensor<16xf32>
    dtensor.yield %g : tensor<16xf32>
  } : !dtensor.future<tensor<16xf32>>
  %e = tensor.empty() : tensor<16xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %e, %f = %f0)
      -> (tensor<16xf32>, !dtensor.future<tensor<16xf32>>) {
    %g = dtensor.wait %f : !dtensor.future<tensor<16xf32>>
    %fn = dtensor.async_start {
      %g2 = dtensor.all_gather %x on @tp axes = [0] gather_dim = 0 : tensor<4xf32> -> tensor<16xf32>
      dtensor.yield %g2 : tensor<16xf32>
    } : !dtensor.future<tensor<16xf32>>
    %s_e = tensor.empty() : tensor<16xf32>
    %s = linalg.add ins(%a, %g : tensor<16xf32>, tensor<16xf32>) outs(%s_e : tensor<16xf32>) -> tensor<16xf32>
    scf.yield %s, %fn : tensor<16xf32>, !dtensor.future<tensor<16xf32>>
  }
  %last = dtensor.wait %r#1 : !dtensor.future<tensor<16xf32>>
  return %r#0, %last : tensor<16xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @carried_while_if(
// CHECK:         scf.while (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) : (i64, memref<4xf32>) -> (i64, memref<4xf32>) {
// CHECK:           scf.condition(%{{.*}}) %{{.*}}, %{{.*}} : i64, memref<4xf32>
// CHECK:         } do {
// CHECK:           func.call @dtensor_rt_wait
// CHECK:           scf.if %{{.*}} -> (i64, memref<4xf32>) {
// CHECK:             func.call @dtensor_rt_start_all_reduce_f32(
// CHECK:           } else {
// CHECK:             func.call @dtensor_rt_start_all_reduce_f32(
// CHECK:         call @dtensor_rt_wait
// CHECK-NOT:     unrealized_conversion_cast
func.func @carried_while_if(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %w = scf.while (%g = %f) : (!dtensor.future<tensor<4xf32>>)
      -> !dtensor.future<tensor<4xf32>> {
    scf.condition(%c) %g : !dtensor.future<tensor<4xf32>>
  } do {
  ^bb0(%h: !dtensor.future<tensor<4xf32>>):
    %y = dtensor.wait %h : !dtensor.future<tensor<4xf32>>
    %b = scf.if %c -> !dtensor.future<tensor<4xf32>> {
      %t = dtensor.async_start {
        %r = dtensor.all_reduce %y on @tp axes = [0] reduce = max : tensor<4xf32>
        dtensor.yield %r : tensor<4xf32>
      } : !dtensor.future<tensor<4xf32>>
      scf.yield %t : !dtensor.future<tensor<4xf32>>
    } else {
      %t = dtensor.async_start {
        %r = dtensor.all_reduce %y on @tp axes = [0] reduce = min : tensor<4xf32>
        dtensor.yield %r : tensor<4xf32>
      } : !dtensor.future<tensor<4xf32>>
      scf.yield %t : !dtensor.future<tensor<4xf32>>
    }
    scf.yield %b : !dtensor.future<tensor<4xf32>>
  }
  %z = dtensor.wait %w : !dtensor.future<tensor<4xf32>>
  return %z : tensor<4xf32>
}

//--- errors.mlir

func.func @routed_complex(%x: tensor<4x2xcomplex<f32>>, %ids: tensor<4x1xi64>, %w: tensor<2x2x3xcomplex<f32>>) -> tensor<4x1x3xcomplex<f32>> {
  // expected-error @below {{routed_matmul on 'complex<f32>' elements cannot be lowered (floats and signless integers can)}}
  %y = dtensor.routed_matmul %x, %ids, %w : tensor<4x2xcomplex<f32>>, tensor<4x1xi64>, tensor<2x2x3xcomplex<f32>> -> tensor<4x1x3xcomplex<f32>>
  return %y : tensor<4x1x3xcomplex<f32>>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @i16(%x: tensor<4xi16>) -> tensor<4xi16> {
  // expected-error @below {{the runtime has no collectives on 'i16' (supported: f32, f64, i32, i64, bf16, f16)}}
  %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xi16>
  return %r : tensor<4xi16>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @i8_async(%x: tensor<4xi8>) -> tensor<16xi8> {
  %f = dtensor.async_start {
    // expected-error @below {{the runtime has no collectives on 'i8' (supported: f32, f64, i32, i64, bf16, f16)}}
    %r = dtensor.all_gather %x on @tp axes = [0] gather_dim = 0 : tensor<4xi8> -> tensor<16xi8>
    dtensor.yield %r : tensor<16xi8>
  } : !dtensor.future<tensor<16xi8>>
  %y = dtensor.wait %f : !dtensor.future<tensor<16xi8>>
  return %y : tensor<16xi8>
}

// -----

dtensor.mesh @tp shape = [4]

// One operand of a coalesced op is enough.
func.func @coalesced_i16(%x: tensor<4xf32>, %y: tensor<8xi16>) -> (tensor<4xf32>, tensor<8xi16>) {
  // expected-error @below {{the runtime has no collectives on 'i16'}}
  %a, %b = dtensor.all_reduce_coalesced %x, %y on @tp axes = [0] reduce = sum : tensor<4xf32>, tensor<8xi16>
  return %a, %b : tensor<4xf32>, tensor<8xi16>
}

// -----

dtensor.mesh @tp shape = [4]

// The ring permutes of a fused op report at the fused op.
func.func @fused_i8(%a: tensor<2x4xi8>, %b: tensor<4x3xi8>) -> tensor<8x3xi8> {
  // expected-error @below {{the runtime has no collectives on 'i8'}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0 : tensor<2x4xi8>, tensor<4x3xi8> -> tensor<8x4xi8>, tensor<8x3xi8>
  return %c : tensor<8x3xi8>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @index_elements(%x: tensor<4xindex>) -> tensor<4xindex> {
  // expected-error @below {{the runtime has no collectives on 'index'}}
  %y = dtensor.broadcast %x on @tp axes = [0] root = 0 : tensor<4xindex>
  return %y : tensor<4xindex>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @global_view(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{cannot lower this op to the runtime; partition the program first}}
  %y = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @redistribute(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{cannot lower this op to the runtime; partition the program first}}
  %y = dtensor.redistribute %x from <@tp, [S(0)]> to <@tp, [R]> : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Only rank-reduced 2-D embedding lookups are expanded.
func.func @gather_3d(%t: tensor<4x4x4xf32>, %i: tensor<2x1xindex>) -> tensor<2x4x4xf32> {
  // expected-error @below {{only rank-reduced 2-D embedding lookups (gather_dims([0])) can be lowered}}
  %g = tensor.gather %t[%i] gather_dims([0]) : (tensor<4x4x4xf32>, tensor<2x1xindex>) -> tensor<2x4x4xf32>
  return %g : tensor<2x4x4xf32>
}

//--- unverified.mlir

dtensor.mesh @tp shape = [4]

func.func @collective(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{@nope does not name a dtensor.mesh}}
  %y = dtensor.all_reduce %x on @nope axes = [0] reduce = sum : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @async_collective(%x: tensor<4xf32>) -> tensor<4xf32> {
  %f = dtensor.async_start {
    // expected-error @below {{@nope does not name a dtensor.mesh}}
    %r = dtensor.all_reduce %x on @nope axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  %y = dtensor.wait %f : !dtensor.future<tensor<4xf32>>
  return %y : tensor<4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @fused(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) -> tensor<8x3xf32> {
  // expected-error @below {{@nope does not name a dtensor.mesh}}
  %g, %c = dtensor.all_gather_matmul %a, %b on @nope axes = [0] gather_dim = 0 : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<8x4xf32>, tensor<8x3xf32>
  return %c : tensor<8x3xf32>
}

// -----

func.func @coord() -> index {
  // expected-error @below {{@nope does not name a dtensor.mesh}}
  %c = dtensor.coord @nope axes = [0] : index
  return %c : index
}
