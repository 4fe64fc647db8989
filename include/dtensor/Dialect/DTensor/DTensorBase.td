//===- DTensorBase.td - dtensor dialect definition ---------*- tablegen -*-===//
//
// The dtensor dialect: device meshes, DTensor placements, global-view
// layout ops and per-rank collectives.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_BASE_TD
#define DTENSOR_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def DTensor_Dialect : Dialect {
  let name = "dtensor";
  let cppNamespace = "::mlir::dtensor";
  let summary = "Tensor-parallel programs: meshes, placements, collectives";
  let description = [{
    The `dtensor` dialect describes tensor-parallel programs in the vocabulary
    of PyTorch DTensor.

    A program starts in the *global view*: `func`, `linalg`, `tensor` and
    `arith` ops on ordinary builtin tensors whose shapes are the global
    (unsharded) shapes. A device mesh is declared with `dtensor.mesh`. How a
    tensor is spread over the mesh is a *layout*: the mesh plus one placement
    per mesh dimension, each `S(d)` (shard tensor dim `d`, torch.chunk
    semantics), `R` (replicate) or `P(op)` (pending reduction with `op` in
    sum, avg, product, min, max).

    **Why layouts are attributes and not a custom tensor type.** A global-view
    value is a plain builtin `tensor`; its layout lives in the ops that fix
    it (`dtensor.annotate`, `dtensor.redistribute`, `dtensor.from_local`,
    `dtensor.to_local`) and in the discardable attributes `dtensor.layout`
    (function arguments and results) and `dtensor.layouts` (op results) that
    propagation writes. Upstream ops (`linalg`, `tensor`, `arith`) therefore
    keep verifying and folding unchanged on global-view programs; a custom
    type would be rejected by all of them, and a tensor encoding would be
    dropped or mismatched by their type inference and canonicalizations. The
    cost is that a layout is not checked by the type system; the dialect's
    verifiers and the propagation pass check it instead.

    After partitioning, the program is the *per-rank* (SPMD) program: local
    tensors and explicit collectives (`dtensor.all_gather`, ...) over mesh
    axes. A collective can be made asynchronous by wrapping it in
    `dtensor.async_start`, whose `!dtensor.future` results are consumed by
    `dtensor.wait`.

    Every op documents its constraints with ids (for example `AG2`); the
    verifier reports a violated constraint with its id in brackets, and the
    test suite has an expected-error test for each id.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The module attribute that holds a `#dtensor.target`.
    static constexpr ::llvm::StringLiteral kTargetAttrName = "dtensor.target";
  }];
}

def DTensor_ReduceKind : I32EnumAttr<"ReduceKind",
    "reduction applied by a Partial placement or a collective", [
  I32EnumAttrCase<"Sum", 0, "sum">,
  I32EnumAttrCase<"Avg", 1, "avg">,
  I32EnumAttrCase<"Product", 2, "product">,
  I32EnumAttrCase<"Min", 3, "min">,
  I32EnumAttrCase<"Max", 4, "max">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::dtensor";
}

def DTensor_ReduceKindAttr
    : EnumAttr<DTensor_Dialect, DTensor_ReduceKind, "reduce"> {
  let assemblyFormat = "$value";
}

def DTensor_PlacementKind : I32EnumAttr<"PlacementKind",
    "kind of a placement along one mesh dimension", [
  I32EnumAttrCase<"Shard", 0, "shard">,
  I32EnumAttrCase<"Replicate", 1, "replicate">,
  I32EnumAttrCase<"Partial", 2, "partial">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::dtensor";
}

#endif // DTENSOR_BASE_TD
