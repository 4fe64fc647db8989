// Tests of --dtensor-apply-tp-plan: PyTorch parallelize_module plans on
// global-view programs, partitioned with --dtensor-spmd. The forward
// collectives of each case are those PyTorch issues for the same plan
// (test_tp_style.py and test_dtensor_compile.py): `%{check}` makes FileCheck
// fail on any collective the CHECK lines do not name. The plan is a pass
// option, the same for every chunk of -split-input-file, so the cases are
// split-file parts, each run with its own plan.
//
// DEFINE: %{check} = FileCheck --implicit-check-not=dtensor.all_ --implicit-check-not=dtensor.reduce_scatter --implicit-check-not=dtensor.permute --implicit-check-not=dtensor.broadcast --implicit-check-not=dtensor.matmul_reduce_scatter --implicit-check-not=dtensor.annotate --implicit-check-not=dtensor.redistribute
//
// RUN: split-file --leading-lines %s %t
//
// ColwiseParallel: no forward comm by default; input_layouts=Shard(0) makes
// the input an all_gather.
// RUN: dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel"}}}' | FileCheck %t/colwise.mlir --check-prefix=PLAN
// RUN: dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel"}}}' --dtensor-spmd | %{check} %t/colwise.mlir
// RUN: dtensor-opt %t/colwise-shard0.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel", "input_layouts": ["Shard(0)"]}}}' --dtensor-spmd | %{check} %t/colwise-shard0.mlir
//
// RowwiseParallel: the Partial result is one all_reduce (output R, default)
// or one reduce_scatter (output_layouts=Shard(0)).
// RUN: dtensor-opt %t/rowwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "RowwiseParallel"}}}' --dtensor-spmd | %{check} %t/rowwise.mlir --check-prefix=ROW-R
// RUN: dtensor-opt %t/rowwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "RowwiseParallel", "output_layouts": "S(0)"}}}' --dtensor-spmd | %{check} %t/rowwise.mlir --check-prefix=ROW-S0
//
// Embeddings: colwise has no comm; rowwise with a Replicate input is one
// all_reduce, with output_layouts=Shard(1) one reduce_scatter; with the
// default input_layouts (S(-1), the last index dim) the indices are gathered
// first.
// RUN: dtensor-opt %t/embedding.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"tok": {"style": "ColwiseParallel"}}}' --dtensor-spmd | %{check} %t/embedding.mlir --check-prefix=EMB-COL
// RUN: dtensor-opt %t/embedding.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"tok": {"style": "RowwiseParallel", "input_layouts": "R"}}}' --dtensor-spmd | %{check} %t/embedding.mlir --check-prefix=EMB-ROW
// RUN: dtensor-opt %t/embedding-1d.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"tok": {"style": "RowwiseParallel", "input_layouts": "Replicate()", "output_layouts": "Shard(1)"}}}' --dtensor-spmd | %{check} %t/embedding-1d.mlir --check-prefix=EMB-RS
// RUN: dtensor-opt %t/embedding-1d.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"tok": {"style": "RowwiseParallel"}}}' --dtensor-spmd | %{check} %t/embedding-1d.mlir --check-prefix=EMB-DEFAULT
//
// PrepareModuleInput (Shard(0), None) -> (Replicate, None): one all_gather,
// seen only by the module's ops; the None input is left alone.
// RUN: dtensor-opt %t/prepare-input.mlir --dtensor-apply-tp-plan=plan=%t/prepare-input.json | FileCheck %t/prepare-input.mlir --check-prefix=PLAN
// RUN: dtensor-opt %t/prepare-input.mlir --dtensor-apply-tp-plan=plan=%t/prepare-input.json --dtensor-spmd | %{check} %t/prepare-input.mlir
//
// PrepareModuleOutput Replicate -> Shard(0): a local chunk, no comm; a list
// gives one module several styles.
// RUN: dtensor-opt %t/prepare-output.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"act": [{"style": "PrepareModuleInput", "input_layouts": ["R"], "desired_input_layouts": ["R"]}, {"style": "PrepareModuleOutput", "output_layouts": ["R"], "desired_output_layouts": ["S(0)"]}]}}' --dtensor-spmd | %{check} %t/prepare-output.mlir
//
// Two linears sharing one zero init: each gets the init in its own layout
// (colwise S(1), rowwise P), so the pair is still one all_reduce.
// RUN: dtensor-opt %t/shared-init.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"up": {"style": "ColwiseParallel"}, "down": {"style": "RowwiseParallel"}}}' --dtensor-spmd | %{check} %t/shared-init.mlir
//
// test_dtensor_compile.py, test_tp_compile_fullgraph: the two-layer MLP
// without sequence parallel (Colwise, Rowwise twice: two all_reduces), the
// same plan written with glob patterns, and with sequence parallel
// (all_gather, reduce_scatter, all_gather, all_reduce, then a local chunk).
// RUN: dtensor-opt %t/mlp.mlir --dtensor-apply-tp-plan=plan=%t/mlp.json --dtensor-spmd | %{check} %t/mlp.mlir --check-prefix=MLP
// RUN: dtensor-opt %t/mlp.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"mlp_*.net1": {"style": "ColwiseParallel"}, "mlp_?.net2": {"style": "RowwiseParallel"}}}' --dtensor-spmd | %{check} %t/mlp.mlir --check-prefix=MLP
// RUN: dtensor-opt %t/mlp.mlir --dtensor-apply-tp-plan=plan=%t/mlp-sp.json --dtensor-spmd | %{check} %t/mlp.mlir --check-prefix=MLP-SP
//
// test_tp_compile_comm_reordering: FakeAttention with its input Shard(0) ->
// Replicate, wq/wk/wv colwise, wo rowwise to Shard(0): all_gather then
// reduce_scatter. Without PrepareModuleInput and with wo to Replicate: one
// all_reduce.
// RUN: dtensor-opt %t/attention.mlir --dtensor-apply-tp-plan=plan=%t/attention.json --dtensor-spmd | %{check} %t/attention.mlir --check-prefix=ATTN
// RUN: dtensor-opt %t/attention.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"attn.w[qkv]": {"style": "ColwiseParallel"}, "attn.wo": {"style": "RowwiseParallel"}}}' --dtensor-spmd | %{check} %t/attention.mlir --check-prefix=ATTN-TP
//
// SequenceParallel: the input is Shard(sequence_dim), parameters Replicate,
// no comm.
// RUN: dtensor-opt %t/sequence.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"norm": {"style": "SequenceParallel"}}}' --dtensor-spmd | %{check} %t/sequence.mlir
// RUN: dtensor-opt %t/sequence.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"norm": {"style": "SequenceParallel", "sequence_dim": -3}}}' --dtensor-spmd | %{check} %t/sequence.mlir --check-prefix=SEQ0
//
// A 2-D mesh: the styles act on mesh_dim 1, input_layouts give the data
// parallel placement on mesh dim 0, which the wanted layouts keep.
// RUN: dtensor-opt %t/mesh2d.mlir --dtensor-apply-tp-plan=plan=%t/mesh2d.json --dtensor-spmd | %{check} %t/mesh2d.mlir
//
// Several meshes: the mesh option or the plan's "mesh" picks one.
// RUN: dtensor-opt %t/two-meshes.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "RowwiseParallel"}}} mesh=@b' --dtensor-spmd | %{check} %t/two-meshes.mlir
// RUN: dtensor-opt %t/two-meshes.mlir --dtensor-apply-tp-plan='plan-json={"mesh": "b", "plan": {"net": {"style": "RowwiseParallel"}}}' --dtensor-spmd | %{check} %t/two-meshes.mlir
//
// Errors in the plan itself.
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan=plan=%t/does-not-exist.json 2>&1 | FileCheck %s --check-prefix=ERR-FILE
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel"}' 2>&1 | FileCheck %s --check-prefix=ERR-JSON
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColParallel"}}}' 2>&1 | FileCheck %s --check-prefix=ERR-STYLE
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel", "input_layouts": ["S(x)"]}}}' 2>&1 | FileCheck %s --check-prefix=ERR-PLACEMENT
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel", "input_layout": ["R"]}}}' 2>&1 | FileCheck %s --check-prefix=ERR-FIELD
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel", "input_layouts": ["R", "R"]}}}' 2>&1 | FileCheck %s --check-prefix=ERR-COUNT-COL
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "PrepareModuleInput", "input_layouts": ["S(0)", null], "desired_input_layouts": ["R"]}}}' 2>&1 | FileCheck %s --check-prefix=ERR-COUNT-PAIR
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "PrepareModuleOutput", "output_layouts": ["R"]}}}' 2>&1 | FileCheck %s --check-prefix=ERR-DESIRED
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "SequenceParallel", "sequence_dim": "1"}}}' 2>&1 | FileCheck %s --check-prefix=ERR-SEQDIM
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel"}}, "meshes": "tp"}' 2>&1 | FileCheck %s --check-prefix=ERR-TOP
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"mesh": "tp"}' 2>&1 | FileCheck %s --check-prefix=ERR-NOPLAN
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan 2>&1 | FileCheck %s --check-prefix=ERR-NEITHER
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan=%t/mlp.json plan-json={"plan": {}}' 2>&1 | FileCheck %s --check-prefix=ERR-BOTH
// RUN: not dtensor-opt %t/colwise.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "ColwiseParallel"}}} mesh=@dp' 2>&1 | FileCheck %s --check-prefix=ERR-NOMESH
//
// ERR-FILE: error: tp plan: cannot read plan file '{{.*}}does-not-exist.json':
// ERR-JSON: error: tp plan: malformed JSON: [1:{{[0-9]+}}, byte={{[0-9]+}}]: Expected , or } after object property
// ERR-STYLE: error: tp plan: entry 'net': unknown style 'ColParallel' (expected ColwiseParallel, RowwiseParallel, SequenceParallel, PrepareModuleInput or PrepareModuleOutput)
// ERR-PLACEMENT: error: tp plan: entry 'net' (ColwiseParallel): input_layouts[0]: bad placement 'S(x)' (expected S(dim), R, P or P(sum|avg|product|min|max))
// ERR-FIELD: error: tp plan: entry 'net' (ColwiseParallel): unknown field 'input_layout' (allowed: style, use_local_output, mesh_dim, input_layouts, output_layouts)
// ERR-COUNT-COL: error: tp plan: entry 'net' (ColwiseParallel): input_layouts takes one layout, got 2
// ERR-COUNT-PAIR: error: tp plan: entry 'net' (PrepareModuleInput): input_layouts and desired_input_layouts have different lengths (2 and 1)
// ERR-DESIRED: error: tp plan: entry 'net' (PrepareModuleOutput): needs both output_layouts and desired_output_layouts
// ERR-SEQDIM: error: tp plan: entry 'net' (SequenceParallel): sequence_dim must be an integer
// ERR-TOP: error: tp plan: unknown top-level field 'meshes' (allowed: mesh, mesh_dim, plan)
// ERR-NOPLAN: error: tp plan: missing "plan" object (module path -> style)
// ERR-NEITHER: error: tp plan: give the plan either as a file (plan=) or inline (plan-json=), not neither
// ERR-BOTH: error: tp plan: give the plan either as a file (plan=) or inline (plan-json=), not both
// ERR-NOMESH: error: tp plan: no dtensor.mesh named @dp
//
// Errors between the plan and the program.
// RUN: not dtensor-opt %t/errors.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"attn.wq": {"style": "ColwiseParallel"}}}' 2>&1 | FileCheck %t/errors.mlir --check-prefix=ERR-MODULE
// RUN: not dtensor-opt %t/errors.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"layers.*": {"style": "ColwiseParallel"}}}' 2>&1 | FileCheck %t/errors.mlir --check-prefix=ERR-GLOB
// RUN: not dtensor-opt %t/errors.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"act": {"style": "ColwiseParallel"}}}' 2>&1 | FileCheck %t/errors.mlir --check-prefix=ERR-NOLINEAR
// RUN: not dtensor-opt %t/errors.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"mlp": {"style": "RowwiseParallel"}}}' 2>&1 | FileCheck %t/errors.mlir --check-prefix=ERR-TWOLINEAR
// RUN: not dtensor-opt %t/errors.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"scaled": {"style": "ColwiseParallel"}}}' 2>&1 | FileCheck %t/errors.mlir --check-prefix=ERR-PARAM
// RUN: not dtensor-opt %t/errors.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"mlp": {"style": "PrepareModuleInput", "input_layouts": ["S(0)", "R"], "desired_input_layouts": ["R", "R"]}}}' 2>&1 | FileCheck %t/errors.mlir --check-prefix=ERR-INPUTS
// RUN: not dtensor-opt %t/errors.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"act": {"style": "PrepareModuleOutput", "output_layouts": ["R"], "desired_output_layouts": ["S(2)"]}}}' 2>&1 | FileCheck %t/errors.mlir --check-prefix=ERR-RANGE
// RUN: not dtensor-opt %t/errors.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"tied.a": {"style": "ColwiseParallel"}, "tied.b": {"style": "ColwiseParallel"}}}' 2>&1 | FileCheck %t/errors.mlir --check-prefix=ERR-TIED
// RUN: not dtensor-opt %t/errors.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"mlp.up": {"style": "ColwiseParallel"}, "act": {"style": "SequenceParallel", "sequence_dim": 1}}}' 2>&1 | FileCheck %t/errors.mlir --check-prefix=ERR-ARG
// RUN: not dtensor-opt %t/two-meshes.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"net": {"style": "RowwiseParallel"}}}' 2>&1 | FileCheck %t/two-meshes.mlir --check-prefix=ERR-MESHES
// RUN: not dtensor-opt %t/mesh2d.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"up": {"style": "ColwiseParallel"}}}' 2>&1 | FileCheck %t/mesh2d.mlir --check-prefix=ERR-MESHDIM
// RUN: not dtensor-opt %t/mesh2d.mlir --dtensor-apply-tp-plan='plan-json={"plan": {"up": {"style": "ColwiseParallel", "mesh_dim": 1, "input_layouts": ["R"]}}}' 2>&1 | FileCheck %t/mesh2d.mlir --check-prefix=ERR-RANK

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
// PLAN-LABEL: func.func @linear(
// PLAN-SAME: %arg0: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>}
// PLAN-SAME: %arg1: tensor<16x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>, dtensor.param = "net.weight"}
// PLAN-SAME: %arg2: tensor<16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>, dtensor.param = "net.bias"}
// PLAN-NOT: dtensor.annotate
// PLAN: %[[Y:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1
// PLAN: %[[YB:.*]] = linalg.generic {{.*}} ins(%[[Y]], %arg2
// PLAN-NEXT: ^bb0
// PLAN-NEXT: arith.addf
// PLAN-NEXT: linalg.yield
// PLAN-NEXT: }
// PLAN-NEXT: %[[OUT:.*]] = dtensor.annotate %[[YB]] layout <@tp, [S(1)]> {dtensor.boundary} : tensor<8x16xf32>
// PLAN-NEXT: return %[[OUT]]

