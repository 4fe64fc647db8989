// REQUIRES: cpu-target
// A deliberately wrong collective (the runtime swaps the blocks of group
// indices 0 and 1 in every all_gather) must be caught by the numerics check.
// RUN: env DTENSOR_RT_FAULT=swap-gather-chunks not timeout 120 dtensor-run %s -n 4 --seed 3 | FileCheck %s
// RUN: timeout 120 dtensor-run %s -n 4 --seed 3 | FileCheck %s --check-prefix=OK
// CHECK: output #0 tensor<8x4xf32> on @m [R]: max relative error {{.*}} MISMATCH
// CHECK: FAIL
// OK: output #0 tensor<8x4xf32> on @m [R]: max relative error 0.000e+00 {{.*}} ok
// OK: PASS

dtensor.mesh @m shape = [4]

func.func @gather(%x: tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  return %x : tensor<8x4xf32>
}
