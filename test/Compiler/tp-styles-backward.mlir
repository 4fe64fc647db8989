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

