// The TP styles' backward communication: each plan is applied, the joint
// forward + backward function derived (gradients of the input and both
// parameters, as PyTorch's test_tp_style.py gets them with a
// requires_grad input and out.sum().backward()), partitioned, and its
// collectives counted by the comm report split into forward and backward.
// The counts are test_tp_style.py's: ColwiseParallel 0 / 1 all_reduce;
// ColwiseParallel(input_layouts=Shard(0)) 1 all_gather / 1 reduce_scatter;
// RowwiseParallel 1 all_reduce / 0; RowwiseParallel(output_layouts=Shard(0))
// 1 reduce_scatter / 1 all_gather.
//
// RUN: split-file %s %t
// RUN: dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel"}}}' --dtensor-autodiff='functions=linear wrt=0,1,2' --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=COL
// RUN: dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel", "input_layouts": ["Shard(0)"]}}}' --dtensor-autodiff='functions=linear wrt=0,1,2' --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=COL-S0
// RUN: dtensor-opt %t/rowwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "RowwiseParallel"}}}' --dtensor-autodiff='functions=linear wrt=0,1,2' --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=ROW
// RUN: dtensor-opt %t/rowwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "RowwiseParallel", "output_layouts": "S(0)"}}}' --dtensor-autodiff='functions=linear wrt=0,1,2' --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=ROW-S0
// Embeddings (test_tp_style.py): colwise 0 / 0; rowwise with a Replicate
// input 1 all_reduce / 0; rowwise with output_layouts=Shard(1) 1
// reduce_scatter / 1 all_gather. The table's gradient is the scatter-add
// of the cotangent rows, computed where the table shard lives.
// RUN: dtensor-opt %t/embedding.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"tok": {"style": "ColwiseParallel"}}}' --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=EMB-COL
// RUN: dtensor-opt %t/embedding.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"tok": {"style": "RowwiseParallel", "input_layouts": "R"}}}' --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=EMB-ROW
// RUN: dtensor-opt %t/embedding-1d.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"tok": {"style": "RowwiseParallel", "input_layouts": "Replicate()", "output_layouts": "Shard(1)"}}}' --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=EMB-RS
// SequenceParallel (test_tp_style.py's test_sequence_parallel_style): a
// LayerNorm with and without affine parameters and an RMSNorm on a
// [20, 8 * 4, 12] input that requires grad, sharded on the sequence; out
// backward with a seed in the output's S(1). PyTorch counts 0 collectives
// forward and backward: the norm weights' gradients stay Partial after
// backward(), as with grad-layouts=free. With the default grad-layouts the
// joint function returns them laid out as their parameters (R), which
// costs one more collective in the backward (see docs/autodiff.md).
// RUN: dtensor-opt %t/layernorm.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"norm": {"style": "SequenceParallel"}}}' --dtensor-autodiff='wrt=0,1,2 grad-layouts=free' --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=SP-LN
// RUN: dtensor-opt %t/layernorm-noaffine.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"norm": {"style": "SequenceParallel"}}}' --dtensor-autodiff='wrt=0 grad-layouts=free' --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=SP-LN-NOAFF
// RUN: dtensor-opt %t/rmsnorm.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"norm": {"style": "SequenceParallel"}}}' --dtensor-autodiff='wrt=0,1 grad-layouts=free' --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=SP-RMS
// RUN: dtensor-opt %t/layernorm.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"norm": {"style": "SequenceParallel"}}}' --dtensor-autodiff='wrt=0,1,2' --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=SP-LN-R
// PrepareModuleInput(input_layouts=Shard(0), desired_input_layouts=
// Replicate()) on an identity module (test_prepare_module_input), the input
// requiring grad: forward one all_gather; backward the Replicate gradient
// goes back to Shard(0) by a local chunk, no collective.
// PrepareModuleOutput(output_layouts=Replicate(), desired_output_layouts=
// Shard(0)) (test_prepare_module_output): forward a local chunk, no
// collective; backward the Shard(0) gradient is all_gathered back to
// Replicate, as DTensor's Redistribute.backward does.
// RUN: dtensor-opt %t/identity.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"id": {"style": "PrepareModuleInput", "input_layouts": ["S(0)"], "desired_input_layouts": ["R"]}}}' --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=PMI
// RUN: dtensor-opt %t/identity.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"id": {"style": "PrepareModuleOutput", "output_layouts": ["R"], "desired_output_layouts": ["S(0)"]}}}' --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=PMO
// test_prepare_module_kwargs_input: linear(x) + y with the linear
// ColwiseParallel and y prepared from Shard(0) to Replicate(): forward one
// all_gather (y), as PyTorch counts. Neither x nor y requires grad there, so
// the backward is the colwise weight's gradient, computed locally: 0.
// RUN: dtensor-opt %t/kwargs.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"top": {"style": "PrepareModuleInput", "input_layouts": [null, "S(0)"], "desired_input_layouts": [null, "R"]}, "linear": {"style": "ColwiseParallel"}}}' --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=PMI-KW
//
// The examples' plans: the TP MLP (Megatron colwise + rowwise: one
// all_reduce each way), the sequence-parallel block (forward all_gather +
// reduce_scatter, backward all_gather + reduce_scatter as PyTorch, plus the
// all_reduce that makes the replicated norm weight's Partial gradient
// Replicate, as its parameter), attention (backward: the all_gather of the
// Shard(0) output's gradient; the input has no gradient).
// RUN: dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=MLP
// RUN: dtensor-opt %dtensor_src_root/examples/sequence_parallel_mlp.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=SP
// With grad-layouts=free the norm weight's gradient stays Partial, as after
// PyTorch's backward(): the backward is then exactly PyTorch's.
// RUN: dtensor-opt %dtensor_src_root/examples/sequence_parallel_mlp.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json --dtensor-autodiff=grad-layouts=free --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=SP-FREE
// The same block with a bias on the RowwiseParallel w2 (issue 27;
// test_transformer_training's sequence-parallel model has them): with
// grad-layouts=free the backward is PyTorch's all_gather + reduce_scatter
// and w2's gradient is sharded like w2 (Shard(1): 32x16 per rank), computed
// from the all_gathered output cotangent the input gradient needs too, not
// a full-size P(sum) replica after an all_to_all of the activation; with
// the default layouts one more all_reduce makes the bias's Partial
// gradient Replicate (its parameter's layout).
// RUN: dtensor-opt %t/sp-bias.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json --dtensor-autodiff=grad-layouts=free --dtensor-spmd --dtensor-comm-report | FileCheck %s --check-prefix=SP-BIAS-FREE
// RUN: dtensor-opt %t/sp-bias.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=SP-BIAS
// RUN: dtensor-opt %dtensor_src_root/examples/attention.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/attention.plan.json --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=ATTN
// FSDP + TP on a 2x2 mesh: forward, the two FSDP all_gathers over dp and
// the rowwise all_reduce over tp; backward, one reduce_scatter over dp per
// weight (FSDP's gradient reduce-scatter), nothing else.
// RUN: dtensor-opt %dtensor_src_root/examples/fsdp_tp_mlp.mlir --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=FSDP
// The split follows dependences, not positions: after scheduling for
// overlap (every collective async, moved) it is the same.
// RUN: dtensor-opt %dtensor_src_root/examples/sequence_parallel_mlp.mlir --pass-pipeline='builtin.module(dtensor-apply-tp-plan{plan=%dtensor_src_root/examples/sequence_parallel_mlp.plan.json},dtensor-autodiff,dtensor-pipeline{to=scheduled},dtensor-comm-report)' -o /dev/null | FileCheck %s --check-prefix=SP-SCHED
// The JSON report carries the same split.
// RUN: dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel"}}}' --dtensor-autodiff='functions=linear wrt=0,1,2' --dtensor-spmd --dtensor-comm-report=format=json -o /dev/null | FileCheck %s --check-prefix=JSON

