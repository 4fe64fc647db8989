// RUN: split-file %s %t
// RUN: dtensor-opt %t/coords.mlir --dtensor-specialize-rank=rank=2 | FileCheck %s
// RUN: not dtensor-opt %t/coords.mlir --dtensor-specialize-rank 2>&1 | FileCheck %s --check-prefix=ERR-NONE
// RUN: not dtensor-opt %t/coords.mlir --dtensor-specialize-rank=rank=4 2>&1 | FileCheck %s --check-prefix=ERR-RANGE
//
// Invariant of the scheduling passes: the per-rank programs of different
// processes issue the same collectives in the same order, with the same
// buffer types, even where uneven shards make the programs (and so the
// modelled costs) differ. The programs do differ: rank 3 holds 6 of the 30
// ffn columns instead of 8, and no row of the uneven output.
// RUN: for r in 0 1 2 3; do \
// RUN:   dtensor-opt %dtensor_src_root/test/e2e/mlp.mlir --dtensor-spmd | dtensor-opt --dtensor-specialize-rank=rank=$r --canonicalize --dtensor-overlap 2>/dev/null > %t/rank$r.mlir || exit 1; \
// RUN:   sed -n 's/.*\(dtensor\.[a-z_]*\) %[^ ]* \(.*on @[a-z_0-9]* axes = .*\)/\1 \2/p' %t/rank$r.mlir | sed 's/%[a-z_0-9#]*//g' > %t/collectives$r.txt || exit 1; \
// RUN: done
// RUN: FileCheck %s --check-prefix=SEQ < %t/collectives0.txt
// RUN: diff %t/collectives0.txt %t/collectives1.txt
// RUN: diff %t/collectives0.txt %t/collectives2.txt
// RUN: diff %t/collectives0.txt %t/collectives3.txt
// RUN: FileCheck %s --check-prefix=RANK0 < %t/rank0.mlir
// RUN: FileCheck %s --check-prefix=RANK3 < %t/rank3.mlir

//--- coords.mlir
dtensor.mesh @m2 shape = [2, 2]
dtensor.mesh @m4 shape = [4]

// World rank 2 sits at (1, 0) of the 2x2 mesh.
// CHECK-LABEL: func.func @coords
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-NOT:     dtensor.coord
// CHECK:         return %[[C1]], %[[C0]], %[[C2]], %[[C2]]
func.func @coords() -> (index, index, index, index) {
  %a = dtensor.coord @m2 axes = [0] : index
  %b = dtensor.coord @m2 axes = [1] : index
  %c = dtensor.coord @m2 axes = [0, 1] : index
  %d = dtensor.coord @m4 axes = [0] : index
  return %a, %b, %c, %d : index, index, index, index
}

// ERR-NONE: dtensor-specialize-rank needs rank=N, the world rank of the process (N >= 0)
// ERR-RANGE: rank 4 is not a process of mesh @m2 (4 processes)

// SEQ:      dtensor.all_reduce on @dp_tp axes = [1] reduce = sum : tensor<4x16xf32>
// SEQ-NEXT: dtensor.reduce_scatter on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<8x10xf32> -> tensor<2x10xf32>
// SEQ-NEXT: dtensor.reduce_scatter on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<8x8xf32> -> tensor<2x8xf32>

// RANK0-LABEL: func.func @mlp_2d
// RANK0:         dtensor.async_start
// RANK0-LABEL: func.func @mlp_uneven
// RANK0:         tensor.cast %arg1 : tensor<10x?xf32> to tensor<10x8xf32>
// RANK0-NOT:     tensor<0x10xf32>
// RANK3-LABEL: func.func @mlp_uneven
// RANK3:         tensor.cast %arg1 : tensor<10x?xf32> to tensor<10x6xf32>
// RANK3:         tensor.extract_slice %{{.*}}[0, 0] [0, 10] [1, 1] : tensor<2x10xf32> to tensor<0x10xf32>
