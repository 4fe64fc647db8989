// REQUIRES: cpu-target
// Training in bf16 with f32 statistics (issue 27): every block
// bench/gpu_rank/gen_rank.py writes (the SwiGLU MLP, the sequence-parallel
// block, attention with a fused qkv projection split by rank-reducing
// slices and with separate q/k/v projections, the whole layer with
// RMSNorms), as its global program on a TP mesh (--mesh), differentiated by
// dtensor-autodiff under the verifier and run as the joint forward +
// backward on 2 and 4 CPU ranks against the unsharded joint function. The
// CPU's bf16 matmuls accumulate in bf16 (linalg.matmul's semantics), so
// sharded and unsharded sums differ by a few bf16 ulps (up to 5e-2 of an
// output's largest element, measured): tolerance 8e-2 in bf16. The same
// programs in f32 check the partitioned backward tightly (1e-4; measured
// errors below 1e-6). The derivative rules themselves are checked
// against finite differences in test/unit/AutodiffTest.cpp
// (MixedPrecision..., StridedAndRankReducingSlices...).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: for n in 2 4; do for b in mlp sp_mlp attn layer; do for q in fused separate; do \
// RUN:   for d in bf16:8e-2 f32:1e-4; do t=${d%%:*}; \
// RUN:   %python %dtensor_src_root/bench/gpu_rank/gen_rank.py --block $b --mesh $n --qkv $q \
// RUN:     --dtype $t --tokens 16 --hidden 64 --ffn 128 --heads 4 -o %t/$b-$q-$n-$t.mlir && \
// RUN:   dtensor-opt %t/$b-$q-$n-$t.mlir --dtensor-autodiff --verify-each -o %t/$b-$q-$n-$t.grad.mlir && \
// RUN:   timeout 120 dtensor-run %t/$b-$q-$n-$t.grad.mlir -n $n --entry ${b}_grad --seed 5$n \
// RUN:     --tolerance ${d#*:} > %t/$b-$q-$n-$t.out && \
// RUN:   FileCheck %s < %t/$b-$q-$n-$t.out || exit 1; \
// RUN: done; done; done; done
// CHECK-NOT: MISMATCH
// CHECK: on {{[0-9]+}} ranks (mesh @tp)
// CHECK: output #1 {{.*}} ok
// CHECK: {{^}}PASS{{$}}