// COL-LABEL: comm report for @linear_grad
// COL: forward:
// COL-NEXT: total 0 0 0
// COL-NEXT: backward:
// COL-NEXT: all_reduce 1 0
// COL-NEXT: total 1 0

// COL-S0-LABEL: comm report for @linear_grad
// COL-S0: forward:
// COL-S0-NEXT: all_gather 1 0
// COL-S0-NEXT: total 1 0
// COL-S0-NEXT: backward:
// COL-S0-NEXT: reduce_scatter 1 0
// COL-S0-NEXT: total 1 0

// ROW-LABEL: comm report for @linear_grad
// ROW: forward:
// ROW-NEXT: all_reduce 1 0
// ROW-NEXT: total 1 0
// ROW-NEXT: backward:
// ROW-NEXT: total 0 0 0

// ROW-S0-LABEL: comm report for @linear_grad
// ROW-S0: forward:
// ROW-S0-NEXT: reduce_scatter 1 0
// ROW-S0-NEXT: total 1 0
// ROW-S0-NEXT: backward:
// ROW-S0-NEXT: all_gather 1 0
// ROW-S0-NEXT: total 1 0

// MLP-LABEL: comm report for @mlp_grad
// MLP: forward:
// MLP-NEXT: all_reduce 1 0
// MLP-NEXT: total 1 0
// MLP-NEXT: backward:
// MLP-NEXT: all_reduce 1 0
// MLP-NEXT: total 1 0