// Per rank: out.shape == (8, 16 // 4), no collective.
// CHECK-LABEL: func.func @linear(
// CHECK-SAME: %arg0: tensor<8x16xf32>
// CHECK-SAME: %arg1: tensor<4x16xf32>
// CHECK-SAME: %arg2: tensor<4xf32>
// CHECK-SAME: -> (tensor<8x4xf32>
// CHECK: return %{{.*}} : tensor<8x4xf32>

//--- colwise-shard0.mlir
// ColwiseParallel(input_layouts=Shard(0)): each rank holds 8 of 32 rows.
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs_t = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
dtensor.mesh @tp shape = [4]
func.func @linear(%x: tensor<32x16xf32>,
                  %w: tensor<16x16xf32> {dtensor.param = "net.weight"})
    -> tensor<32x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x16xf32>) -> tensor<32x16xf32>
  %y = linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
      ins(%x, %w : tensor<32x16xf32>, tensor<16x16xf32>)
      outs(%f : tensor<32x16xf32>) {dtensor.module = "net"} -> tensor<32x16xf32>
  return %y : tensor<32x16xf32>
}
// Per rank: out.shape == (8 * 4, 16 // 4) after one all_gather.
// CHECK-LABEL: func.func @linear(
// CHECK-SAME: %arg0: tensor<8x16xf32> {{{[^}]*}}dtensor.layout = #dtensor.layout<@tp, [S(0)]>}
// CHECK-SAME: %arg1: tensor<4x16xf32>
// CHECK-SAME: -> (tensor<32x4xf32>
// CHECK: dtensor.all_gather %arg0 on @tp axes = [0] gather_dim = 0 : tensor<8x16xf32> -> tensor<32x16xf32>
// CHECK: return %{{.*}} : tensor<32x4xf32>

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
// ROW-R-LABEL: func.func @linear(
// ROW-R-SAME: %arg0: tensor<8x4xf32> {{{[^}]*}}[S(1)]>}
// ROW-R-SAME: %arg1: tensor<4x16xf32> {{{[^}]*}}[S(0)]>, dtensor.param = "net.weight"}
// ROW-R-SAME: %arg2: tensor<16xf32> {{{[^}]*}}[R]>, dtensor.param = "net.bias"}
// ROW-R-SAME: -> (tensor<8x16xf32>
// ROW-R: dtensor.all_reduce %{{.*}} on @tp axes = [0] reduce = sum : tensor<8x16xf32>
// ROW-R: return %{{.*}} : tensor<8x16xf32>

