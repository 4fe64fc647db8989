// Tests of --dtensor-train-steps: K steps of a joint function of
// dtensor-autodiff with seeds of one and the SGD or Adam update, as one
// scf.for (LOOP, LOOP-ADAM) or unrolled (unroll=1), and its errors; the
// training loop's per-step communication equals one step's (COMM).
// That the steps compute what host-driven steps compute is checked in
// test/unit/AutodiffTest.cpp (TrainSteps), on CPU ranks in
// test/e2e/autodiff.mlir.
//
// RUN: split-file %s %t
// RUN: dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps='steps=2 learning-rate=0.5 unroll=1' | FileCheck %t/step.mlir
// RUN: dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps='steps=5 learning-rate=0.5' | FileCheck %t/step.mlir --check-prefix=LOOP
// RUN: dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps='steps=5 optimizer=adam' | FileCheck %t/step.mlir --check-prefix=LOOP-ADAM
// RUN: dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps='steps=5 learning-rate=0.5' --dtensor-spmd | FileCheck %t/step.mlir --check-prefix=LOOP-SPMD
// The training example's loop: per step the joint function's collectives
// (one reduce_scatter forward, one all_reduce backward, as @mlp_loss_grad),
// nothing to replicate the weights, which stay S(1)/S(0) across steps:
// RUN: dtensor-opt %dtensor_src_root/examples/train_mlp.mlir --dtensor-autodiff --dtensor-train-steps=steps=8 --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %t/step.mlir --check-prefix=COMM
// RUN: not dtensor-opt %t/step.mlir --dtensor-train-steps 2>&1 | FileCheck %t/step.mlir --check-prefix=NOJOINT
// RUN: not dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps=steps=0 2>&1 | FileCheck %t/step.mlir --check-prefix=ZERO
// RUN: not dtensor-opt %t/step.mlir --dtensor-train-steps=functions=step 2>&1 | FileCheck %t/step.mlir --check-prefix=NOTJOINT
// RUN: not dtensor-opt %t/step.mlir --dtensor-train-steps=functions=nope 2>&1 | FileCheck %t/step.mlir --check-prefix=MISSING
// RUN: not dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps --dtensor-train-steps 2>&1 | FileCheck %t/step.mlir --check-prefix=EXISTS
// RUN: dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps='steps=2 optimizer=adam learning-rate=0.5 beta1=0.5 beta2=0.75 epsilon=0.125 unroll=1' | FileCheck %t/step.mlir --check-prefix=ADAM
// RUN: not dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps=optimizer=lion 2>&1 | FileCheck %t/step.mlir --check-prefix=OPT
// AdamW (the weight decayed by 1 - lr * wd = 1 - 0.5 * 0.1 before the
// step; the moments do not read the weight) and SGD with momentum and L2
// decay (the buffer reads the weight), in bf16: the state (moments,
// momentum buffer) and the update are f32, the weight stays bf16.
// RUN: sed 's/f32/bf16/g' %t/step.mlir > %t/step-bf16.mlir
// RUN: dtensor-opt %t/step-bf16.mlir --dtensor-autodiff --dtensor-train-steps='steps=2 optimizer=adamw weight-decay=0.1 learning-rate=0.5 unroll=1' --verify-each | FileCheck %t/step.mlir --check-prefix=ADAMW
// RUN: dtensor-opt %t/step-bf16.mlir --dtensor-autodiff --dtensor-train-steps='steps=2 momentum=0.9 weight-decay=0.01 learning-rate=0.5' --verify-each | FileCheck %t/step.mlir --check-prefix=MOMENTUM
// RUN: not dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps='optimizer=adam momentum=0.9' 2>&1 | FileCheck %t/step.mlir --check-prefix=ADAM-MOMENTUM
// RUN: not dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps='weight-decay=-0.5' 2>&1 | FileCheck %t/step.mlir --check-prefix=NEGATIVE
// State held by the caller, f32 master weights of bf16 weights:
// RUN: dtensor-opt %t/step-bf16.mlir --dtensor-autodiff --dtensor-train-steps='steps=2 optimizer=adamw state=arguments master-weights=f32' --verify-each | FileCheck %t/step.mlir --check-prefix=STATE
// RUN: dtensor-opt %t/step-bf16.mlir --dtensor-autodiff --dtensor-train-steps='steps=3 master-weights=f32 unroll=1' --verify-each | FileCheck %t/step.mlir --check-prefix=MASTER-FRESH
// RUN: dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps='state=arguments master-weights=f32' --verify-each | FileCheck %t/step.mlir --check-prefix=STATE-F32
// RUN: not dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps='state=kept' 2>&1 | FileCheck %t/step.mlir --check-prefix=BAD-STATE
// RUN: not dtensor-opt %t/step.mlir --dtensor-autodiff --dtensor-train-steps='master-weights=fp8' 2>&1 | FileCheck %t/step.mlir --check-prefix=BAD-MASTER
// RUN: dtensor-opt %t/errors.mlir --split-input-file --dtensor-train-steps --verify-diagnostics