// SP-LABEL: comm report for @ffn_block_grad
// SP: forward:
// SP-NEXT: all_gather 1 0
// SP-NEXT: reduce_scatter 1 0
// SP-NEXT: total 2 0
// SP-NEXT: backward:
// SP-NEXT: all_gather 1 0
// SP-NEXT: all_reduce 1 0 128
// SP-NEXT: reduce_scatter 1 0
// SP-NEXT: total 3 0

// SP-SCHED-LABEL: comm report for @ffn_block_grad
// SP-SCHED: forward:
// SP-SCHED-NEXT: all_gather 1 1
// SP-SCHED-NEXT: reduce_scatter 1 1
// SP-SCHED-NEXT: total 2 2
// SP-SCHED-NEXT: backward:
// SP-SCHED-NEXT: all_gather 1 1
// SP-SCHED-NEXT: all_reduce 1 1 128
// SP-SCHED-NEXT: reduce_scatter 1 1
// SP-SCHED-NEXT: total 3 3

// SP-BIAS-FREE-LABEL: comm report for @ffn_block_grad
// SP-BIAS-FREE: backward:
// SP-BIAS-FREE-NEXT: all_gather 1 0
// SP-BIAS-FREE-NEXT: reduce_scatter 1 0
// SP-BIAS-FREE-NEXT: total 2 0
// SP-BIAS-FREE: func.func @ffn_block_grad
// SP-BIAS-FREE-SAME: tensor<32x16xf32> {dtensor.global_type = tensor<32x64xf32>, dtensor.grad_of = 3 : i64, dtensor.layout = #dtensor.layout<@tp, [S(1)]>}

// SP-BIAS-LABEL: comm report for @ffn_block_grad
// SP-BIAS: backward:
// SP-BIAS-NEXT: all_gather 1 0
// SP-BIAS-NEXT: all_reduce 1 0
// SP-BIAS-NEXT: reduce_scatter 1 0
// SP-BIAS-NEXT: total 3 0

// SP-FREE-LABEL: comm report for @ffn_block_grad
// SP-FREE: backward:
// SP-FREE-NEXT: all_gather 1 0
// SP-FREE-NEXT: reduce_scatter 1 0
// SP-FREE-NEXT: total 2 0

// ATTN-LABEL: comm report for @attention_grad
// ATTN: forward:
// ATTN-NEXT: all_gather 1 0
// ATTN-NEXT: reduce_scatter 1 0
// ATTN-NEXT: total 2 0
// ATTN-NEXT: backward:
// ATTN-NEXT: all_gather 1 0
// ATTN-NEXT: total 1 0

// FSDP-LABEL: comm report for @fsdp_tp_mlp_grad
// FSDP: forward:
// FSDP-NEXT: all_gather 2 0
// FSDP-NEXT: all_reduce 1 0
// FSDP-NEXT: total 3 0
// FSDP-NEXT: backward:
// FSDP-NEXT: reduce_scatter 2 0
// FSDP-NEXT: total 2 0

// EMB-COL-LABEL: comm report for @embed_grad
// EMB-COL: forward:
// EMB-COL-NEXT: total 0 0 0
// EMB-COL-NEXT: backward:
// EMB-COL-NEXT: total 0 0 0

// EMB-ROW-LABEL: comm report for @embed_grad
// EMB-ROW: forward:
// EMB-ROW-NEXT: all_reduce 1 0
// EMB-ROW-NEXT: total 1 0
// EMB-ROW-NEXT: backward:
// EMB-ROW-NEXT: total 0 0 0