// Per rank: out.shape == (8 // 4, 16).
// ROW-S0-LABEL: func.func @linear(
// ROW-S0-SAME: -> (tensor<2x16xf32>
// ROW-S0: dtensor.reduce_scatter %{{.*}} on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<8x16xf32> -> tensor<2x16xf32>
// ROW-S0: return %{{.*}} : tensor<2x16xf32>

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
// EMB-COL-LABEL: func.func @embed(
// EMB-COL-SAME: %arg0: tensor<4x2x1xindex> {{{[^}]*}}[R]>}
// EMB-COL-SAME: %arg1: tensor<16x4xf32> {{{[^}]*}}[S(1)]>, dtensor.param = "tok.weight"}
// EMB-COL-SAME: -> (tensor<4x2x4xf32>
// EMB-COL: tensor.gather %arg1[%arg0]

// Rowwise: the table is S(0); the masked lookup is Partial.
// EMB-ROW-LABEL: func.func @embed(
// EMB-ROW-SAME: %arg1: tensor<4x16xf32> {{{[^}]*}}[S(0)]>, dtensor.param = "tok.weight"}
// EMB-ROW-SAME: -> (tensor<4x2x16xf32>
// EMB-ROW: tensor.gather %{{.*}}[%{{.*}}] gather_dims([0]) : (tensor<4x16xf32>, tensor<4x2x1xindex>) -> tensor<4x2x16xf32>
// EMB-ROW: dtensor.all_reduce %{{.*}} on @tp axes = [0] reduce = sum : tensor<4x2x16xf32>

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
// EMB-RS-LABEL: func.func @embed(
// EMB-RS-SAME: -> (tensor<8x4xf32>
// EMB-RS: dtensor.reduce_scatter %{{.*}} on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<8x16xf32> -> tensor<8x4xf32>

