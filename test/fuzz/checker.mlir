// dtensor-fuzz-check runs each pipeline on the input module itself: a
// pipeline text anchored on builtin.module once nested the pipeline under
// the module, where it ran on no operation and accepted everything. A
// shard requested as a pending reduction must be refused by the
// partitioning pipelines and pass through a per-pass pipeline that does not
// look at layouts.
// RUN: %dtensor_tools_dir/dtensor-fuzz-check %s "builtin.module(dtensor-spmd)" "builtin.module(dtensor-propagate-layouts)" "builtin.module(cse)" | FileCheck %s
// CHECK: PIPELINE builtin.module(dtensor-spmd)
// CHECK-NEXT: DIAGNOSTIC cannot redistribute operand {{.*}} a shard cannot become a pending reduction
// CHECK-NEXT: PIPELINE builtin.module(dtensor-propagate-layouts)
// CHECK-NEXT: DIAGNOSTIC cannot redistribute operand
// CHECK-NEXT: PIPELINE builtin.module(cse)
// CHECK-NEXT: ACCEPTED
// RUN: not %dtensor_tools_dir/dtensor-fuzz-check %s "func.func(cse)" 2>&1 | FileCheck %s --check-prefix=ANCHOR
// ANCHOR: bad pipeline 'func.func(cse)': the pipeline must be anchored on builtin.module

dtensor.mesh @g shape = [2, 2]
func.func @f(%x: tensor<7x6xf32> {dtensor.layout = #dtensor.layout<@g, [S(1), S(0)]>},
             %w: tensor<6x5xf32> {dtensor.layout = #dtensor.layout<@g, [S(0), R]>})
    -> (tensor<7x5xf32> {dtensor.layout = #dtensor.layout<@g, [R, P(max)]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<7x5xf32>) -> tensor<7x5xf32>
  %y = linalg.matmul ins(%x, %w : tensor<7x6xf32>, tensor<6x5xf32>) outs(%f : tensor<7x5xf32>) -> tensor<7x5xf32>
  %s = dtensor.annotate %y layout <@g, [P(avg), S(0)]> {dtensor.boundary} : tensor<7x5xf32>
  return %s : tensor<7x5xf32>
}