// EMB-RS-LABEL: comm report for @embed_grad
// EMB-RS: forward:
// EMB-RS-NEXT: reduce_scatter 1 0
// EMB-RS-NEXT: total 1 0
// EMB-RS-NEXT: backward:
// EMB-RS-NEXT: all_gather 1 0
// EMB-RS-NEXT: total 1 0

// SP-LN-LABEL: comm report for @norm_grad
// SP-LN: forward:
// SP-LN-NEXT: total 0 0 0
// SP-LN-NEXT: backward:
// SP-LN-NEXT: total 0 0 0

// SP-LN-NOAFF-LABEL: comm report for @norm_grad
// SP-LN-NOAFF: forward:
// SP-LN-NOAFF-NEXT: total 0 0 0
// SP-LN-NOAFF-NEXT: backward:
// SP-LN-NOAFF-NEXT: total 0 0 0

// SP-RMS-LABEL: comm report for @norm_grad
// SP-RMS: forward:
// SP-RMS-NEXT: total 0 0 0
// SP-RMS-NEXT: backward:
// SP-RMS-NEXT: total 0 0 0

// SP-LN-R-LABEL: comm report for @norm_grad
// SP-LN-R: forward:
// SP-LN-R-NEXT: total 0 0 0
// SP-LN-R-NEXT: backward:
// SP-LN-R: total 2 0

// PMI-LABEL: comm report for @ident_grad
// PMI: forward:
// PMI-NEXT: all_gather 1 0
// PMI-NEXT: total 1 0
// PMI-NEXT: backward:
// PMI-NEXT: total 0 0 0

// PMO-LABEL: comm report for @ident_grad
// PMO: forward:
// PMO-NEXT: total 0 0 0
// PMO-NEXT: backward:
// PMO-NEXT: all_gather 1 0
// PMO-NEXT: total 1 0

// PMI-KW-LABEL: comm report for @kw_grad
// PMI-KW: forward:
// PMI-KW-NEXT: all_gather 1 0
// PMI-KW-NEXT: total 1 0
// PMI-KW-NEXT: backward:
// PMI-KW-NEXT: total 0 0 0

// JSON: "name": "linear_grad"
// JSON: "phases": {
// JSON-NEXT: "forward": {
// JSON-NEXT: "collectives": {},
// JSON-NEXT: "total": {
// JSON-NEXT: "count": 0,
// JSON: "backward": {
// JSON-NEXT: "collectives": {
// JSON-NEXT: "all_reduce": {
// JSON-NEXT: "count": 1,