// The indices arrive as S(-1) of PyTorch's 1-D index tensor, i.e. S(0).
// EMB-DEFAULT-LABEL: func.func @embed(
// EMB-DEFAULT-SAME: %arg0: tensor<2x1xindex> {{{[^}]*}}[S(0)]>}
// EMB-DEFAULT: dtensor.all_gather %arg0 on @tp axes = [0] gather_dim = 0 : tensor<2x1xindex> -> tensor<8x1xindex>
// EMB-DEFAULT: dtensor.all_reduce %{{.*}} : tensor<8x16xf32>

//--- prepare-input.json
{"plan": {
  "mod": {"style": "PrepareModuleInput",
          "input_layouts": ["Shard(0)", null],
          "desired_input_layouts": ["Replicate()", null]},
  "mod.linear": {"style": "ColwiseParallel"}}}

//--- prepare-input.mlir
// test_prepare_module_input_multiple_inputs: forward(x, y) = linear(x) + y
// with nn.Linear(8, 8); x is also returned as is, outside the module.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
dtensor.mesh @tp shape = [4]
func.func @module(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>,
                  %w: tensor<8x8xf32> {dtensor.param = "mod.linear.weight"},
                  %b: tensor<8xf32> {dtensor.param = "mod.linear.bias"})
    -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %h = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>)
      outs(%f : tensor<8x8xf32>) {dtensor.module = "mod.linear"} -> tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  %hb = linalg.generic {indexing_maps = [#id, #row, #id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%h, %b : tensor<8x8xf32>, tensor<8xf32>)
      outs(%e2 : tensor<8x8xf32>) attrs = {dtensor.module = "mod.linear"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %out = arith.addf %hb, %y {dtensor.module = "mod"} : tensor<8x8xf32>
  return %out, %x : tensor<8x8xf32>, tensor<8x8xf32>
}
// PLAN-LABEL: func.func @module(
// PLAN-SAME: %arg0: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}
// PLAN-SAME: %arg1: tensor<8x8xf32>,
// PLAN-SAME: %arg2: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>, dtensor.param = "mod.linear.weight"}
// PLAN-SAME: %arg3: tensor<8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>, dtensor.param = "mod.linear.bias"}
// PLAN: %[[XR:.*]] = dtensor.annotate %arg0 layout <@tp, [R]> {dtensor.boundary} : tensor<8x8xf32>
// PLAN-NEXT: %[[H:.*]] = linalg.matmul {{.*}}ins(%[[XR]], %arg2
// PLAN: %[[HB:.*]] = linalg.generic {{.*}}ins(%[[H]], %arg3
// PLAN: %[[HS:.*]] = dtensor.annotate %[[HB]] layout <@tp, [S(1)]> {dtensor.boundary}
// PLAN-NEXT: %[[OUT:.*]] = arith.addf %[[HS]], %arg1 {dtensor.module = "mod"}
// PLAN-NEXT: return %[[OUT]], %arg0

// Per rank: output.shape == (4 * 2, 8 // 4); x goes back as its shard.
// CHECK-LABEL: func.func @module(
// CHECK-SAME: %arg0: tensor<2x8xf32>
// CHECK-SAME: -> (tensor<8x2xf32> {{.*}}, tensor<2x8xf32>
// CHECK: dtensor.all_gather %arg0 on @tp axes = [0] gather_dim = 0 : tensor<2x8xf32> -> tensor<8x8xf32>
// CHECK: return %{{.*}}, %arg0 : tensor<8x2xf32>, tensor<2x8xf32>

//--- prepare-output.mlir
#id = affine_map<(i, j) -> (i, j)>
dtensor.mesh @tp shape = [4]
func.func @act(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>)
      attrs = {dtensor.module = "act"} {
  ^bb0(%a: f32, %o: f32):
    %s = arith.maximumf %a, %zero : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
// Per rank: output.shape == (8 // 4, 16), by slicing.
// CHECK-LABEL: func.func @act(
// CHECK-SAME: %arg0: tensor<8x16xf32> {{{[^}]*}}[R]>}
// CHECK-SAME: -> (tensor<2x16xf32>
// CHECK: dtensor.coord @tp axes = [0]
// CHECK: tensor.extract_slice
// CHECK: return %{{.*}} : tensor<2x16xf32>

//--- shared-init.mlir
dtensor.mesh @tp shape = [4]
func.func @mlp(%x: tensor<8x16xf32>,
               %w1: tensor<16x16xf32> {dtensor.param = "up.weight"},
               %w2: tensor<16x16xf32> {dtensor.param = "down.weight"})
    -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x16xf32>)
      outs(%f : tensor<8x16xf32>) {dtensor.module = "up"} -> tensor<8x16xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<8x16xf32>, tensor<16x16xf32>)
      outs(%f : tensor<8x16xf32>) {dtensor.module = "down"} -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
// CHECK-LABEL: func.func @mlp(
// CHECK-DAG: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK-DAG: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x16xf32>)
// CHECK: dtensor.all_reduce %{{.*}} : tensor<8x16xf32>

//--- mlp.json
{"plan": {
  "mlp_0.net1": {"style": "ColwiseParallel"},
  "mlp_0.net2": {"style": "RowwiseParallel"},
  "mlp_1.net1": {"style": "ColwiseParallel"},
  "mlp_1.net2": {"style": "RowwiseParallel"}}}

//--- mlp-sp.json
{"plan": {
  "mlp_0": {"style": "PrepareModuleInput", "input_layouts": ["S(0)"], "desired_input_layouts": ["R"]},
  "mlp_0.net1": {"style": "ColwiseParallel"},
  "mlp_0.net2": {"style": "RowwiseParallel", "output_layouts": ["S(0)"]},
  "mlp_1.net1": {"style": "ColwiseParallel", "input_layouts": ["S(0)"]},
  "mlp_1.net2": {"style": "RowwiseParallel"},
  "mlp_1": {"style": "PrepareModuleOutput", "output_layouts": ["R"], "desired_output_layouts": ["S(0)"]}}}

//--- attention.json
{"plan": {
  "attn": {"style": "PrepareModuleInput", "input_layouts": ["S(0)"], "desired_input_layouts": ["R"]},
  "attn.wq": {"style": "ColwiseParallel"},
  "attn.wk": {"style": "ColwiseParallel"},
  "attn.wv": {"style": "ColwiseParallel"},
  "attn.wo": {"style": "RowwiseParallel", "output_layouts": ["S(0)"]}}}

//--- mlp.mlir
// SimpleModel of test_dtensor_compile.py: two MLPModules (net1 =
// nn.Linear(10, 16), relu, net2 = nn.Linear(16, 10)), weights stored
// [out, in]. 80 rows: 20 per rank where the input is Shard(0).
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs_t = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
dtensor.mesh @tp shape = [4]
func.func @mlp(%x: tensor<80x10xf32>,
    %mlp_0_w1: tensor<16x10xf32> {dtensor.param = "mlp_0.net1.weight"},
    %mlp_0_b1: tensor<16xf32> {dtensor.param = "mlp_0.net1.bias"},
    %mlp_0_w2: tensor<10x16xf32> {dtensor.param = "mlp_0.net2.weight"},
    %mlp_0_b2: tensor<10xf32> {dtensor.param = "mlp_0.net2.bias"},
    %mlp_1_w1: tensor<16x10xf32> {dtensor.param = "mlp_1.net1.weight"},
    %mlp_1_b1: tensor<16xf32> {dtensor.param = "mlp_1.net1.bias"},
    %mlp_1_w2: tensor<10x16xf32> {dtensor.param = "mlp_1.net2.weight"},
    %mlp_1_b2: tensor<10xf32> {dtensor.param = "mlp_1.net2.bias"}) -> tensor<80x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<80x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<80x16xf32>) -> tensor<80x16xf32>
  %y3 = linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
      ins(%x, %mlp_0_w1 : tensor<80x10xf32>, tensor<16x10xf32>)
      outs(%f2 : tensor<80x16xf32>) {dtensor.module = "mlp_0.net1"} -> tensor<80x16xf32>
  %e5 = tensor.empty() : tensor<80x16xf32>
  %yb4 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y3, %mlp_0_b1 : tensor<80x16xf32>, tensor<16xf32>) outs(%e5 : tensor<80x16xf32>)
      attrs = {dtensor.module = "mlp_0.net1"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<80x16xf32>
  %e6 = tensor.empty() : tensor<80x16xf32>
  %r7 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%yb4 : tensor<80x16xf32>) outs(%e6 : tensor<80x16xf32>) attrs = {dtensor.module = "mlp_0"} {
  ^bb0(%a: f32, %o: f32):
    %s = arith.maximumf %a, %zero : f32
    linalg.yield %s : f32
  } -> tensor<80x16xf32>
  %e8 = tensor.empty() : tensor<80x10xf32>
  %f9 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<80x10xf32>) -> tensor<80x10xf32>
  %y10 = linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
      ins(%r7, %mlp_0_w2 : tensor<80x16xf32>, tensor<10x16xf32>)
      outs(%f9 : tensor<80x10xf32>) {dtensor.module = "mlp_0.net2"} -> tensor<80x10xf32>
  %e12 = tensor.empty() : tensor<80x10xf32>
  %yb11 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y10, %mlp_0_b2 : tensor<80x10xf32>, tensor<10xf32>) outs(%e12 : tensor<80x10xf32>)
      attrs = {dtensor.module = "mlp_0.net2"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<80x10xf32>
  %e13 = tensor.empty() : tensor<80x16xf32>
  %f14 = linalg.fill ins(%zero : f32) outs(%e13 : tensor<80x16xf32>) -> tensor<80x16xf32>
  %y15 = linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
      ins(%yb11, %mlp_1_w1 : tensor<80x10xf32>, tensor<16x10xf32>)
      outs(%f14 : tensor<80x16xf32>) {dtensor.module = "mlp_1.net1"} -> tensor<80x16xf32>
  %e17 = tensor.empty() : tensor<80x16xf32>
  %yb16 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y15, %mlp_1_b1 : tensor<80x16xf32>, tensor<16xf32>) outs(%e17 : tensor<80x16xf32>)
      attrs = {dtensor.module = "mlp_1.net1"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<80x16xf32>
  %e18 = tensor.empty() : tensor<80x16xf32>
  %r19 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%yb16 : tensor<80x16xf32>) outs(%e18 : tensor<80x16xf32>) attrs = {dtensor.module = "mlp_1"} {
  ^bb0(%a: f32, %o: f32):
    %s = arith.maximumf %a, %zero : f32
    linalg.yield %s : f32
  } -> tensor<80x16xf32>
  %e20 = tensor.empty() : tensor<80x10xf32>
  %f21 = linalg.fill ins(%zero : f32) outs(%e20 : tensor<80x10xf32>) -> tensor<80x10xf32>
  %y22 = linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
      ins(%r19, %mlp_1_w2 : tensor<80x16xf32>, tensor<10x16xf32>)
      outs(%f21 : tensor<80x10xf32>) {dtensor.module = "mlp_1.net2"} -> tensor<80x10xf32>
  %e24 = tensor.empty() : tensor<80x10xf32>
  %yb23 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y22, %mlp_1_b2 : tensor<80x10xf32>, tensor<10xf32>) outs(%e24 : tensor<80x10xf32>)
      attrs = {dtensor.module = "mlp_1.net2"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<80x10xf32>
  return %yb23 : tensor<80x10xf32>
}
// Each rowwise linear ends in one all_reduce.
// MLP-LABEL: func.func @mlp(
// MLP-SAME: %arg0: tensor<80x10xf32> {{{[^}]*}}[R]>}
// MLP-SAME: %arg1: tensor<4x10xf32> {{{[^}]*}}[S(0)]>, dtensor.param = "mlp_0.net1.weight"}
// MLP-SAME: %arg2: tensor<4xf32> {{{[^}]*}}[S(0)]>, dtensor.param = "mlp_0.net1.bias"}
// MLP-SAME: %arg3: tensor<10x4xf32> {{{[^}]*}}[S(1)]>, dtensor.param = "mlp_0.net2.weight"}
// MLP-SAME: %arg4: tensor<10xf32> {{{[^}]*}}[R]>, dtensor.param = "mlp_0.net2.bias"}
// MLP: dtensor.all_reduce %{{.*}} : tensor<80x10xf32>
// MLP: dtensor.all_reduce %{{.*}} : tensor<80x10xf32>
// MLP: return %{{.*}} : tensor<80x10xf32>