//--- step.mlir

// CHECK-LABEL: func.func @step_grad(
// CHECK-LABEL: func.func @step_train(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W:[a-z0-9]+]]: tensor<8x2xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>, dtensor.param = "w"})
// CHECK-SAME: -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<8x2xf32> {dtensor.grad_of = 1 : i64, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// Step 1: seed of ones in the output's layout, forward, backward, update.
// CHECK: %[[ONES:.*]] = linalg.fill
// CHECK: %[[SEED:.*]] = dtensor.annotate %[[ONES]] layout <@tp, [S(1)]>
// CHECK: %[[WS:.*]] = dtensor.annotate %[[W]] layout <@tp, [S(1)]>
// CHECK: %[[Y1:.*]] = linalg.matmul ins(%[[X]], %[[WS]]
// CHECK: %[[G1:.*]] = dtensor.annotate %{{.*}} layout <@tp, [S(1)]>
// CHECK: %[[U1:.*]] = linalg.generic {{.*}} ins(%[[W]], %[[G1]] :
// CHECK: arith.constant 5.000000e-01
// CHECK: arith.mulf
// CHECK: arith.subf
// CHECK: %[[W1:.*]] = dtensor.annotate %[[U1]] layout <@tp, [S(1)]>
// Step 2 starts from the updated weight.
// CHECK: dtensor.annotate %[[W1]] layout <@tp, [S(1)]>
// CHECK: %[[Y2:.*]] = linalg.matmul
// CHECK: %[[U2:.*]] = linalg.generic {{.*}} ins(%[[W1]],
// CHECK: %[[W2:.*]] = dtensor.annotate %[[U2]]
// CHECK: return %[[Y1]], %[[Y2]], %[[W2]]
// Adam: both moments start at zero in the weight's layout; each step
// updates them and the weight with the step's bias corrections (step 1:
// 1 - 0.5 = 0.5 and 1 - 0.75 = 0.25; step 2: 0.75 and 0.4375).
// ADAM-LABEL: func.func @step_train(
// ADAM: %[[M0F:.*]] = linalg.fill
// ADAM: %[[M0:.*]] = dtensor.annotate %[[M0F]] layout <@tp, [S(1)]>
// ADAM: %[[V0F:.*]] = linalg.fill
// ADAM: %[[V0:.*]] = dtensor.annotate %[[V0F]] layout <@tp, [S(1)]>
// ADAM: %[[G1:.*]] = dtensor.annotate %{{[0-9]+}} layout <@tp, [S(1)]> : tensor<8x2xf32>
// ADAM: %[[M1G:.*]] = linalg.generic {{.*}} ins(%[[M0]], %[[G1]] :
// ADAM: %[[M1:.*]] = dtensor.annotate %[[M1G]]
// ADAM: %[[V1G:.*]] = linalg.generic {{.*}} ins(%[[V0]], %[[G1]] :
// ADAM: arith.mulf %{{.*}}, %{{.*}} : f32
// ADAM: %[[V1:.*]] = dtensor.annotate %[[V1G]]
// ADAM: linalg.generic {{.*}} ins(%{{.*}}, %[[M1]], %[[V1]] :
// ADAM: arith.constant 5.000000e-01 : f32
// ADAM: arith.constant 2.500000e-01 : f32
// ADAM: arith.constant 1.250000e-01 : f32
// ADAM: math.sqrt
// ADAM: ins(%[[M1]], %{{.*}} :
// ADAM: ins(%[[V1]], %{{.*}} :
// ADAM: arith.constant 7.500000e-01 : f32
// ADAM: arith.constant 4.375000e-01 : f32
// ADAM: return
// The loop: the weight (laid out as its gradient) is carried, and so is
// the step's output (zeros before the first step); the body is one step.
// LOOP-LABEL: func.func @step_train(
// LOOP-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W:[a-z0-9]+]]: tensor<8x2xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>, dtensor.param = "w"})
// LOOP-SAME: -> (tensor<4x2xf32>, tensor<8x2xf32> {dtensor.grad_of = 1 : i64, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// LOOP: %[[Y0:.*]] = linalg.fill
// LOOP: %[[C5:.*]] = arith.constant 5 : index
// LOOP: %[[R:.*]]:2 = scf.for %{{.*}} = %{{.*}} to %[[C5]] step %{{.*}} iter_args(%[[WI:.*]] = %[[W]], %{{.*}} = %[[Y0]]) -> (tensor<8x2xf32>, tensor<4x2xf32>) {
// LOOP: dtensor.annotate %[[WI]] layout <@tp, [S(1)]>
// LOOP: %[[Y:.*]] = linalg.matmul
// LOOP: %[[U:.*]] = linalg.generic {{.*}} ins(%[[WI]], %{{.*}} :
// LOOP: %[[WN:.*]] = dtensor.annotate %[[U]] layout <@tp, [S(1)]>
// LOOP: scf.yield %[[WN]], %[[Y]]
// LOOP-NOT: linalg.matmul
// LOOP: return %[[R]]#1, %[[R]]#0
// Adam in the loop: both moments carried, the bias corrections from the
// step number t = i + 1.
// LOOP-ADAM-LABEL: func.func @step_train(
// LOOP-ADAM: scf.for %[[I:.*]] = {{.*}} iter_args({{.*}}) -> (tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<4x2xf32>) {
// LOOP-ADAM: %[[T:.*]] = arith.addi %[[I]], %{{.*}} : index
// LOOP-ADAM: arith.sitofp
// LOOP-ADAM: math.powf
// LOOP-ADAM: scf.yield
// Partitioned: the loop carries the local shards.
// LOOP-SPMD-LABEL: func.func @step_train(
// LOOP-SPMD: scf.for {{.*}} -> (tensor<8x1xf32>, tensor<4x1xf32>) {
// LOOP-SPMD: scf.yield {{.*}} : tensor<8x1xf32>, tensor<4x1xf32>
// COMM-LABEL: comm report for @mlp_loss_grad
// COMM-NEXT: collective
// COMM-NEXT: all_reduce 1 0 512
// COMM-NEXT: reduce_scatter 1 0 512
// COMM-NEXT: total 2 0 1024
// COMM-LABEL: comm report for @mlp_loss_train
// COMM-NEXT: collective
// COMM-NEXT: all_reduce 1 0 512
// COMM-NEXT: reduce_scatter 1 0 512
// COMM-NEXT: total 2 0 1024
// OPT: error: train steps: unknown optimizer 'lion' (expected sgd, adam or adamw)

