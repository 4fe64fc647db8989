// REQUIRES: cpu-target
// dtensor-run's check (issue 27), as torch.allclose: every element of every
// copy of an output within atol + rtol*|b| of the unsharded reference b.
// rtol defaults by element type (1e-4 for f32), atol to "auto",
// max(rtol*max|b|, 1e-5 for f32): an error small against the output's
// largest value passes wherever it is (the check of old, max|a-b| / max|b|
// <= rtol) and an output that is zero in exact math passes on rounding
// noise. Integers compare exactly; NaN passes only where the reference has
// NaN.
//
// @zero's output #1 is x@w - (3x)@w / 3, zero in exact math: both sides
// are rounding noise (~1e-6), different ones (the ranks sum the contraction
// in parts), so its max relative error is O(1), which the old check called
// a MISMATCH. The default passes it; atol 0 does not.
// RUN: rm -rf %t.wd
// RUN: timeout 120 dtensor-run %s --entry zero -n 4 --seed 5 --work-dir %t.wd | FileCheck %s --check-prefix=DEFAULT
// DEFAULT: check: every element |a-b| <= atol + rtol*|b|, a the sharded program's value, b the unsharded reference's; atol auto: max(rtol*max|b|, the element type's floor); max relative error: max|a-b| / max|b|
// DEFAULT-NEXT: output #0 tensor<8x16xf32> on @m [R]: max relative error {{.*}} (atol {{[0-9.]+}}e-04 auto, rtol 1e-04){{.*}} ok
// DEFAULT-NEXT: output #1 tensor<8x16xf32> on @m [R]: max relative error {{[1-9]\.[0-9]+e[-+]0[0-3]}} (atol 1e-05 auto, rtol 1e-04); worst element [{{[0-9]+, [0-9]+}}]: |a-b| {{.*}}e-0{{[67]}} <= 1.000e-05 = atol + rtol*|b| ok
// DEFAULT-NEXT: PASS
//
// The work directory keeps the reference's outputs (ref<i>.npy) beside the
// reassembled ones (out<i>.npy), global, in .npy.
// RUN: python3 %S/../Tools/dtensor-launch/Inputs/npy-compare.py %t.wd/out0.npy %t.wd/ref0.npy | FileCheck %s --check-prefix=NPY
// RUN: ls %t.wd | FileCheck %s --check-prefix=FILES
// NPY: (8, 16) True
// FILES: in0.npy
// FILES: out0.npy
// FILES: out0.rank3.npy
// FILES: out1.npy
// FILES: ref0.npy
// FILES-NEXT: ref1.npy
//
// --tolerance is --rtol's old name.
// RUN: timeout 120 dtensor-run %s --entry zero -n 4 --seed 5 --tolerance 1e-5 | FileCheck %s --check-prefix=ALIAS
// ALIAS: output #1 {{.*}} (atol 1e-05 auto, rtol 1e-05); {{.*}} ok
// ALIAS: PASS
//
// atol 0, for every output or for #1 alone: a MISMATCH, the worst element
// named with both values.
// RUN: timeout 120 dtensor-run %s --entry zero -n 4 --seed 5 --atol 0 > %t.o; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=ATOL0 < %t.o
// RUN: timeout 120 dtensor-run %s --entry zero -n 4 --seed 5 --atol=1:0 > %t.o; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=ATOL0 < %t.o
// RUN: timeout 120 dtensor-run %s --entry zero -n 4 --seed 5 --atol=0:auto,1:0 > %t.o; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=ATOL0 < %t.o
// ATOL0: output #0 {{.*}} ok
// ATOL0-NEXT: output #1 tensor<8x16xf32> on @m [R]: max relative error {{.*}} (atol 0, rtol 1e-04); worst element [{{.*}}]: |a-b| {{.*}} > {{.*}} = atol + rtol*|b|, got {{.*}}, want {{.*}}; {{[0-9]+}} of 128 elements off MISMATCH in 4 of 4 copies
// ATOL0-NEXT: FAIL
// ATOL0-NEXT: exit 1
//
// A later value replaces an earlier one; rtol 0 leaves atol auto its floor.
// RUN: timeout 120 dtensor-run %s --entry zero -n 4 --seed 5 --atol=1:0 --atol=1:2e-5 | FileCheck %s --check-prefix=LATER
// LATER: output #1 {{.*}} (atol 2e-05, rtol 1e-04); {{.*}} ok
// LATER: PASS
// RUN: timeout 120 dtensor-run %s --entry zero -n 4 --seed 5 --rtol=1:0 | FileCheck %s --check-prefix=RTOL0
// RTOL0: output #0 {{.*}} (atol {{.*}} auto, rtol 1e-04); {{.*}} ok
// RTOL0: output #1 {{.*}} (atol 1e-05 auto, rtol 0); {{.*}} ok
// RTOL0: PASS
//
// NaN where the reference has NaN (sqrt of the negative inputs) is equal;
// integers compare exactly, whatever --rtol says for the floating-point
// outputs, unless an override names them.
// RUN: timeout 120 dtensor-run %s --entry nan_int -n 4 --seed 5 --rtol 1e-2 | FileCheck %s --check-prefix=NAN
// NAN: output #0 tensor<8x4xf32> on @m [S(0)]: max relative error 0.000e+00 (atol {{.*}} auto, rtol 1e-02); every element equal; {{[1-9][0-9]*}} NaN where the reference has NaN ok
// NAN: output #1 tensor<8x4xi32> on @m [S(0)]: max relative error 0.000e+00 (atol 0, rtol 0); every element equal ok
// NAN: PASS
// RUN: timeout 120 dtensor-run %s --entry nan_int -n 4 --seed 5 --rtol=1:0.5 | FileCheck %s --check-prefix=INT
// INT: output #1 tensor<8x4xi32> on @m [S(0)]: {{.*}} (atol 0, rtol 5e-01); every element equal ok
//
// A NaN in one rank's copy where the reference has a number is a MISMATCH
// (a fake mpirun writes NaN into rank 1's last element).
// RUN: env REAL_MPIRUN=mpirun CORRUPT_RANK=1 CORRUPT_VALUE=nan dtensor-run %s --entry zero -n 4 --seed 3 --mpirun=%S/Inputs/corrupt-mpirun.sh > %t.o 2>&1; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=NANBAD < %t.o
// NANBAD: output #0 tensor<8x16xf32> on @m [R]: max relative error inf (atol {{.*}} auto, rtol 1e-04); worst element [7, 15]: got nan, want {{.*}}; 1 of 128 elements off MISMATCH in 1 of 4 copies: ranks 1
// NANBAD: FAIL
// NANBAD: exit 1
//
// Invalid values exit 2 before anything runs.
// RUN: not dtensor-run %s --entry zero -n 4 --atol -1 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: dtensor-run: error: --atol must be a finite number >= 0, got -1{{$}}
// RUN: not dtensor-run %s --entry zero -n 4 --rtol inf 2>&1 | FileCheck %s --check-prefix=INF
// INF: dtensor-run: error: --rtol must be a finite number >= 0, got inf{{$}}
// RUN: not dtensor-run %s --entry zero -n 4 --tolerance=1:-2 2>&1 | FileCheck %s --check-prefix=TOLNEG
// TOLNEG: dtensor-run: error: --tolerance must be a finite number >= 0, got -2{{$}}
// RUN: not dtensor-run %s --entry zero -n 4 --atol x 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: dtensor-run: error: --atol expects VALUE or OUTPUT:VALUE (VALUE a number >= 0 or auto, OUTPUT an output index), got 'x'
// RUN: not dtensor-run %s --entry zero -n 4 --rtol auto 2>&1 | FileCheck %s --check-prefix=RAUTO
// RAUTO: dtensor-run: error: --rtol expects VALUE or OUTPUT:VALUE (VALUE a number >= 0, OUTPUT an output index), got 'auto'
// RUN: not dtensor-run %s --entry zero -n 4 --atol=-1:1e-3 2>&1 | FileCheck %s --check-prefix=INDEX
// INDEX: dtensor-run: error: --atol expects VALUE or OUTPUT:VALUE (VALUE a number >= 0 or auto, OUTPUT an output index), got '-1:1e-3'
// RUN: not dtensor-run %s --entry zero -n 4 --rtol=1: 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: dtensor-run: error: --rtol expects VALUE or OUTPUT:VALUE (VALUE a number >= 0, OUTPUT an output index), got '1:'
// RUN: not dtensor-run %s --entry zero -n 4 --atol=2:1e-3 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: dtensor-run: error: --atol=2:1e-3: @zero has 2 results

