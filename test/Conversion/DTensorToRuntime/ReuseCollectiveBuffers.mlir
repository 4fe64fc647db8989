// RUN: dtensor-opt %s --dtensor-lower-to-runtime | mlir-opt --one-shot-bufferize='bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map allow-return-allocs-from-loops' --canonicalize > %t.buffers.mlir
// RUN: dtensor-opt %t.buffers.mlir --pass-pipeline='builtin.module(func.func(dtensor-reuse-collective-buffers))' | FileCheck %s
// RUN: FileCheck %s --check-prefix=BEFORE < %t.buffers.mlir

// The buffer rules of collectives after bufferization: an all_reduce whose
// input dies at it reduces in place, otherwise into a fresh buffer; a
// started collective reads its input itself unless something may write it
// before the wait. Inputs are per-rank programs; the lowering
// (dtensor-lower-to-runtime) and One-Shot Bufferize run first, as in the
// dtensor-cpu-lowering pipeline.

// Before the pass every collective has a fresh output and every start a
// private input copy.
// BEFORE-LABEL: func.func @async_dies(
// BEFORE:         memref.copy
// BEFORE:         call @dtensor_rt_start_all_reduce_f32

dtensor.mesh @m shape = [2]

#id = affine_map<(i) -> (i)>

// The product dies at the all_reduce: reduced in place, no fresh buffer.
// CHECK-LABEL: func.func @dies(
// CHECK:         %[[Y:.*]] = memref.alloc()
// CHECK-NOT:     memref.alloc
// CHECK-DAG:     memref.cast %[[Y]]
// CHECK-DAG:     memref.cast %[[Y]]
// CHECK-NOT:     memref.alloc
// CHECK:         call @dtensor_rt_all_reduce_f32(%{{[^,]*}}, %cast{{[_0-9]*}}, %cast{{[_0-9]*}},
// CHECK:         return %[[Y]]
func.func @dies(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y_e = tensor.empty() : tensor<8xf32>
  %y = linalg.mul ins(%x, %x : tensor<8xf32>, tensor<8xf32>) outs(%y_e : tensor<8xf32>) -> tensor<8xf32>
  %r = dtensor.all_reduce %y on @m axes = [0] reduce = sum : tensor<8xf32>
  return %r : tensor<8xf32>
}

// The product is read after the all_reduce: it must not change, the result
// goes to a fresh buffer.
// CHECK-LABEL: func.func @used_after(
// CHECK:         %[[Y:.*]] = memref.alloc()
// CHECK:         %[[R:.*]] = memref.alloc()
// CHECK-DAG:     %[[IN:.*]] = memref.cast %[[Y]]
// CHECK-DAG:     %[[OUT:.*]] = memref.cast %[[R]]
// CHECK:         call @dtensor_rt_all_reduce_f32(%{{.*}}, %[[IN]], %[[OUT]],
func.func @used_after(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y_e = tensor.empty() : tensor<8xf32>
  %y = linalg.mul ins(%x, %x : tensor<8xf32>, tensor<8xf32>) outs(%y_e : tensor<8xf32>) -> tensor<8xf32>
  %r = dtensor.all_reduce %y on @m axes = [0] reduce = sum : tensor<8xf32>
  %z_e = tensor.empty() : tensor<8xf32>
  %z = linalg.add ins(%r, %y : tensor<8xf32>, tensor<8xf32>) outs(%z_e : tensor<8xf32>) -> tensor<8xf32>
  return %z : tensor<8xf32>
}

// A function argument is never written, even where it dies.
// CHECK-LABEL: func.func @argument(
// CHECK-SAME:      %[[X:.*]]: memref<8xf32>)
// CHECK:         %[[R:.*]] = memref.alloc()
// CHECK-DAG:     %[[IN:.*]] = memref.cast %[[X]]
// CHECK-DAG:     %[[OUT:.*]] = memref.cast %[[R]]
// CHECK:         call @dtensor_rt_all_reduce_f32(%{{.*}}, %[[IN]], %[[OUT]],
// CHECK:         return %[[R]]
func.func @argument(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = dtensor.all_reduce %x on @m axes = [0] reduce = sum : tensor<8xf32>
  return %r : tensor<8xf32>
}