// ADAMW-LABEL: func.func @step_train(
// ADAMW: %[[M0F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x2xf32>)
// ADAMW: %[[V0F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x2xf32>)
// ADAMW: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x2xf32>, tensor<8x2xbf16>) outs(%{{.*}} : tensor<8x2xf32>)
// ADAMW: arith.extf %{{.*}} : bf16 to f32
// ADAMW: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x2xbf16>, tensor<8x2xf32>, tensor<8x2xf32>) outs(%{{.*}} : tensor<8x2xbf16>)
// ADAMW: arith.constant 0.949999988 : f32
// ADAMW: arith.truncf %{{.*}} : f32 to bf16
// ADAMW: return

// MOMENTUM-LABEL: func.func @step_train(
// MOMENTUM: %[[B0F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x2xf32>)
// MOMENTUM: scf.for
// MOMENTUM: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x2xf32>, tensor<8x2xbf16>, tensor<8x2xbf16>) outs(%{{.*}} : tensor<8x2xf32>)
// MOMENTUM: arith.constant 0.899999976 : f32
// MOMENTUM: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x2xbf16>, tensor<8x2xf32>) outs(%{{.*}} : tensor<8x2xbf16>)

// ADAM-MOMENTUM: error: train steps: momentum is an option of sgd (Adam's is beta1)