dtensor.mesh @m shape = [4]

// y = x @ w and x@w - (3x)@w / 3, with the contraction dim sharded.
func.func @zero(%x: tensor<8x64xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>},
                %w: tensor<64x16xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@m, [R]>},
        tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %zero = arith.constant 0.0 : f32
  %three = arith.constant 3.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  // Summed in parts (K-split, P(sum)), whatever the cost model prefers.
  %y0 = linalg.matmul ins(%x, %w : tensor<8x64xf32>, tensor<64x16xf32>)
                     outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = dtensor.annotate %y0 layout <@m, [P(sum)]> : tensor<8x16xf32>
  %ex = tensor.empty() : tensor<8x64xf32>
  %x3 = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x64xf32>) outs(%ex : tensor<8x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %three : f32
    linalg.yield %m : f32
  } -> tensor<8x64xf32>
  %z30 = linalg.matmul ins(%x3, %w : tensor<8x64xf32>, tensor<64x16xf32>)
                      outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %z3 = dtensor.annotate %z30 layout <@m, [P(sum)]> : tensor<8x16xf32>
  %ed = tensor.empty() : tensor<8x16xf32>
  %d = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%y, %z3 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%ed : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %z = arith.divf %b, %three : f32
    %s = arith.subf %a, %z : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %y, %d : tensor<8x16xf32>, tensor<8x16xf32>
}

// sqrt(x) (NaN for the negative inputs) and int(100 x).
func.func @nan_int(%x: tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>},
        tensor<8x4xi32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  %hundred = arith.constant 100.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %ei = tensor.empty() : tensor<8x4xi32>
  %r:2 = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%e, %ei : tensor<8x4xf32>, tensor<8x4xi32>) {
  ^bb0(%in: f32, %o: f32, %oi: i32):
    %s = math.sqrt %in : f32
    %m = arith.mulf %in, %hundred : f32
    %i = arith.fptosi %m : f32 to i32
    linalg.yield %s, %i : f32, i32
  } -> (tensor<8x4xf32>, tensor<8x4xi32>)
  return %r#0, %r#1 : tensor<8x4xf32>, tensor<8x4xi32>
}
