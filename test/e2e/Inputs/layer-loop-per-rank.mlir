// The per-rank program of layer-loop.mlir's @layers on a mesh of NRANKS
// processes (ROWS = 8 / NRANKS), written as an FSDP + TP compiler would
// emit it: x replicated; each layer's w sharded by rows (gathered before
// use, FSDP) and v sharded by rows (a rowwise matmul whose partial sums one
// all_reduce adds up, TP). The gather of layer i + 1's w starts in
// iteration i and is waited in iteration i + 1 (a loop-carried future);
// the last iteration gathers the last layer again, drained after the loop.
dtensor.mesh @m shape = [NRANKS]

func.func @layers(
    %x: tensor<4x8xf32> {dtensor.global_type = tensor<4x8xf32>,
                         dtensor.layout = #dtensor.layout<@m, [R]>},
    %w: tensor<3xROWSx8xf32> {dtensor.global_type = tensor<3x8x8xf32>,
                              dtensor.layout = #dtensor.layout<@m, [S(1)]>},
    %v: tensor<3xROWSx8xf32> {dtensor.global_type = tensor<3x8x8xf32>,
                              dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<4x8xf32> {dtensor.global_type = tensor<4x8xf32>,
                         dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %rows = arith.constant ROWS : index
  %zero = arith.constant 0.0 : f32
  %me = dtensor.coord @m axes = [0] : index
  %offset = arith.muli %me, %rows : index
  %w0 = tensor.extract_slice %w[0, 0, 0] [1, ROWS, 8] [1, 1, 1]
      : tensor<3xROWSx8xf32> to tensor<ROWSx8xf32>
  %f0 = dtensor.async_start {
    %g = dtensor.all_gather %w0 on @m axes = [0] gather_dim = 0
        : tensor<ROWSx8xf32> -> tensor<8x8xf32>
    dtensor.yield %g : tensor<8x8xf32>
  } : !dtensor.future<tensor<8x8xf32>>
  %r:2 = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %x, %f = %f0)
      -> (tensor<4x8xf32>, !dtensor.future<tensor<8x8xf32>>) {
    %wi = dtensor.wait %f : !dtensor.future<tensor<8x8xf32>>
    %next = arith.addi %i, %c1 : index
    %n = arith.minui %next, %c2 : index
    %wn = tensor.extract_slice %w[%n, 0, 0] [1, ROWS, 8] [1, 1, 1]
        : tensor<3xROWSx8xf32> to tensor<ROWSx8xf32>
    %fn = dtensor.async_start {
      %g = dtensor.all_gather %wn on @m axes = [0] gather_dim = 0
          : tensor<ROWSx8xf32> -> tensor<8x8xf32>
      dtensor.yield %g : tensor<8x8xf32>
    } : !dtensor.future<tensor<8x8xf32>>
    %e = tensor.empty() : tensor<4x8xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %h = linalg.matmul ins(%a, %wi : tensor<4x8xf32>, tensor<8x8xf32>)
                       outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
    %t = math.tanh %h : tensor<4x8xf32>
    %tl = tensor.extract_slice %t[0, %offset] [4, ROWS] [1, 1]
        : tensor<4x8xf32> to tensor<4xROWSxf32>
    %vi = tensor.extract_slice %v[%i, 0, 0] [1, ROWS, 8] [1, 1, 1]
        : tensor<3xROWSx8xf32> to tensor<ROWSx8xf32>
    %e2 = tensor.empty() : tensor<4x8xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
    %p = linalg.matmul ins(%tl, %vi : tensor<4xROWSxf32>, tensor<ROWSx8xf32>)
                       outs(%z2 : tensor<4x8xf32>) -> tensor<4x8xf32>
    %o = dtensor.all_reduce %p on @m axes = [0] reduce = sum : tensor<4x8xf32>
    scf.yield %o, %fn : tensor<4x8xf32>, !dtensor.future<tensor<8x8xf32>>
  }
  %drained = dtensor.wait %r#1 : !dtensor.future<tensor<8x8xf32>>
  return %r#0 : tensor<4x8xf32>
}