// Sequence parallel: mlp_0's input is gathered, net2 of mlp_0 scatters its
// sum over rows, mlp_1.net1 gathers it again, mlp_1.net2 reduces and
// PrepareModuleOutput slices the replicated result back to Shard(0).
// MLP-SP-LABEL: func.func @mlp(
// MLP-SP-SAME: %arg0: tensor<20x10xf32> {{{[^}]*}}[S(0)]>}
// MLP-SP-SAME: -> (tensor<20x10xf32> {{{[^}]*}}[S(0)]>})
// MLP-SP: dtensor.all_gather %arg0 on @tp axes = [0] gather_dim = 0 : tensor<20x10xf32> -> tensor<80x10xf32>
// MLP-SP: dtensor.reduce_scatter %{{.*}} scatter_dim = 0 reduce = sum : tensor<80x10xf32> -> tensor<20x10xf32>
// MLP-SP: dtensor.all_gather %{{.*}} gather_dim = 0 : tensor<20x10xf32> -> tensor<80x10xf32>
// MLP-SP: dtensor.all_reduce %{{.*}} : tensor<80x10xf32>
// MLP-SP: tensor.extract_slice %{{.*}} : tensor<80x10xf32> to tensor<20x10xf32>

//--- attention.mlir
// FakeAttention of test_dtensor_compile.py: wq, wk, wv, wo are
// nn.Linear(16, 16), the attention is xq + xk + xv. 80 rows: 20 per rank
// where the input is Shard(0).
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs_t = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
dtensor.mesh @tp shape = [4]
func.func @attention(%x: tensor<80x16xf32>,
    %wq: tensor<16x16xf32> {dtensor.param = "attn.wq.weight"},
    %wq_b: tensor<16xf32> {dtensor.param = "attn.wq.bias"},
    %wk: tensor<16x16xf32> {dtensor.param = "attn.wk.weight"},
    %wk_b: tensor<16xf32> {dtensor.param = "attn.wk.bias"},
    %wv: tensor<16x16xf32> {dtensor.param = "attn.wv.weight"},
    %wv_b: tensor<16xf32> {dtensor.param = "attn.wv.bias"},
    %wo: tensor<16x16xf32> {dtensor.param = "attn.wo.weight"},
    %wo_b: tensor<16xf32> {dtensor.param = "attn.wo.bias"}) -> tensor<80x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<80x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<80x16xf32>) -> tensor<80x16xf32>
  %y3 = linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
      ins(%x, %wq : tensor<80x16xf32>, tensor<16x16xf32>)
      outs(%f2 : tensor<80x16xf32>) {dtensor.module = "attn.wq"} -> tensor<80x16xf32>
  %e5 = tensor.empty() : tensor<80x16xf32>
  %yb4 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y3, %wq_b : tensor<80x16xf32>, tensor<16xf32>) outs(%e5 : tensor<80x16xf32>)
      attrs = {dtensor.module = "attn.wq"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<80x16xf32>
  %e6 = tensor.empty() : tensor<80x16xf32>
  %f7 = linalg.fill ins(%zero : f32) outs(%e6 : tensor<80x16xf32>) -> tensor<80x16xf32>
  %y8 = linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
      ins(%x, %wk : tensor<80x16xf32>, tensor<16x16xf32>)
      outs(%f7 : tensor<80x16xf32>) {dtensor.module = "attn.wk"} -> tensor<80x16xf32>
  %e10 = tensor.empty() : tensor<80x16xf32>
  %yb9 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y8, %wk_b : tensor<80x16xf32>, tensor<16xf32>) outs(%e10 : tensor<80x16xf32>)
      attrs = {dtensor.module = "attn.wk"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<80x16xf32>
  %e11 = tensor.empty() : tensor<80x16xf32>
  %f12 = linalg.fill ins(%zero : f32) outs(%e11 : tensor<80x16xf32>) -> tensor<80x16xf32>
  %y13 = linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
      ins(%x, %wv : tensor<80x16xf32>, tensor<16x16xf32>)
      outs(%f12 : tensor<80x16xf32>) {dtensor.module = "attn.wv"} -> tensor<80x16xf32>
  %e15 = tensor.empty() : tensor<80x16xf32>
  %yb14 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y13, %wv_b : tensor<80x16xf32>, tensor<16xf32>) outs(%e15 : tensor<80x16xf32>)
      attrs = {dtensor.module = "attn.wv"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<80x16xf32>
  %sum16 = arith.addf %yb4, %yb9 {dtensor.module = "attn"} : tensor<80x16xf32>
  %sum17 = arith.addf %sum16, %yb14 {dtensor.module = "attn"} : tensor<80x16xf32>
  %e18 = tensor.empty() : tensor<80x16xf32>
  %f19 = linalg.fill ins(%zero : f32) outs(%e18 : tensor<80x16xf32>) -> tensor<80x16xf32>
  %y20 = linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
      ins(%sum17, %wo : tensor<80x16xf32>, tensor<16x16xf32>)
      outs(%f19 : tensor<80x16xf32>) {dtensor.module = "attn.wo"} -> tensor<80x16xf32>
  %e22 = tensor.empty() : tensor<80x16xf32>
  %yb21 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y20, %wo_b : tensor<80x16xf32>, tensor<16xf32>) outs(%e22 : tensor<80x16xf32>)
      attrs = {dtensor.module = "attn.wo"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<80x16xf32>
  return %yb21 : tensor<80x16xf32>
}
// ATTN-LABEL: func.func @attention(
// ATTN-SAME: %arg0: tensor<20x16xf32> {{{[^}]*}}[S(0)]>}
// ATTN-SAME: -> (tensor<20x16xf32> {{{[^}]*}}[S(0)]>})
// ATTN: dtensor.all_gather %arg0 on @tp axes = [0] gather_dim = 0 : tensor<20x16xf32> -> tensor<80x16xf32>
// ATTN-NEXT: linalg.matmul {{.*}}ins(%{{.*}}, %arg1 : tensor<80x16xf32>, tensor<4x16xf32>)
// ATTN: linalg.matmul {{.*}}ins(%{{.*}}, %arg7 : tensor<80x4xf32>, tensor<16x4xf32>)
// ATTN: dtensor.reduce_scatter %{{.*}} scatter_dim = 0 reduce = sum : tensor<80x16xf32> -> tensor<20x16xf32>