// A coalesced all_reduce of one tensor twice: the first call's input is
// still read by the second, so only the second reduces in place; the two
// outputs stay distinct.
// CHECK-LABEL: func.func @coalesced(
// CHECK:         %[[Y:.*]] = memref.alloc()
// CHECK:         %[[R0:.*]] = memref.alloc()
// CHECK:         %[[OUT0:.*]] = memref.cast %[[R0]]
// CHECK:         call @dtensor_rt_all_reduce_f32(%{{.*}}, %{{.*}}, %[[OUT0]],
// CHECK-DAG:     memref.cast %[[Y]]
// CHECK-DAG:     memref.cast %[[Y]]
// CHECK-NOT:     memref.alloc
// CHECK:         call @dtensor_rt_all_reduce_f32(
// CHECK:         return %[[R0]], %[[Y]]
func.func @coalesced(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %y_e = tensor.empty() : tensor<8xf32>
  %y = linalg.mul ins(%x, %x : tensor<8xf32>, tensor<8xf32>) outs(%y_e : tensor<8xf32>) -> tensor<8xf32>
  %r:2 = dtensor.all_reduce_coalesced %y, %y on @m axes = [0] reduce = sum : tensor<8xf32>, tensor<8xf32>
  return %r#0, %r#1 : tensor<8xf32>, tensor<8xf32>
}

