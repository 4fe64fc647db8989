// REQUIRES: cpu-target
// Gradients on CPU ranks: the joint forward + backward functions of
// dtensor-autodiff for the TP MLP, the sequence-parallel block and the
// attention example, on 2 and 4 ranks, checked by dtensor-run against the
// unsharded joint function (every output, the gradients included, to a
// relative error of 1e-5). The derivative rules themselves are checked
// against finite differences in test/unit/AutodiffTest.cpp.
//
// RUN: dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --dtensor-autodiff -o %t.mlp4.mlir
// RUN: sed 's/shape = \[4\]/shape = [2]/' %t.mlp4.mlir > %t.mlp2.mlir
// RUN: timeout 120 dtensor-run %t.mlp4.mlir -n 4 --entry mlp_grad --seed 21 --tolerance 1e-5 | FileCheck %s --check-prefix=MLP
// RUN: timeout 120 dtensor-run %t.mlp2.mlir -n 2 --entry mlp_grad --seed 22 --tolerance 1e-5 | FileCheck %s --check-prefix=MLP
// With activation checkpointing (the recomputed forward in the backward):
// RUN: dtensor-opt %S/../Compiler/activation-checkpointing.mlir --dtensor-autodiff=checkpoint=mlp -o %t.ck.mlir
// RUN: timeout 120 dtensor-run %t.ck.mlir -n 4 --entry mlp_grad --seed 35 --tolerance 1e-5 | FileCheck %s --check-prefix=MLP
// RUN: dtensor-opt %dtensor_src_root/examples/sequence_parallel_mlp.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json --dtensor-autodiff=checkpoint=ffn,norm -o %t.spck.mlir
// RUN: timeout 120 dtensor-run %t.spck.mlir -n 4 --entry ffn_block_grad --seed 36 --tolerance 1e-5 | FileCheck %s --check-prefix=SP
//
// RUN: dtensor-opt %dtensor_src_root/examples/sequence_parallel_mlp.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json --dtensor-autodiff -o %t.sp4.mlir
// RUN: sed 's/shape = \[4\]/shape = [2]/' %dtensor_src_root/examples/sequence_parallel_mlp.mlir > %t.sp2.in.mlir
// RUN: dtensor-opt %t.sp2.in.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json --dtensor-autodiff -o %t.sp2.mlir
// RUN: timeout 120 dtensor-run %t.sp4.mlir -n 4 --entry ffn_block_grad --seed 23 --tolerance 1e-5 | FileCheck %s --check-prefix=SP
// RUN: timeout 120 dtensor-run %t.sp2.mlir -n 2 --entry ffn_block_grad --seed 24 --tolerance 1e-5 | FileCheck %s --check-prefix=SP
// With the norm weight's gradient left Partial (grad-layouts=free):
// RUN: dtensor-opt %dtensor_src_root/examples/sequence_parallel_mlp.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json --dtensor-autodiff=grad-layouts=free -o %t.spfree.mlir
// RUN: timeout 120 dtensor-run %t.spfree.mlir -n 4 --entry ffn_block_grad --seed 38 --tolerance 1e-5 | FileCheck %s --check-prefix=SP-FREE
// Scheduled for overlap (async collectives, reordering, bucketing) and
// fused, the backward included:
// RUN: timeout 120 dtensor-run %t.sp4.mlir -n 4 --entry ffn_block_grad --seed 33 --tolerance 1e-5 --overlap=default --fuse | FileCheck %s --check-prefix=SP
//
// RUN: dtensor-opt %dtensor_src_root/examples/attention.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/attention.plan.json --dtensor-autodiff -o %t.attn4.mlir
// RUN: sed 's/shape = \[4\]/shape = [2]/' %dtensor_src_root/examples/attention.mlir > %t.attn2.in.mlir
// RUN: dtensor-opt %t.attn2.in.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/attention.plan.json --dtensor-autodiff -o %t.attn2.mlir
// RUN: timeout 120 dtensor-run %t.attn4.mlir -n 4 --entry attention_grad --seed 25 --tolerance 1e-5 | FileCheck %s --check-prefix=ATTN
// RUN: timeout 120 dtensor-run %t.attn2.mlir -n 2 --entry attention_grad --seed 26 --tolerance 1e-5 | FileCheck %s --check-prefix=ATTN
//
// The embedding example (rowwise embedding, norm, colwise output
// projection): the table's scatter-add gradient on vocabulary shards.
// RUN: dtensor-opt %dtensor_src_root/examples/embedding.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/embedding.plan.json --dtensor-autodiff -o %t.emb4.mlir
// RUN: sed 's/shape = \[4\]/shape = [2]/' %dtensor_src_root/examples/embedding.mlir > %t.emb2.in.mlir
// RUN: dtensor-opt %t.emb2.in.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/embedding.plan.json --dtensor-autodiff -o %t.emb2.mlir
// RUN: timeout 120 dtensor-run %t.emb4.mlir -n 4 --entry lm_ends_grad --seed 31 --tolerance 1e-5 | FileCheck %s --check-prefix=EMB
// RUN: timeout 120 dtensor-run %t.emb2.mlir -n 2 --entry lm_ends_grad --seed 32 --tolerance 1e-5 | FileCheck %s --check-prefix=EMB
//
// Max and product reductions over the sharded dim of an S(1) input: the
// gradient goes to the maximum, and to each factor as the product of the
// others (rules checked against finite differences in AutodiffTest.cpp).
// RUN: dtensor-opt %S/Inputs/reductions-grad.mlir --dtensor-autodiff -o %t.red4.mlir
// RUN: sed 's/shape = \[4\]/shape = [2]/' %t.red4.mlir > %t.red2.mlir
// RUN: timeout 120 dtensor-run %t.red4.mlir -n 4 --entry f_grad --seed 39 --tolerance 1e-5 | FileCheck %s --check-prefix=RED
// RUN: timeout 120 dtensor-run %t.red2.mlir -n 2 --entry f_grad --seed 40 --tolerance 1e-5 | FileCheck %s --check-prefix=RED
//
// Three SGD steps of the MLP's mean-squared loss (examples/train_mlp.mlir)
// in one scf.for: the last step's loss and the weights after it equal the
// unsharded training run's; unrolled, the loss of each step too.
// RUN: dtensor-opt %dtensor_src_root/examples/train_mlp.mlir --dtensor-autodiff --dtensor-train-steps='steps=3 learning-rate=0.5' -o %t.train4.mlir
// RUN: sed 's/shape = \[4\]/shape = [2]/' %t.train4.mlir > %t.train2.mlir
// RUN: timeout 120 dtensor-run %t.train4.mlir -n 4 --entry mlp_loss_train --seed 27 --tolerance 1e-5 | FileCheck %s --check-prefix=LOOP
// RUN: timeout 120 dtensor-run %t.train2.mlir -n 2 --entry mlp_loss_train --seed 28 --tolerance 1e-5 | FileCheck %s --check-prefix=LOOP
// RUN: dtensor-opt %dtensor_src_root/examples/train_mlp.mlir --dtensor-autodiff --dtensor-train-steps='steps=3 learning-rate=0.5 unroll=1' -o %t.unrolled4.mlir
// RUN: timeout 120 dtensor-run %t.unrolled4.mlir -n 4 --entry mlp_loss_train --seed 48 --tolerance 1e-5 | FileCheck %s --check-prefix=TRAIN
// The same with Adam:
// RUN: dtensor-opt %dtensor_src_root/examples/train_mlp.mlir --dtensor-autodiff --dtensor-train-steps='steps=3 optimizer=adam learning-rate=0.01' -o %t.adam4.mlir
// RUN: timeout 120 dtensor-run %t.adam4.mlir -n 4 --entry mlp_loss_train --seed 37 --tolerance 1e-5 | FileCheck %s --check-prefix=LOOP
// Scheduled for overlap, the loop's body included:
// RUN: timeout 120 dtensor-run %t.train4.mlir -n 4 --entry mlp_loss_train --seed 49 --tolerance 1e-5 --overlap=default | FileCheck %s --check-prefix=LOOP
//
// FSDP + TP on a 2x2 mesh (examples/fsdp_tp_mlp.mlir): gradients, and two
// SGD steps.
// RUN: dtensor-opt %dtensor_src_root/examples/fsdp_tp_mlp.mlir --dtensor-autodiff --dtensor-train-steps=steps=2 -o %t.fsdp.mlir
// RUN: timeout 120 dtensor-run %t.fsdp.mlir -n 4 --entry fsdp_tp_mlp_grad --seed 29 --tolerance 1e-5 | FileCheck %s --check-prefix=FSDP
// RUN: timeout 120 dtensor-run %t.fsdp.mlir -n 4 --entry fsdp_tp_mlp_train --seed 30 --tolerance 1e-5 | FileCheck %s --check-prefix=FSDP-TRAIN
// RUN: timeout 120 dtensor-run %t.fsdp.mlir -n 4 --entry fsdp_tp_mlp_grad --seed 34 --tolerance 1e-5 --overlap=default | FileCheck %s --check-prefix=FSDP
// With the gradient reduce_scatters bucketed (test/Compiler/backward-overlap.mlir):
// RUN: timeout 120 dtensor-run %t.fsdp.mlir -n 4 --entry fsdp_tp_mlp_grad --seed 47 --tolerance 1e-5 --overlap=bucket-collectives,default | FileCheck %s --check-prefix=FSDP