// ATTN-TP-LABEL: func.func @attention(
// ATTN-TP-SAME: %arg0: tensor<80x16xf32> {{{[^}]*}}[R]>}
// ATTN-TP: dtensor.all_reduce %{{.*}} : tensor<80x16xf32>
// ATTN-TP: return %{{.*}} : tensor<80x16xf32>

//--- sequence.mlir
// A norm-like module (x * weight) on [batch, seq, hidden].
#x3 = affine_map<(b, s, h) -> (b, s, h)>
#h3 = affine_map<(b, s, h) -> (h)>
dtensor.mesh @tp shape = [4]
func.func @norm(%x: tensor<2x8x16xf32>,
                %g: tensor<16xf32> {dtensor.param = "norm.weight"})
    -> tensor<2x8x16xf32> {
  %e = tensor.empty() : tensor<2x8x16xf32>
  %y = linalg.generic {indexing_maps = [#x3, #h3, #x3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %g : tensor<2x8x16xf32>, tensor<16xf32>)
      outs(%e : tensor<2x8x16xf32>) attrs = {dtensor.module = "norm"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.mulf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}
// CHECK-LABEL: func.func @norm(
// CHECK-SAME: %arg0: tensor<2x2x16xf32> {{{[^}]*}}[S(1)]>}
// CHECK-SAME: %arg1: tensor<16xf32> {{{[^}]*}}[R]>, dtensor.param = "norm.weight"}
// CHECK-SAME: -> (tensor<2x2x16xf32>

// sequence_dim=-3 is the batch dim: 2 rows over 4 ranks are uneven.
// SEQ0-LABEL: func.func @norm(
// SEQ0-SAME: %arg0: tensor<?x8x16xf32> {{{[^}]*}}[S(0)]>}
// SEQ0-SAME: -> (tensor<?x8x16xf32>

//--- mesh2d.json
{"mesh_dim": 1,
 "plan": {
  "up": {"style": "ColwiseParallel", "input_layouts": [["S(0)", "R"]]},
  "down": {"style": "RowwiseParallel", "input_layouts": ["S(0)", "S(-1)"],
           "output_layouts": ["S(0)", "R"]}}}

//--- mesh2d.mlir
// Data parallel on mesh dim 0, tensor parallel on mesh dim 1; the weights
// are stored [in, out].
#id = affine_map<(i, j) -> (i, j)>
dtensor.mesh @m shape = [2, 2] names = ["dp", "tp"]
func.func @mlp(%x: tensor<8x16xf32>,
               %w1: tensor<16x32xf32> {dtensor.param = "up.weight"},
               %w2: tensor<32x16xf32> {dtensor.param = "down.weight"})
    -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  // ERR-MESHDIM: mesh2d.mlir:[[@LINE+1]]:8: error: tp plan: entry 'up' (ColwiseParallel): the mesh @m has rank 2; say which mesh dim to parallelize over with "mesh_dim"
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>)
      outs(%f1 : tensor<8x32xf32>) {dtensor.module = "up"} -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %a = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.maximumf %in, %zero : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<8x32xf32>, tensor<32x16xf32>)
      outs(%f3 : tensor<8x16xf32>) {dtensor.module = "down"} -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %arg0: tensor<4x16xf32> {{{[^}]*}}[S(0), R]>}