// state=arguments: after the forward's arguments, the master copy and the
// moments of w (f32, in w's layout), then the steps taken; returned after
// the weight in the same order. The update reads the master, the moments
// and the steps taken (rank 0), writes the master in f32; the weight is
// the master rounded.
// STATE-LABEL: func.func @step_train(
// STATE-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xbf16>, %[[W:[a-z0-9]+]]: tensor<8x2xbf16> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>, dtensor.param = "w"},
// STATE-SAME: %[[MASTER:[a-z0-9]+]]: tensor<8x2xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>, dtensor.optimizer_state = "master:1"},
// STATE-SAME: %[[M:[a-z0-9]+]]: tensor<8x2xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>, dtensor.optimizer_state = "exp_avg:1"},
// STATE-SAME: %[[V:[a-z0-9]+]]: tensor<8x2xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>, dtensor.optimizer_state = "exp_avg_sq:1"},
// STATE-SAME: %[[STEP:[a-z0-9]+]]: tensor<f32> {dtensor.optimizer_state = "step"})
// STATE-SAME: -> (tensor<4x2xbf16>, tensor<8x2xbf16> {dtensor.grad_of = 1 : i64, dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
// STATE-SAME: tensor<8x2xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>, dtensor.optimizer_state = "master:1"},
// STATE-SAME: tensor<8x2xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>, dtensor.optimizer_state = "exp_avg:1"},
// STATE-SAME: tensor<8x2xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>, dtensor.optimizer_state = "exp_avg_sq:1"},
// STATE-SAME: tensor<f32> {dtensor.optimizer_state = "step"})
// STATE: %[[RES:.*]]:5 = scf.for {{.*}} iter_args(%[[WI:.*]] = %{{.*}}, %[[MI:.*]] = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<8x2xbf16>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<4x2xbf16>)
// STATE: %[[NEW:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[STEP]] : tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<f32>) outs(%{{.*}} : tensor<8x2xf32>)
// STATE: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %[[TAKEN:.*]]: f32, %{{.*}}: f32):
// STATE: arith.addf %{{.*}}, %[[TAKEN]] : f32
// STATE: math.powf
// STATE: %[[NEWA:.*]] = dtensor.annotate %[[NEW]]
// STATE: linalg.generic {{.*}} ins(%[[NEWA]] : tensor<8x2xf32>) outs(%{{.*}} : tensor<8x2xbf16>)
// STATE: arith.truncf %{{.*}} : f32 to bf16
// STATE: scf.yield
// STATE: %[[STEPS:.*]] = linalg.generic {{.*}} ins(%[[STEP]] : tensor<f32>) outs(%{{.*}} : tensor<f32>)
// STATE: arith.constant 2.000000e+00 : f32
// STATE: return %[[RES]]#4, %[[RES]]#0, %[[RES]]#1, %[[RES]]#2, %[[RES]]#3, %[[STEPS]]
// A fresh run's master is the weight in f32; the steps update it, and only
// the weights the forward reads and the one returned are rounded.
// MASTER-FRESH-LABEL: func.func @step_train(
// MASTER-FRESH-SAME: -> (tensor<4x2xbf16>, tensor<4x2xbf16>, tensor<4x2xbf16>, tensor<8x2xbf16> {dtensor.grad_of = 1 : i64, dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// MASTER-FRESH: %[[M0:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<8x2xbf16>) outs(%{{.*}} : tensor<8x2xf32>)
// MASTER-FRESH: arith.extf
// MASTER-FRESH-COUNT-3: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x2xf32>, tensor<8x2xbf16>) outs(%{{.*}} : tensor<8x2xf32>)
// MASTER-FRESH-NOT: optimizer_state
// An f32 weight keeps no master: only the steps taken are added.
// STATE-F32-LABEL: func.func @step_train(
// STATE-F32-SAME: %{{[a-z0-9]+}}: tensor<f32> {dtensor.optimizer_state = "step"})
// STATE-F32-SAME: -> (tensor<4x2xf32>, tensor<8x2xf32> {dtensor.grad_of = 1 : i64, dtensor.layout = #dtensor.layout<@tp, [S(1)]>}, tensor<f32> {dtensor.optimizer_state = "step"})
// STATE-F32-NOT: master
// BAD-STATE: error: train steps: unknown state 'kept' (expected fresh or arguments)
// BAD-MASTER: error: train steps: unknown master-weights 'fp8' (expected none or f32)

// NEGATIVE: error: train steps: momentum and weight-decay must be >= 0
// NOJOINT: error: train steps: no joint forward + backward function (run dtensor-autodiff first)
// ZERO: error: train steps: steps must be at least 1, got 0
// NOTJOINT: error: train steps: @step is not a joint forward + backward function (no 'dtensor.forward_results'; run dtensor-autodiff first)
// MISSING: error: train steps: no function @nope with a body
// EXISTS: error: train steps: @step_train already exists

dtensor.mesh @tp shape = [2]
func.func @step(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {dtensor.param = "w"})
    -> tensor<4x2xf32> {
  %ws = dtensor.annotate %w layout <@tp, [S(1)]> : tensor<8x2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%x, %ws : tensor<4x8xf32>, tensor<8x2xf32>)
                     outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

//--- errors.mlir

// A function whose result is not one of its arguments' gradients.
// expected-error @below {{train steps: result 1 is not the gradient of an argument of the same type}}
func.func @bad(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {dtensor.forward_results = 1 : i64} {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @below {{train steps: argument 1 follows a seed cotangent}}
func.func @order(%d: tensor<4xf32> {dtensor.cotangent = 0 : i64}, %x: tensor<4xf32>)
    -> tensor<4xf32> attributes {dtensor.forward_results = 1 : i64} {
  return %x : tensor<4xf32>
}