// RED: @f_grad on {{[24]}} ranks
// RED: output #2 tensor<8x16xf32> on @tp [S(1)]: {{.*}} ok
// RED: PASS

// EMB: @lm_ends_grad on {{[24]}} ranks
// EMB: output #1 tensor<128x32xf32> on @tp [S(0)]: {{.*}} ok
// EMB: PASS

// FSDP: @fsdp_tp_mlp_grad on 4 ranks (mesh @m)
// FSDP: output #0 tensor<8x16xf32> on @m [S(0), R]: {{.*}} ok
// FSDP: output #1 tensor<16x32xf32> on @m [S(0), S(1)]: {{.*}} ok
// FSDP: output #2 tensor<32x16xf32> on @m [S(1), S(0)]: {{.*}} ok
// FSDP: PASS
// FSDP-TRAIN: @fsdp_tp_mlp_train on 4 ranks (mesh @m)
// FSDP-TRAIN: output #0 tensor<8x16xf32> on @m [S(0), R]: {{.*}} ok
// FSDP-TRAIN: output #1 tensor<16x32xf32> on @m [S(0), S(1)]: {{.*}} ok
// FSDP-TRAIN: output #2 tensor<32x16xf32> on @m [S(1), S(0)]: {{.*}} ok
// FSDP-TRAIN: PASS