// CHECK-SAME: %arg1: tensor<16x16xf32> {{{[^}]*}}[R, S(1)]>, dtensor.param = "up.weight"}
// CHECK-SAME: %arg2: tensor<16x16xf32> {{{[^}]*}}[R, S(0)]>, dtensor.param = "down.weight"}
// CHECK-SAME: -> (tensor<4x16xf32> {{{[^}]*}}[S(0), R]>})
// CHECK: dtensor.all_reduce %{{.*}} on @m axes = [1] reduce = sum : tensor<4x16xf32>

// ERR-RANK: error: tp plan: entry 'up' (ColwiseParallel): input_layouts: a layout on a mesh of rank 2 has 2 placement(s), got 1

//--- two-meshes.mlir
dtensor.mesh @a shape = [2]
dtensor.mesh @b shape = [4]
func.func @linear(%x: tensor<8x16xf32>,
                  %w: tensor<16x16xf32> {dtensor.param = "net.weight"})
    -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x16xf32>)
      outs(%f : tensor<8x16xf32>) {dtensor.module = "net"} -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
// CHECK-LABEL: func.func @linear(
// CHECK-SAME: %arg0: tensor<8x4xf32> {{{[^}]*}}<@b, [S(1)]>}
// CHECK: dtensor.all_reduce %{{.*}} on @b axes = [0]

