//===- DTensorAttrs.td - placements and layouts ------------*- tablegen -*-===//

#ifndef DTENSOR_ATTRS_TD
#define DTENSOR_ATTRS_TD

include "dtensor/Dialect/DTensor/DTensorBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class DTensor_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<DTensor_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def DTensor_PlacementAttr : DTensor_Attr<"Placement", "placement"> {
  let summary = "placement of a tensor along one mesh dimension";
  let description = [{
    One of:
    - `S(d)`: the tensor is split along its dimension `d` with torch.chunk
      semantics. With `L` the size of dim `d` and `n` ranks on the mesh
      dimension, each chunk holds `ceil(L / n)` elements; rank `r` holds
      `[r * ceil(L/n), min(L, (r + 1) * ceil(L/n)))`, so trailing ranks may
      hold fewer elements or none (257 over 2 ranks: 129 + 128; 6 over 4:
      2, 2, 2, 0).
    - `R`: every rank holds the whole tensor.
    - `P(op)`: every rank holds a tensor of the global shape and the value is
      the reduction `op` (sum, avg, product, min, max) of them. `P` alone
      means `P(sum)`.

    Written standalone as `#dtensor.placement<S(0)>`; inside a layout just
    `S(0)`.

    Constraints:
    1. `PL1`: a shard dimension is non-negative.
  }];
  let parameters = (ins "PlacementKind":$kind, "int64_t":$dim,
                        "ReduceKind":$reduce);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    static PlacementAttr getShard(::mlir::MLIRContext *ctx, int64_t dim);
    static PlacementAttr getReplicate(::mlir::MLIRContext *ctx);
    static PlacementAttr getPartial(::mlir::MLIRContext *ctx, ReduceKind op);
    bool isShard() const { return getKind() == PlacementKind::Shard; }
    bool isReplicate() const { return getKind() == PlacementKind::Replicate; }
    bool isPartial() const { return getKind() == PlacementKind::Partial; }
    /// Parses the body `S(d)`, `R`, `P` or `P(op)`.
    static PlacementAttr parseBody(::mlir::AsmParser &parser);
    /// Prints the body `S(d)`, `R` or `P(op)`.
    void printBody(::mlir::AsmPrinter &printer) const;
  }];
}

def DTensor_LayoutAttr : DTensor_Attr<"Layout", "layout"> {
  let summary = "a device mesh and one placement per mesh dimension";
  let description = [{
    `#dtensor.layout<@mesh, [S(0), R]>` places a tensor on the mesh `@mesh`:
    placement `i` says what happens along mesh dimension `i`.

    When several mesh dimensions shard the same tensor dimension, the tensor
    dimension is split by the mesh dimensions in increasing order (the
    leftmost mesh dimension splits first, each next one splits the chunk that
    the previous ones left), as in DTensor's default shard order.

    Constraints (the first two need the mesh and are checked by every op that
    carries a layout; the others by the attribute itself):
    1. `LAYOUT1`: `@mesh` names a `dtensor.mesh` op.
    2. `LAYOUT2`: there is exactly one placement per mesh dimension.
    3. `LAYOUT3`: every shard dimension is smaller than the rank of the tensor
       the layout is applied to (checked by the op that applies it).
    4. `LAYOUT4`: all `P(op)` placements use the same `op` (mixed Partial
       reductions have no meaning).
    5. `LAYOUT5`: no shard dimension is dynamic in the tensor the layout is
       applied to (checked by the op that applies it): sharding a dynamic
       dimension is not supported, the program is rejected where the layout
       is written.
    6. `LAYOUT6`: a `P(op)` placement is defined on the element type of the
       tensor (checked by the op that applies it): no `min`/`max` on
       complex numbers, no `sum`/`avg`/`product` on `i1`.
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        ArrayRefParameter<"PlacementAttr">:$placements);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True if some placement is Partial.
    bool hasPartial() const;
    /// The reduction of the Partial placements, if any.
    std::optional<ReduceKind> getPartialKind() const;
    /// True if every placement is Replicate.
    bool isFullyReplicated() const;
  }];
}

def DTensor_TargetAttr : DTensor_Attr<"Target", "target"> {
  let summary = "what a module is compiled for: a backend and its hardware";
  let description = [{
    `#dtensor.target<cuda, "h200">` on a module (as its `dtensor.target`
    attribute) says which backend the per-rank program is lowered for and
    which hardware the cost model describes when passes plan, fuse and
    schedule. Every pass that needs hardware or backend facts reads it; a
    module without one is compiled for the default target
    `#dtensor.target<cpu, "h200">` (CPU ranks over MPI, planned as for an
    H200, the vehicle that checks numerics of GPU programs everywhere).

    Optional fields, written after the hardware as `key = "value"`:
    - `chip`: the GPU architecture to emit code for (`"sm_90"`); CUDA only;
      default: the hardware's (`sm_90` for h100 and h200).
    - `hardware_file`: a JSON hardware description overriding fields of the
      preset (docs/cost-model.md).
    - `cost_table`: a JSON table of per-op costs in microseconds that takes
      precedence over the cost model.

    Tools set it with `--target=<backend>[:<hardware>]` (`cuda:h100`,
    `cpu`), the API with `PipelineOptions::target`.

    Constraints:
    1. `TG1`: the backend is `cpu` or `cuda`.
    2. `TG2`: the hardware preset is `h100`, `h200` or `cpu`.
    3. `TG3`: `chip` is given only for `cuda`, in the form `sm_<digits>`.
    4. `TG4`: `dtensor.target` is a `#dtensor.target` attribute on a
       `builtin.module`.
  }];
  let parameters = (ins
      StringRefParameter<"backend">:$backend,
      StringRefParameter<"hardware preset">:$hardware,
      StringRefParameter<"GPU architecture", "\"\"">:$chip,
      StringRefParameter<"hardware description file", "\"\"">:$hardwareFile,
      StringRefParameter<"per-op cost table file", "\"\"">:$costTable);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The chip to emit code for: `chip`, or the hardware's default.
    ::llvm::StringRef getChipOrDefault() const;
  }];
}

#endif // DTENSOR_ATTRS_TD