//--- colwise.mlir
// nn.Linear(16, 16) on an 8x16 input; the weight is stored [out, in] as in
// PyTorch, so out features are its dim 0.
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs_t = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
dtensor.mesh @tp shape = [4]
func.func @linear(%x: tensor<8x16xf32>,
                  %w: tensor<16x16xf32> {dtensor.param = "net.weight"},
                  %b: tensor<16xf32> {dtensor.param = "net.bias"})
    -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.generic {indexing_maps = [#lhs, #rhs_t, #out],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x16xf32>, tensor<16x16xf32>)
      outs(%f : tensor<8x16xf32>) attrs = {dtensor.module = "net"} {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %yb = linalg.generic {indexing_maps = [#id, #row, #id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : tensor<8x16xf32>, tensor<16xf32>)
      outs(%e2 : tensor<8x16xf32>) attrs = {dtensor.module = "net"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %yb : tensor<8x16xf32>
}
// The plan as annotations: the input is a plain tensor (R), the weight and
// bias are sharded on out features, the output is requested as S(-1).

// Per rank: out.shape == (8, 16 // 4), no collective.

//--- rowwise.mlir
// nn.Linear(16, 16) with the weight stored [in, out] (a plain matmul): in
// features are its dim 0. The input is the local 8x4 slice, S(-1).
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
dtensor.mesh @tp shape = [4]
func.func @linear(%x: tensor<8x16xf32>,
                  %w: tensor<16x16xf32> {dtensor.param = "net.weight"},
                  %b: tensor<16xf32> {dtensor.param = "net.bias"})
    -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x16xf32>)
      outs(%f : tensor<8x16xf32>) {dtensor.module = "net"} -> tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %yb = linalg.generic {indexing_maps = [#id, #row, #id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : tensor<8x16xf32>, tensor<16xf32>)
      outs(%e2 : tensor<8x16xf32>) attrs = {dtensor.module = "net"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %yb : tensor<8x16xf32>
}

// Per rank: out.shape == (8 // 4, 16).

//--- embedding.mlir
// nn.Embedding(16, 16) looked up with 4x2 indices.
dtensor.mesh @tp shape = [4]
func.func @embed(%ids: tensor<4x2x1xindex>,
                 %table: tensor<16x16xf32> {dtensor.param = "tok.weight"})
    -> tensor<4x2x16xf32> {
  %out = tensor.gather %table[%ids] gather_dims([0]) {dtensor.module = "tok"}
      : (tensor<16x16xf32>, tensor<4x2x1xindex>) -> tensor<4x2x16xf32>
  return %out : tensor<4x2x16xf32>
}
// Colwise: the table is S(1), out.shape == (4, 2, 16 // 4).

// Rowwise: the table is S(0); the masked lookup is Partial.

//--- embedding-1d.mlir
// nn.Embedding(16, 16) looked up with 8 indices.
dtensor.mesh @tp shape = [4]
func.func @embed(%ids: tensor<8x1xindex>,
                 %table: tensor<16x16xf32> {dtensor.param = "tok.weight"})
    -> tensor<8x16xf32> {
  %out = tensor.gather %table[%ids] gather_dims([0]) {dtensor.module = "tok"}
      : (tensor<16x16xf32>, tensor<8x1xindex>) -> tensor<8x16xf32>
  return %out : tensor<8x16xf32>
}
// Per rank: out.shape == (8, 16 // 4).

// The indices arrive as S(-1) of PyTorch's 1-D index tensor, i.e. S(0).


//--- layernorm.mlir
// nn.LayerNorm(12) on [batch 20, seq 32, 12].
#x = affine_map<(b, s, h) -> (b, s, h)>
#bs = affine_map<(b, s, h) -> (b, s)>
#h = affine_map<(b, s, h) -> (h)>
dtensor.mesh @tp shape = [4]
func.func @norm(%x: tensor<20x32x12xf32>,
                %g: tensor<12xf32> {dtensor.param = "norm.weight"},
                %bias: tensor<12xf32> {dtensor.param = "norm.bias"})
    -> tensor<20x32x12xf32> {
  %zero = arith.constant 0.0 : f32
  %inv = arith.constant 0.0833333358 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e0 = tensor.empty() : tensor<20x32xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<20x32xf32>) -> tensor<20x32xf32>
  %sum = linalg.generic {indexing_maps = [#x, #bs], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<20x32x12xf32>) outs(%f0 : tensor<20x32xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<20x32xf32>
  %e1 = tensor.empty() : tensor<20x32x12xf32>
  %c = linalg.generic {indexing_maps = [#x, #bs, #x], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %sum : tensor<20x32x12xf32>, tensor<20x32xf32>) outs(%e1 : tensor<20x32x12xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %s: f32, %o: f32):
    %m = arith.mulf %s, %inv : f32
    %d = arith.subf %in, %m : f32
    linalg.yield %d : f32
  } -> tensor<20x32x12xf32>
  %var = linalg.generic {indexing_maps = [#x, #bs], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%c : tensor<20x32x12xf32>) outs(%f0 : tensor<20x32xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %acc: f32):
    %p = arith.mulf %in, %in : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<20x32xf32>
  %e2 = tensor.empty() : tensor<20x32x12xf32>
  %y = linalg.generic {indexing_maps = [#x, #bs, #h, #h, #x], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c, %var, %g, %bias : tensor<20x32x12xf32>, tensor<20x32xf32>, tensor<12xf32>, tensor<12xf32>)
      outs(%e2 : tensor<20x32x12xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %v: f32, %gain: f32, %b: f32, %o: f32):
    %m = arith.mulf %v, %inv : f32
    %ve = arith.addf %m, %eps : f32
    %r = math.rsqrt %ve : f32
    %n = arith.mulf %in, %r : f32
    %z = arith.mulf %n, %gain : f32
    %zb = arith.addf %z, %b : f32
    linalg.yield %zb : f32
  } -> tensor<20x32x12xf32>
  return %y : tensor<20x32x12xf32>
}

//--- layernorm-noaffine.mlir
// nn.LayerNorm(12, elementwise_affine=False).
#x = affine_map<(b, s, h) -> (b, s, h)>
#bs = affine_map<(b, s, h) -> (b, s)>
#h = affine_map<(b, s, h) -> (h)>
dtensor.mesh @tp shape = [4]
func.func @norm(%x: tensor<20x32x12xf32>)
    -> tensor<20x32x12xf32> {
  %zero = arith.constant 0.0 : f32
  %inv = arith.constant 0.0833333358 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e0 = tensor.empty() : tensor<20x32xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<20x32xf32>) -> tensor<20x32xf32>
  %sum = linalg.generic {indexing_maps = [#x, #bs], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<20x32x12xf32>) outs(%f0 : tensor<20x32xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<20x32xf32>
  %e1 = tensor.empty() : tensor<20x32x12xf32>
  %c = linalg.generic {indexing_maps = [#x, #bs, #x], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %sum : tensor<20x32x12xf32>, tensor<20x32xf32>) outs(%e1 : tensor<20x32x12xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %s: f32, %o: f32):
    %m = arith.mulf %s, %inv : f32
    %d = arith.subf %in, %m : f32
    linalg.yield %d : f32
  } -> tensor<20x32x12xf32>
  %var = linalg.generic {indexing_maps = [#x, #bs], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%c : tensor<20x32x12xf32>) outs(%f0 : tensor<20x32xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %acc: f32):
    %p = arith.mulf %in, %in : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<20x32xf32>
  %e2 = tensor.empty() : tensor<20x32x12xf32>
  %y = linalg.generic {indexing_maps = [#x, #bs, #x], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c, %var : tensor<20x32x12xf32>, tensor<20x32xf32>)
      outs(%e2 : tensor<20x32x12xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %v: f32, %o: f32):
    %m = arith.mulf %v, %inv : f32
    %ve = arith.addf %m, %eps : f32
    %r = math.rsqrt %ve : f32
    %n = arith.mulf %in, %r : f32
    linalg.yield %n : f32
  } -> tensor<20x32x12xf32>
  return %y : tensor<20x32x12xf32>
}

//--- rmsnorm.mlir
// RMSNormPython(12).
#x = affine_map<(b, s, h) -> (b, s, h)>
#bs = affine_map<(b, s, h) -> (b, s)>
#h = affine_map<(b, s, h) -> (h)>
dtensor.mesh @tp shape = [4]
func.func @norm(%x: tensor<20x32x12xf32>,
                %g: tensor<12xf32> {dtensor.param = "norm.weight"})
    -> tensor<20x32x12xf32> {
  %zero = arith.constant 0.0 : f32
  %inv = arith.constant 0.0833333358 : f32
  %eps = arith.constant 1.0e-6 : f32
  %e0 = tensor.empty() : tensor<20x32xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<20x32xf32>) -> tensor<20x32xf32>
  %sq = linalg.generic {indexing_maps = [#x, #bs], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<20x32x12xf32>) outs(%f0 : tensor<20x32xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %acc: f32):
    %p = arith.mulf %in, %in : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<20x32xf32>
  %e1 = tensor.empty() : tensor<20x32x12xf32>
  %y = linalg.generic {indexing_maps = [#x, #bs, #h, #x], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %sq, %g : tensor<20x32x12xf32>, tensor<20x32xf32>, tensor<12xf32>)
      outs(%e1 : tensor<20x32x12xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %ss: f32, %gain: f32, %o: f32):
    %m = arith.mulf %ss, %inv : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    %n = arith.mulf %in, %r : f32
    %z = arith.mulf %n, %gain : f32
    linalg.yield %z : f32
  } -> tensor<20x32x12xf32>
  return %y : tensor<20x32x12xf32>
}

//--- identity.mlir
// nn.Identity as one copy.
dtensor.mesh @tp shape = [4]
func.func @ident(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %y = linalg.copy {dtensor.module = "id"} ins(%x : tensor<8x16xf32>)
      outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

//--- kwargs.mlir
// TestKwargModule: linear(x) + y, y the keyword input (here the second operand
// of the add, the module "top").
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs_t = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
dtensor.mesh @tp shape = [4]
func.func @kw(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>,
              %w: tensor<8x8xf32> {dtensor.param = "linear.weight"})
    -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = linalg.generic {indexing_maps = [#lhs, #rhs_t, #out],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>)
      outs(%f : tensor<4x8xf32>) attrs = {dtensor.module = "linear"} {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %o = linalg.add {dtensor.module = "top"} ins(%l, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

//--- sp-bias.mlir

// examples/sequence_parallel_mlp.mlir with a bias added to ffn.w2.
#x = affine_map<(b, s, h) -> (b, s, h)>
#bs = affine_map<(b, s, h) -> (b, s)>
#h = affine_map<(b, s, h) -> (h)>
#in = affine_map<(b, s, o, k) -> (b, s, k)>
#w = affine_map<(b, s, o, k) -> (o, k)>
#out = affine_map<(b, s, o, k) -> (b, s, o)>

dtensor.mesh @tp shape = [4] names = ["tp"]

func.func @ffn_block(
    %x: tensor<2x16x32xf32>,
    %g: tensor<32xf32> {dtensor.param = "norm.weight"},
    %w1: tensor<64x32xf32> {dtensor.param = "ffn.w1.weight"},
    %w2: tensor<32x64xf32> {dtensor.param = "ffn.w2.weight"},
    %bias: tensor<32xf32> {dtensor.param = "ffn.w2.bias"})
    -> tensor<2x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %inv_dim = arith.constant 0.03125 : f32
  %eps = arith.constant 1.0e-6 : f32

  // norm: x / sqrt(mean(x^2) + eps) * g over the hidden dim.
  %e0 = tensor.empty() : tensor<2x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x16xf32>)
      -> tensor<2x16xf32>
  %sq = linalg.generic {indexing_maps = [#x, #bs],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x16x32xf32>) outs(%f0 : tensor<2x16xf32>)
      attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %acc: f32):
    %p = arith.mulf %in, %in : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x16xf32>
  %e1 = tensor.empty() : tensor<2x16x32xf32>
  %n = linalg.generic {indexing_maps = [#x, #bs, #h, #x],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %sq, %g : tensor<2x16x32xf32>, tensor<2x16xf32>, tensor<32xf32>)
      outs(%e1 : tensor<2x16x32xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%in: f32, %ss: f32, %gain: f32, %o: f32):
    %mean = arith.mulf %ss, %inv_dim : f32
    %var = arith.addf %mean, %eps : f32
    %rms = math.sqrt %var : f32
    %y = arith.divf %in, %rms : f32
    %z = arith.mulf %y, %gain : f32
    linalg.yield %z : f32
  } -> tensor<2x16x32xf32>

  // ffn.w1: hidden 32 -> 64, then relu.
  %e2 = tensor.empty() : tensor<2x16x64xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x16x64xf32>)
      -> tensor<2x16x64xf32>
  %u = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%n, %w1 : tensor<2x16x32xf32>, tensor<64x32xf32>)
      outs(%f2 : tensor<2x16x64xf32>) attrs = {dtensor.module = "ffn.w1"} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x16x64xf32>
  %e3 = tensor.empty() : tensor<2x16x64xf32>
  %a = linalg.generic {indexing_maps = [#x, #x],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%u : tensor<2x16x64xf32>) outs(%e3 : tensor<2x16x64xf32>)
      attrs = {dtensor.module = "ffn"} {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x16x64xf32>

  // ffn.w2: 64 -> hidden 32.
  %e4 = tensor.empty() : tensor<2x16x32xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<2x16x32xf32>)
      -> tensor<2x16x32xf32>
  %d = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel",
                                         "reduction"]}
      ins(%a, %w2 : tensor<2x16x64xf32>, tensor<32x64xf32>)
      outs(%f4 : tensor<2x16x32xf32>) attrs = {dtensor.module = "ffn.w2"} {
  ^bb0(%p0: f32, %p1: f32, %acc: f32):
    %p = arith.mulf %p0, %p1 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x16x32xf32>
  %eb = tensor.empty() : tensor<2x16x32xf32>
  %db = linalg.generic {indexing_maps = [#x, #h, #x],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%d, %bias : tensor<2x16x32xf32>, tensor<32xf32>)
      outs(%eb : tensor<2x16x32xf32>) attrs = {dtensor.module = "ffn.w2"} {
  ^bb0(%v: f32, %bb: f32, %o: f32):
    %r = arith.addf %v, %bb : f32
    linalg.yield %r : f32
  } -> tensor<2x16x32xf32>

  // The residual, outside every module.
  %e5 = tensor.empty() : tensor<2x16x32xf32>
  %h = linalg.add ins(%x, %db : tensor<2x16x32xf32>, tensor<2x16x32xf32>)
      outs(%e5 : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  return %h : tensor<2x16x32xf32>
}