// Started: nothing writes the product before the wait, so the lowering's
// input copy goes; it dies at the all_reduce, which runs in place.
// CHECK-LABEL: func.func @async_dies(
// CHECK-NOT:     memref.copy
// CHECK:         %[[Y:.*]] = memref.alloc()
// CHECK-DAG:     memref.cast %[[Y]]
// CHECK-DAG:     memref.cast %[[Y]]
// CHECK-NOT:     memref.alloc
// CHECK:         %[[H:.*]] = call @dtensor_rt_start_all_reduce_f32(%{{[^,]*}}, %cast{{[_0-9]*}}, %cast{{[_0-9]*}},
// CHECK-NOT:     memref.copy
// CHECK:         call @dtensor_rt_wait(%{{.*}}, %[[H]])
func.func @async_dies(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y_e = tensor.empty() : tensor<8xf32>
  %y = linalg.mul ins(%x, %x : tensor<8xf32>, tensor<8xf32>) outs(%y_e : tensor<8xf32>) -> tensor<8xf32>
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %y on @m axes = [0] reduce = sum : tensor<8xf32>
    dtensor.yield %r : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %a_e = tensor.empty() : tensor<8xf32>
  %a = linalg.add ins(%x, %x : tensor<8xf32>, tensor<8xf32>) outs(%a_e : tensor<8xf32>) -> tensor<8xf32>
  %r = dtensor.wait %f : !dtensor.future<tensor<8xf32>>
  %s_e = tensor.empty() : tensor<8xf32>
  %s = linalg.add ins(%r, %a : tensor<8xf32>, tensor<8xf32>) outs(%s_e : tensor<8xf32>) -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// Bufferization writes the generic's result into the product's buffer while
// the all_gather still reads it: the copy stays.
// CHECK-LABEL: func.func @async_overwritten(
// CHECK:         %[[Y:.*]] = memref.alloc()
// CHECK:         %[[C:.*]] = memref.alloc()
// CHECK:         memref.copy %[[Y]], %[[C]]
// CHECK:         %[[IN:.*]] = memref.cast %[[C]]
// CHECK:         call @dtensor_rt_start_all_gather_f32(%{{.*}}, %[[IN]],
// CHECK:         linalg.generic {{.*}} outs(%[[Y]] :
func.func @async_overwritten(%x: tensor<8xf32>) -> (tensor<16xf32>, tensor<8xf32>) {
  %y_e = tensor.empty() : tensor<8xf32>
  %y = linalg.mul ins(%x, %x : tensor<8xf32>, tensor<8xf32>) outs(%y_e : tensor<8xf32>) -> tensor<8xf32>
  %f = dtensor.async_start {
    %g = dtensor.all_gather %y on @m axes = [0] gather_dim = 0 : tensor<8xf32> -> tensor<16xf32>
    dtensor.yield %g : tensor<16xf32>
  } : !dtensor.future<tensor<16xf32>>
  %z = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%y : tensor<8xf32>) {
  ^bb0(%o: f32):
    %t = arith.addf %o, %o : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %g = dtensor.wait %f : !dtensor.future<tensor<16xf32>>
  return %g, %z : tensor<16xf32>, tensor<8xf32>
}

// A started all_gather still reads the product (its copy elided) when the
// all_reduce, its last user, runs: the all_reduce must not reduce in place.
// CHECK-LABEL: func.func @in_flight_reader(
// CHECK-NOT:     memref.copy
// CHECK:         %[[Y:.*]] = memref.alloc()
// CHECK:         call @dtensor_rt_start_all_gather_f32
// CHECK:         %[[R:.*]] = memref.alloc()
// CHECK-DAG:     %[[IN:.*]] = memref.cast %[[Y]]
// CHECK-DAG:     %[[OUT:.*]] = memref.cast %[[R]]
// CHECK:         call @dtensor_rt_all_reduce_f32(%{{.*}}, %[[IN]], %[[OUT]],
// CHECK:         call @dtensor_rt_wait
func.func @in_flight_reader(%x: tensor<8xf32>) -> (tensor<16xf32>, tensor<8xf32>) {
  %y_e = tensor.empty() : tensor<8xf32>
  %y = linalg.mul ins(%x, %x : tensor<8xf32>, tensor<8xf32>) outs(%y_e : tensor<8xf32>) -> tensor<8xf32>
  %f = dtensor.async_start {
    %g = dtensor.all_gather %y on @m axes = [0] gather_dim = 0 : tensor<8xf32> -> tensor<16xf32>
    dtensor.yield %g : tensor<16xf32>
  } : !dtensor.future<tensor<16xf32>>
  %r = dtensor.all_reduce %y on @m axes = [0] reduce = sum : tensor<8xf32>
  %g = dtensor.wait %f : !dtensor.future<tensor<16xf32>>
  return %g, %r : tensor<16xf32>, tensor<8xf32>
}

// A layer loop with a prefetch (the future of iteration i waited in i + 1):
// the wait of each start lies in the next iteration, but the gathered
// weights are a function argument that nothing writes, so no copy.
// CHECK-LABEL: func.func @prefetch(
// CHECK-NOT:     memref.copy
// CHECK:         scf.for
// CHECK:           call @dtensor_rt_wait
// CHECK:           call @dtensor_rt_start_all_gather_f32
// CHECK-NOT:     memref.copy
// CHECK:         return
func.func @prefetch(%w: tensor<3x4xf32>, %n: index) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %w0 = tensor.extract_slice %w[0, 0] [1, 4] [1, 1] : tensor<3x4xf32> to tensor<4xf32>
  %f0 = dtensor.async_start {
    %g = dtensor.all_gather %w0 on @m axes = [0] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
    dtensor.yield %g : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %e = tensor.empty() : tensor<8xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %e, %f = %f0)
      -> (tensor<8xf32>, !dtensor.future<tensor<8xf32>>) {
    %g = dtensor.wait %f : !dtensor.future<tensor<8xf32>>
    %wi = tensor.extract_slice %w[%i, 0] [1, 4] [1, 1] : tensor<3x4xf32> to tensor<4xf32>
    %fi = dtensor.async_start {
      %g2 = dtensor.all_gather %wi on @m axes = [0] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
      dtensor.yield %g2 : tensor<8xf32>
    } : !dtensor.future<tensor<8xf32>>
    %s_e = tensor.empty() : tensor<8xf32>
    %s = linalg.add ins(%a, %g : tensor<8xf32>, tensor<8xf32>) outs(%s_e : tensor<8xf32>) -> tensor<8xf32>
    scf.yield %s, %fi : tensor<8xf32>, !dtensor.future<tensor<8xf32>>
  }
  %last = dtensor.wait %r#1 : !dtensor.future<tensor<8xf32>>
  return %r#0 : tensor<8xf32>
}