// LOOP: @mlp_loss_train on {{[24]}} ranks
// LOOP: output #0 tensor<f32> on @tp [{{R|P\(sum\)}}]: {{.*}} ok
// LOOP: output #1 tensor<16x32xf32> on @tp [S(1)]: {{.*}} ok
// LOOP: output #2 tensor<32x16xf32> on @tp [S(0)]: {{.*}} ok
// LOOP: PASS

// TRAIN: @mlp_loss_train on {{[24]}} ranks
// TRAIN-COUNT-3: output #{{[0-2]}} tensor<f32> on @tp [{{R|P\(sum\)}}]: {{.*}} ok
// TRAIN: output #3 tensor<16x32xf32> on @tp [S(1)]: {{.*}} ok
// TRAIN: output #4 tensor<32x16xf32> on @tp [S(0)]: {{.*}} ok
// TRAIN: PASS

// MLP: @mlp_grad on {{[24]}} ranks
// MLP: output #0 tensor<8x16xf32> on @tp [R]: {{.*}} ok
// MLP: output #1 tensor<8x16xf32> on @tp [R]: {{.*}} ok
// MLP: output #2 tensor<16x32xf32> on @tp [S(1)]: {{.*}} ok
// MLP: output #3 tensor<32x16xf32> on @tp [S(0)]: {{.*}} ok
// MLP: PASS

// SP: @ffn_block_grad on {{[24]}} ranks
// SP: output #0 tensor<2x16x32xf32> on @tp [S(1)]: {{.*}} ok
// SP: output #1 tensor<32xf32> on @tp [R]: {{.*}} ok
// SP: output #2 tensor<64x32xf32> on @tp [S(0)]: {{.*}} ok
// SP: output #3 tensor<32x64xf32> on @tp [S(1)]: {{.*}} ok
// SP: PASS

// SP-FREE: output #1 tensor<32xf32> on @tp [P(sum)]: {{.*}} ok
// SP-FREE: PASS

// ATTN: @attention_grad on {{[24]}} ranks
// ATTN-COUNT-5: ok
// ATTN: PASS