// ERR-MESHES: error: tp plan: the module declares 2 meshes; name one with the mesh option or the plan's "mesh"

//--- errors.mlir
#id = affine_map<(i, j) -> (i, j)>
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs_t = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
dtensor.mesh @tp shape = [4]
func.func @errors(%x: tensor<8x16xf32>,
                  %w1: tensor<16x32xf32> {dtensor.param = "mlp.up.weight"},
                  %w2: tensor<32x16xf32> {dtensor.param = "mlp.down.weight"},
                  %ws: tensor<16x16xf32> {dtensor.param = "scaled.weight"},
                  %s: tensor<8x16xf32> {dtensor.param = "scaled.scale"})
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8x16xf32>
  // ERR-NOLINEAR: errors.mlir:[[@LINE+2]]:8: error: tp plan: entry 'act' (ColwiseParallel): module 'act' has no linear op (a linalg contraction or an embedding tensor.gather)
  // ERR-RANGE: errors.mlir:[[@LINE+1]]:8: error: tp plan: entry 'act' (PrepareModuleOutput): S(2) is out of range for a tensor of type 'tensor<8x16xf32>'
  %r = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e0 : tensor<8x16xf32>)
      attrs = {dtensor.module = "act"} {
  ^bb0(%in: f32, %o: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  // ERR-TWOLINEAR: errors.mlir:[[@LINE+4]]:8: error: tp plan: entry 'mlp' (RowwiseParallel): module 'mlp' has 2 linear ops; the style applies to a module with one (an nn.Linear or nn.Embedding)
  // ERR-TWOLINEAR: errors.mlir:[[@LINE+3]]:8: note: linear op
  // ERR-INPUTS: errors.mlir:[[@LINE+2]]:8: error: tp plan: entry 'mlp' (PrepareModuleInput): module 'mlp' has 1 input(s) but input_layouts lists 2
  // ERR-ARG: errors.mlir:[[@LINE+1]]:8: error: tp plan: entry 'mlp.up' (ColwiseParallel): argument #0 of @errors would be laid out as #dtensor.layout<@tp, [R]> but entry 'act' laid it out as #dtensor.layout<@tp, [S(1)]>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>)
      outs(%f1 : tensor<8x32xf32>) {dtensor.module = "mlp.up"} -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %a = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>)
      attrs = {dtensor.module = "mlp"} {
  ^bb0(%in: f32, %o: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // ERR-TWOLINEAR: errors.mlir:[[@LINE+1]]:8: note: linear op
  %y = linalg.matmul ins(%a, %w2 : tensor<8x32xf32>, tensor<32x16xf32>)
      outs(%f3 : tensor<8x16xf32>) {dtensor.module = "mlp.down"} -> tensor<8x16xf32>
  %z = linalg.matmul ins(%x, %ws : tensor<8x16xf32>, tensor<16x16xf32>)
      outs(%f3 : tensor<8x16xf32>) {dtensor.module = "scaled"} -> tensor<8x16xf32>
  // ERR-PARAM: errors.mlir:[[@LINE+1]]:9: error: tp plan: entry 'scaled' (ColwiseParallel): parameter 'scaled.scale' is neither the weight of the linear op nor a bias added to a result
  %zs = arith.mulf %z, %s {dtensor.module = "scaled"} : tensor<8x16xf32>
  return %r, %y, %zs : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
// A weight shared by two linears that want it sharded differently.
func.func @tied(%x: tensor<8x16xf32>,
                %w: tensor<16x16xf32> {dtensor.param = "tied.weight"})
    -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %a = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x16xf32>)
      outs(%f : tensor<8x16xf32>) {dtensor.module = "tied.a"} -> tensor<8x16xf32>
  // ERR-TIED: errors.mlir:[[@LINE+1]]:8: error: tp plan: entry 'tied.b' (ColwiseParallel): parameter 'tied.weight' would be laid out as #dtensor.layout<@tp, [S(0)]> but entry 'tied.a' laid it out as #dtensor.layout<@tp, [S(1)]>
  %b = linalg.matmul indexing_maps = [#lhs, #rhs_t, #out]
      ins(%x, %w : tensor<8x16xf32>, tensor<16x16xf32>)
      outs(%f : tensor<8x16xf32>) {dtensor.module = "tied.b"} -> tensor<8x16xf32>
  return %a, %b : tensor<8x16xf32>, tensor<8x16xf32>
}
// ERR-MODULE: error: tp plan: entry 'attn.wq' (ColwiseParallel): no op carries dtensor.module = "attn.wq" (or a submodule of it)
// ERR-GLOB: error: tp plan: entry 'layers.*' (ColwiseParallel): no op carries dtensor.module = "layers.*" (or a submodule of it)