// The same loop gathering a buffer the function computes and then
// overwrites in place: the copy stays (the wait is out of sight).
// CHECK-LABEL: func.func @prefetch_local(
// CHECK:         scf.for
// CHECK:           memref.copy
// CHECK:           call @dtensor_rt_start_all_gather_f32
func.func @prefetch_local(%x: tensor<4xf32>, %n: index) -> (tensor<8xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %y_e = tensor.empty() : tensor<4xf32>
  %y = linalg.mul ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%y_e : tensor<4xf32>) -> tensor<4xf32>
  %f0 = dtensor.async_start {
    %g = dtensor.all_gather %y on @m axes = [0] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
    dtensor.yield %g : tensor<8xf32>
  } : !dtensor.future<tensor<8xf32>>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %y, %f = %f0)
      -> (tensor<4xf32>, !dtensor.future<tensor<8xf32>>) {
    %g = dtensor.wait %f : !dtensor.future<tensor<8xf32>>
    %fi = dtensor.async_start {
      %g2 = dtensor.all_gather %a on @m axes = [0] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
      dtensor.yield %g2 : tensor<8xf32>
    } : !dtensor.future<tensor<8xf32>>
    %s = linalg.add ins(%a, %a : tensor<4xf32>, tensor<4xf32>) outs(%a : tensor<4xf32>) -> tensor<4xf32>
    scf.yield %s, %fi : tensor<4xf32>, !dtensor.future<tensor<8xf32>>
  }
  %last = dtensor.wait %r#1 : !dtensor.future<tensor<8xf32>>
  return %last, %r#0 : tensor<8xf32>, tensor<4xf32>
}

// An all_reduce of a slice of a buffer that dies: the input is a view of
// part of the allocation (a dynamic row count, so that the allocation and
// the output have the same type), and the result must not be written over
// the whole allocation: a fresh output the size of the slice
// (issue 26: a 3-D mesh's reduce_scatter, slice, all_reduce).
// CHECK-LABEL: func.func @slice_dies(
// CHECK-SAME:      %[[N:[^:]*]]: index)
// CHECK:         %[[Y:.*]] = memref.alloc(%{{.*}}) {{.*}}: memref<?x5xf32>
// CHECK:         %[[V:.*]] = memref.subview %[[Y]][0, 0] [%[[N]], 5] [1, 1]
// CHECK:         %[[R:.*]] = memref.alloc(%[[N]]) {{.*}}: memref<?x5xf32>
// CHECK-DAG:     %[[IN:.*]] = memref.cast %[[V]]
// CHECK-DAG:     %[[OUT:.*]] = memref.cast %[[R]]
// CHECK:         call @dtensor_rt_all_reduce_f32(%{{.*}}, %[[IN]], %[[OUT]],
// CHECK:         return %[[R]]
func.func @slice_dies(%x: tensor<?x5xf32>, %n: index) -> tensor<?x5xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x5xf32>
  %y_e = tensor.empty(%d) : tensor<?x5xf32>
  %y = linalg.mul ins(%x, %x : tensor<?x5xf32>, tensor<?x5xf32>) outs(%y_e : tensor<?x5xf32>) -> tensor<?x5xf32>
  %s = tensor.extract_slice %y[0, 0] [%n, 5] [1, 1] : tensor<?x5xf32> to tensor<?x5xf32>
  %r = dtensor.all_reduce %s on @m axes = [0] reduce = sum : tensor<?x5xf32>
  return %r : tensor<?x5xf32>
}

// The same with the whole dynamic buffer: reduced in place.
// CHECK-LABEL: func.func @dynamic_dies(
// CHECK:         %[[Y:.*]] = memref.alloc(%{{.*}}) {{.*}}: memref<?x5xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         call @dtensor_rt_all_reduce_f32(
// CHECK:         return %[[Y]]
func.func @dynamic_dies(%x: tensor<?x5xf32>) -> tensor<?x5xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x5xf32>
  %y_e = tensor.empty(%d) : tensor<?x5xf32>
  %y = linalg.mul ins(%x, %x : tensor<?x5xf32>, tensor<?x5xf32>) outs(%y_e : tensor<?x5xf32>) -> tensor<?x5xf32>
  %r = dtensor.all_reduce %y on @m axes = [0] reduce = sum : tensor<?x5xf32>
  return %r : tensor<?x5xf32>
}
