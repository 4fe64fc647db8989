//===- ApplyTPPlan.cpp - PyTorch tensor-parallel plans as annotations -----===//
//
// Expresses a parallelize_module plan (ColwiseParallel, RowwiseParallel,
// SequenceParallel, PrepareModuleInput, PrepareModuleOutput) on a global-view
// program. Ops name the nn.Module they belong to with `dtensor.module`,
// parameters are function arguments with `dtensor.param`. Each style becomes
// what its PyTorch hooks do, in global-view terms:
//
//   - parameters get a `dtensor.layout` argument attribute (distribute_tensor);
//   - a module input that is a plain (non-parameter) function argument gets
//     `dtensor.layout` = input_layouts (DTensor.from_local);
//   - the layout the module wants for an input (desired_input_layouts) is a
//     `dtensor.annotate` in front of the module's ops, seen only by them;
//   - the layout a module hands out (output_layouts) is a `dtensor.annotate`
//     after the producing op, seen only by the ops outside the module.
//
// Propagation then honours these requests like any other. Plan entries are
// applied outer modules first, so that a parent's pre-hook (PrepareModuleInput
// on "attn") sits closer to the value than a child's ("attn.wq"), and a
// child's output redistribution comes before its parent's, as at run time.
//
// See docs/tp-plans.md for the plan format.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Frontend/Passes.h"
#include "dtensor/Frontend/TPPlan.h"

#include "dtensor/Sharding/Layout.h"
#include "dtensor/Sharding/ShardingRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"

#include <vector>

namespace mlir::dtensor {
#define GEN_PASS_DEF_APPLYTPPLANPASS
#include "dtensor/Frontend/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {
/// Reports errors of the plan at `anchor`: "tp plan: <context>...".
class PlanError {
public:
  explicit PlanError(Operation *anchor) : anchor(anchor) {}
  InFlightDiagnostic operator()(const Twine &context) {
    return mlir::emitError(anchor->getLoc(), "tp plan: ") << context;
  }

private:
  Operation *anchor;
};
} // namespace

//===----------------------------------------------------------------------===//
// Modules in the program
//===----------------------------------------------------------------------===//

/// True if `key` (segments may be glob patterns) names module `path`.
static bool keyMatches(StringRef key, StringRef path) {
  SmallVector<StringRef> keyParts, pathParts;
  key.split(keyParts, '.');
  path.split(pathParts, '.');
  if (keyParts.size() != pathParts.size())
    return false;
  for (auto [pattern, part] : llvm::zip_equal(keyParts, pathParts)) {
    if (pattern.find_first_of("*?[") == StringRef::npos) {
      if (pattern != part)
        return false;
      continue;
    }
    llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(pattern);
    if (!glob) {
      llvm::consumeError(glob.takeError());
      return false;
    }
    if (!glob->match(part))
      return false;
  }
  return true;
}

namespace {

/// What a module is in one function: its ops, and the values crossing its
/// boundary.
struct ModuleView {
  std::string path;
  /// Ops tagged with the module or one of its submodules, in program order.
  llvm::SetVector<Operation *> ops;
  /// External non-parameter tensors the ops use, by first use. Values made
  /// from scalars only (tensor.empty, fills of constants, splat constants)
  /// are not inputs.
  SmallVector<Value> inputs;
  /// Tensors the ops define that are used outside the module.
  SmallVector<Value> outputs;
  /// Parameter arguments the ops use, by first use.
  SmallVector<BlockArgument> params;
};

} // namespace

static bool isCreatedFromScalars(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  FailureOr<ShardingSpec> spec = getShardingSpec(def, nullptr);
  return succeeded(spec) && spec->isCreation;
}

//===----------------------------------------------------------------------===//
// Applying the plan
//===----------------------------------------------------------------------===//

namespace {

class PlanApplier {
public:
  PlanApplier(ModuleOp module, MeshOp mesh, std::optional<int64_t> meshDim)
      : module(module), mesh(mesh), defaultMeshDim(meshDim),
        ctx(module.getContext()) {}

  LogicalResult run(ArrayRef<PlanEntry> entries);

private:
  struct Application {
    const PlanEntry *entry;
    std::string path;
  };

  ModuleView viewOf(func::FuncOp func, StringRef path);
  /// Fills moduleOps for `func`.
  void indexModules(func::FuncOp func);
  bool isParam(Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && params.contains(arg);
  }
  StringRef paramName(BlockArgument arg) {
    auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    return func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttrName)
        .getValue();
  }

  LogicalResult apply(func::FuncOp func, const Application &app);
  LogicalResult applyLinear(const Application &app, ModuleView &view);
  LogicalResult applySequence(const Application &app, ModuleView &view);
  LogicalResult applyPrepareInput(const Application &app, ModuleView &view);
  LogicalResult applyPrepareOutput(const Application &app, ModuleView &view);

  /// Diagnostic about `app`, at `op`.
  InFlightDiagnostic emitError(Operation *op, const Application &app);
  /// The mesh axis of `app`'s style.
  FailureOr<int64_t> getMeshDim(const Application &app, Operation *anchor);
  /// `placement` on the style's mesh axis, Replicate on the others.
  FailureOr<LayoutAttr> onMeshDim(const Application &app, Operation *anchor,
                                  PlanPlacement placement, int64_t rank);
  /// Resolves a plan layout for `value`: negative shard dims count from its
  /// rank, or from `indexRank` where given (embedding indices).
  FailureOr<LayoutAttr>
  resolve(const Application &app, Operation *anchor,
          ArrayRef<PlanPlacement> layout, Value value,
          std::optional<int64_t> indexRank = std::nullopt);

  /// Gives an argument a layout: parameters must not get two different
  /// ones; a plain argument keeps a layout it already has.
  LogicalResult setArgLayout(const Application &app, Operation *anchor,
                             BlockArgument arg, LayoutAttr layout);
  /// Requests `layout` for `input` as the module's ops see it.
  void annotateInput(ModuleView &view, Value input, LayoutAttr layout);
  /// Requests `layout` for `output` as the ops outside the module see it.
  void annotateOutput(ModuleView &view, Value output, LayoutAttr layout);
  bool inModule(const ModuleView &view, Operation *op) {
    for (; op; op = op->getParentOp())
      if (view.ops.contains(op))
        return true;
    return false;
  }

  ModuleOp module;
  MeshOp mesh;
  std::optional<int64_t> defaultMeshDim;
  MLIRContext *ctx;
  llvm::SetVector<BlockArgument> params;
  /// Argument layouts this pass set, with the plan key that set them.
  DenseMap<BlockArgument, std::string> argSetBy;
  /// The ops of the function being planned tagged with each module or one
  /// of its submodules, in program order.
  llvm::StringMap<SmallVector<Operation *>> moduleOps;
};

void PlanApplier::indexModules(func::FuncOp func) {
  moduleOps.clear();
  for (Operation &op : func.getBody().front()) {
    auto tag = op.getAttrOfType<StringAttr>(kModuleAttrName);
    if (!tag)
      continue;
    // An op belongs to its module and to every enclosing one.
    StringRef path = tag.getValue();
    for (size_t dot = path.find('.'); dot != StringRef::npos;
         dot = path.find('.', dot + 1))
      moduleOps[path.take_front(dot)].push_back(&op);
    moduleOps[path].push_back(&op);
  }
}

InFlightDiagnostic PlanApplier::emitError(Operation *op,
                                          const Application &app) {
  InFlightDiagnostic diag = mlir::emitError(op->getLoc(), "tp plan: entry '");
  diag << app.entry->key << "' (" << getPlanStyleName(app.entry->style) << ")";
  if (app.path != app.entry->key)
    diag << " on module '" << app.path << "'";
  diag << ": ";
  return diag;
}

FailureOr<int64_t> PlanApplier::getMeshDim(const Application &app,
                                           Operation *anchor) {
  std::optional<int64_t> dim =
      app.entry->meshDim ? app.entry->meshDim : defaultMeshDim;
  if (!dim) {
    if (mesh.getRank() == 1)
      return 0;
    return emitError(anchor, app)
           << "the mesh @" << mesh.getSymName() << " has rank "
           << mesh.getRank() << "; say which mesh dim to parallelize over "
           << "with \"mesh_dim\"";
  }
  if (*dim < 0 || *dim >= mesh.getRank())
    return emitError(anchor, app)
           << "mesh_dim " << *dim << " is out of range for the mesh @"
           << mesh.getSymName();
  return *dim;
}

FailureOr<LayoutAttr> PlanApplier::resolve(const Application &app,
                                           Operation *anchor,
                                           ArrayRef<PlanPlacement> layout,
                                           Value value,
                                           std::optional<int64_t> indexRank) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  SmallVector<PlacementAttr> placements;
  for (const PlanPlacement &p : layout) {
    switch (p.kind) {
    case PlacementKind::Replicate:
      placements.push_back(PlacementAttr::getReplicate(ctx));
      break;
    case PlacementKind::Partial:
      placements.push_back(PlacementAttr::getPartial(ctx, p.reduce));
      break;
    case PlacementKind::Shard: {
      int64_t dim = p.dim < 0 ? p.dim + indexRank.value_or(rank) : p.dim;
      if (dim < 0 || dim >= rank)
        return emitError(anchor, app)
               << "S(" << p.dim << ") is out of range for a tensor of type "
               << value.getType();
      placements.push_back(PlacementAttr::getShard(ctx, dim));
      break;
    }
    }
  }
  return LayoutAttr::get(ctx, FlatSymbolRefAttr::get(mesh.getSymNameAttr()),
                         placements);
}

FailureOr<LayoutAttr> PlanApplier::onMeshDim(const Application &app,
                                             Operation *anchor,
                                             PlanPlacement placement,
                                             int64_t rank) {
  FailureOr<int64_t> axis = getMeshDim(app, anchor);
  if (failed(axis))
    return failure();
  LayoutAttr replicated = getReplicatedLayout(mesh);
  if (placement.kind != PlacementKind::Shard)
    return withPlacement(
        replicated, *axis,
        placement.kind == PlacementKind::Replicate
            ? PlacementAttr::getReplicate(ctx)
            : PlacementAttr::getPartial(ctx, placement.reduce));
  int64_t dim = placement.dim < 0 ? placement.dim + rank : placement.dim;
  return withPlacement(replicated, *axis, PlacementAttr::getShard(ctx, dim));
}

LogicalResult PlanApplier::setArgLayout(const Application &app,
                                        Operation *anchor, BlockArgument arg,
                                        LayoutAttr layout) {
  auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  unsigned index = arg.getArgNumber();
  auto existing = func.getArgAttrOfType<LayoutAttr>(index, kLayoutAttrName);
  if (!existing) {
    func.setArgAttr(index, kLayoutAttrName, layout);
    argSetBy[arg] = app.entry->key;
    return success();
  }
  if (existing == layout)
    return success();
  auto setBy = argSetBy.find(arg);
  bool param = params.contains(arg);
  // A plain argument that already has a layout is a DTensor input: its
  // placements are kept, as PyTorch does, unless this plan set them.
  if (!param && setBy == argSetBy.end())
    return success();
  InFlightDiagnostic diag = emitError(anchor, app);
  if (param)
    diag << "parameter '" << paramName(arg) << "'";
  else
    diag << "argument #" << index << " of @" << func.getSymName();
  diag << " would be laid out as " << layout << " but ";
  if (setBy != argSetBy.end())
    diag << "entry '" << setBy->second << "' laid it out as " << existing;
  else
    diag << "it already has layout " << existing;
  return diag;
}

void PlanApplier::annotateInput(ModuleView &view, Value input,
                                LayoutAttr layout) {
  // Nothing to ask for if the value is already requested as `layout`.
  if (auto annotate = input.getDefiningOp<AnnotateOp>())
    if (annotate.getLayout() == layout)
      return;
  if (auto arg = dyn_cast<BlockArgument>(input)) {
    auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (func.getArgAttrOfType<LayoutAttr>(arg.getArgNumber(),
                                          kLayoutAttrName) == layout)
      return;
  }
  Operation *first = nullptr;
  for (Operation *op : view.ops)
    if (llvm::is_contained(op->getOperands(), input)) {
      first = op;
      break;
    }
  if (!first)
    return;
  OpBuilder builder(first);
  auto annotate = AnnotateOp::create(builder, first->getLoc(), input.getType(),
                                     input, layout);
  annotate->setAttr(kBoundaryAttrName, builder.getUnitAttr());
  input.replaceUsesWithIf(annotate.getResult(), [&](OpOperand &use) {
    return inModule(view, use.getOwner());
  });
}

void PlanApplier::annotateOutput(ModuleView &view, Value output,
                                 LayoutAttr layout) {
  Operation *def = output.getDefiningOp();
  OpBuilder builder(ctx);
  builder.setInsertionPointAfter(def);
  auto annotate = AnnotateOp::create(builder, def->getLoc(), output.getType(),
                                     output, layout);
  annotate->setAttr(kBoundaryAttrName, builder.getUnitAttr());
  output.replaceUsesWithIf(annotate.getResult(), [&](OpOperand &use) {
    return use.getOwner() != annotate && !inModule(view, use.getOwner());
  });
}

ModuleView PlanApplier::viewOf(func::FuncOp func, StringRef path) {
  ModuleView view;
  view.path = path.str();
  // The function's ops by module (indexModules), not a scan of the body
  // per module: applying a plan stays linear in the program's size.
  auto it = moduleOps.find(path);
  if (it != moduleOps.end())
    view.ops.insert(it->second.begin(), it->second.end());
  llvm::SetVector<Value> inputs;
  llvm::SetVector<BlockArgument> usedParams;
  for (Operation *op : view.ops) {
    for (Value operand : op->getOperands()) {
      if (!isa<RankedTensorType>(operand.getType()))
        continue;
      if (Operation *def = operand.getDefiningOp())
        if (view.ops.contains(def))
          continue;
      if (isParam(operand)) {
        usedParams.insert(cast<BlockArgument>(operand));
        continue;
      }
      if (!isCreatedFromScalars(operand))
        inputs.insert(operand);
    }
    for (Value result : op->getResults())
      if (isa<RankedTensorType>(result.getType()) &&
          llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !inModule(view, user); }))
        view.outputs.push_back(result);
  }
  view.inputs = inputs.takeVector();
  view.params = usedParams.takeVector();
  return view;
}

LogicalResult PlanApplier::applyLinear(const Application &app,
                                       ModuleView &view) {
  const PlanEntry &entry = *app.entry;
  bool colwise = entry.style == PlanStyle::Colwise;
  Operation *anchor = view.ops.front();

  // The module's one linear op: a contraction or an embedding lookup.
  SmallVector<Operation *> linears;
  for (Operation *op : view.ops) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if ((linalgOp && linalg::isaContractionOpInterface(linalgOp)) ||
        isa<tensor::GatherOp>(op))
      linears.push_back(op);
  }
  if (linears.empty())
    return emitError(anchor, app)
           << "module '" << view.path
           << "' has no linear op (a linalg contraction or an embedding "
              "tensor.gather)";
  if (linears.size() > 1) {
    InFlightDiagnostic diag = emitError(anchor, app)
                              << "module '" << view.path << "' has "
                              << linears.size()
                              << " linear ops; the style applies to a module "
                                 "with one (an nn.Linear or nn.Embedding)";
    for (Operation *op : linears)
      diag.attachNote(op->getLoc()) << "linear op";
    return diag;
  }
  Operation *linear = linears.front();
  bool embedding = isa<tensor::GatherOp>(linear);
  std::string why;
  FailureOr<ShardingSpec> spec = getShardingSpec(linear, &why);
  if (failed(spec))
    return emitError(linear, app) << "cannot shard the linear op: " << why;

  // The weight: the parameter the op reads (the table of an embedding).
  SmallVector<unsigned> inputOperands;
  if (embedding)
    inputOperands = {0, 1};
  else
    for (OpOperand *input :
         cast<linalg::LinalgOp>(linear).getDpsInputOperands())
      inputOperands.push_back(input->getOperandNumber());
  SmallVector<unsigned> weights;
  for (unsigned index : inputOperands)
    if (isParam(linear->getOperand(index)))
      weights.push_back(index);
  if (weights.size() != 1 || (embedding && weights.front() != 0))
    return emitError(linear, app)
           << "the linear op must read exactly one dtensor.param operand, "
              "its weight (an embedding: the table); it reads "
           << weights.size();
  unsigned weight = weights.front();
  auto weightArg = cast<BlockArgument>(linear->getOperand(weight));

  // Out features: the weight dim indexed by the loop of the output's last
  // dim. In features: the weight dim indexed by a reduction loop.
  ArrayRef<int64_t> weightDims = spec->operandDims[weight];
  int64_t outLoop =
      spec->resultDims.front().empty() ? -1 : spec->resultDims.front().back();
  const int64_t *outDim = llvm::find(weightDims, outLoop);
  SmallVector<int64_t> inDims;
  for (auto [dim, loop] : llvm::enumerate(weightDims))
    if (loop >= 0 && spec->loops[loop].kind == ShardingLoop::Kind::Reduction)
      inDims.push_back(dim);
  if (outLoop < 0 || outDim == weightDims.end())
    return emitError(linear, app)
           << "the weight '" << paramName(weightArg)
           << "' has no dim indexed like the output's last dim (out "
              "features)";
  if (inDims.size() != 1)
    return emitError(linear, app)
           << "the weight '" << paramName(weightArg) << "' has "
           << inDims.size()
           << " dims indexed by reduction loops; expected one (in features)";
  int64_t weightRank = cast<RankedTensorType>(weightArg.getType()).getRank();
  PlanPlacement weightPlacement;
  weightPlacement.kind = PlacementKind::Shard;
  weightPlacement.dim = colwise ? outDim - weightDims.begin() : inDims.front();
  FailureOr<LayoutAttr> weightLayout =
      onMeshDim(app, linear, weightPlacement, weightRank);
  if (failed(weightLayout) ||
      failed(setArgLayout(app, linear, weightArg, *weightLayout)))
    return failure();

  // Other parameters: a bias added to the result (Colwise: sharded like
  // the out features; Rowwise: replicated).
  for (Operation *op : view.ops) {
    for (OpOperand &use : op->getOpOperands()) {
      if (!isParam(use.get()) ||
          (op == linear && use.getOperandNumber() == weight))
        continue;
      auto arg = cast<BlockArgument>(use.get());
      FailureOr<ShardingSpec> opSpec = getShardingSpec(op, nullptr);
      if (op == linear || failed(opSpec) || !opSpec->isAdditive)
        return emitError(op, app)
               << "parameter '" << paramName(arg)
               << "' is neither the weight of the linear op nor a bias "
                  "added to a result";
      PlanPlacement bias;
      if (colwise && !opSpec->resultDims.empty() &&
          !opSpec->resultDims.front().empty()) {
        ArrayRef<int64_t> dims = opSpec->operandDims[use.getOperandNumber()];
        const int64_t *dim =
            llvm::find(dims, opSpec->resultDims.front().back());
        if (dim != dims.end()) {
          bias.kind = PlacementKind::Shard;
          bias.dim = dim - dims.begin();
        }
      }
      FailureOr<LayoutAttr> layout = onMeshDim(
          app, op, bias, cast<RankedTensorType>(arg.getType()).getRank());
      if (failed(layout) || failed(setArgLayout(app, op, arg, *layout)))
        return failure();
    }
  }

  // The input: a plain argument is input_layouts; the module wants R
  // (Colwise, any embedding) or S(-1) (Rowwise) on the style's mesh dim.
  // On the other mesh dims (n-D meshes) the wanted and default layouts keep
  // the placements of input_layouts (Replicate without).
  if (view.inputs.size() != 1)
    return emitError(anchor, app)
           << "module '" << view.path << "' has " << view.inputs.size()
           << " inputs; the style applies to a module with one";
  Value input = view.inputs.front();
  FailureOr<int64_t> axis = getMeshDim(app, anchor);
  if (failed(axis))
    return failure();
  SmallVector<PlanPlacement> base =
      entry.inputLayouts ? *entry.inputLayouts->front()
                         : SmallVector<PlanPlacement>(mesh.getRank());
  auto styled = [&](PlanPlacement placement) {
    SmallVector<PlanPlacement> layout = base;
    layout[*axis] = placement;
    return layout;
  };
  PlanPlacement replicate, lastDim;
  lastDim.kind = PlacementKind::Shard;
  lastDim.dim = -1;
  // Embedding indices carry a trailing unit dim that PyTorch's index tensors
  // do not have: S(-1) is the last index dim.
  std::optional<int64_t> indexRank;
  if (embedding)
    indexRank = cast<RankedTensorType>(input.getType()).getRank() - 1;
  if (auto arg = dyn_cast<BlockArgument>(input)) {
    FailureOr<LayoutAttr> given = resolve(
        app, anchor, styled(colwise ? replicate : lastDim), input, indexRank);
    if (entry.inputLayouts)
      given = resolve(app, anchor, base, input, indexRank);
    if (failed(given) || failed(setArgLayout(app, anchor, arg, *given)))
      return failure();
  }
  FailureOr<LayoutAttr> desired =
      resolve(app, anchor, styled(colwise || embedding ? replicate : lastDim),
              input, indexRank);
  if (failed(desired))
    return failure();
  annotateInput(view, input, *desired);

  // The outputs: output_layouts, S(-1) (Colwise) or R (Rowwise) by default.
  for (Value output : view.outputs) {
    Operation *def = output.getDefiningOp();
    FailureOr<LayoutAttr> layout =
        entry.outputLayouts
            ? resolve(app, def, *entry.outputLayouts->front(), output)
            : resolve(app, def, styled(colwise ? lastDim : replicate), output);
    if (failed(layout))
      return failure();
    annotateOutput(view, output, *layout);
  }
  return success();
}

LogicalResult PlanApplier::applySequence(const Application &app,
                                         ModuleView &view) {
  Operation *anchor = view.ops.front();
  for (BlockArgument param : view.params) {
    FailureOr<LayoutAttr> layout =
        onMeshDim(app, anchor, PlanPlacement(),
                  cast<RankedTensorType>(param.getType()).getRank());
    if (failed(layout) || failed(setArgLayout(app, anchor, param, *layout)))
      return failure();
  }
  PlanPlacement shard;
  shard.kind = PlacementKind::Shard;
  shard.dim = app.entry->sequenceDim;
  for (Value input : view.inputs) {
    int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
    int64_t dim = shard.dim < 0 ? shard.dim + rank : shard.dim;
    if (dim < 0 || dim >= rank)
      return emitError(anchor, app)
             << "sequence_dim " << shard.dim
             << " is out of range for the input of type " << input.getType();
    FailureOr<LayoutAttr> layout = onMeshDim(app, anchor, shard, rank);
    if (failed(layout))
      return failure();
    if (auto arg = dyn_cast<BlockArgument>(input))
      if (failed(setArgLayout(app, anchor, arg, *layout)))
        return failure();
    annotateInput(view, input, *layout);
  }
  return success();
}

LogicalResult PlanApplier::applyPrepareInput(const Application &app,
                                             ModuleView &view) {
  const PlanEntry &entry = *app.entry;
  Operation *anchor = view.ops.front();
  if (entry.inputLayouts->size() != view.inputs.size())
    return emitError(anchor, app)
           << "module '" << view.path << "' has " << view.inputs.size()
           << " input(s) but input_layouts lists "
           << entry.inputLayouts->size();
  // Resolve everything first: annotating changes the module's inputs.
  SmallVector<Value> inputs = view.inputs;
  for (auto [input, given, desired] : llvm::zip_equal(
           inputs, *entry.inputLayouts, *entry.desiredInputLayouts)) {
    // None passes the input through.
    if (!given)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(input)) {
      FailureOr<LayoutAttr> layout = resolve(app, anchor, *given, input);
      if (failed(layout) || failed(setArgLayout(app, anchor, arg, *layout)))
        return failure();
    }
    if (!desired)
      continue;
    FailureOr<LayoutAttr> layout = resolve(app, anchor, *desired, input);
    if (failed(layout))
      return failure();
    annotateInput(view, input, *layout);
  }
  return success();
}

LogicalResult PlanApplier::applyPrepareOutput(const Application &app,
                                              ModuleView &view) {
  const PlanEntry &entry = *app.entry;
  if (entry.outputLayouts->size() != view.outputs.size())
    return emitError(view.ops.front(), app)
           << "module '" << view.path << "' has " << view.outputs.size()
           << " output(s) but output_layouts lists "
           << entry.outputLayouts->size();
  SmallVector<Value> outputs = view.outputs;
  for (auto [output, given, desired] : llvm::zip_equal(
           outputs, *entry.outputLayouts, *entry.desiredOutputLayouts)) {
    // Outputs are DTensors already; output_layouts only says which outputs
    // to touch (None: pass through).
    if (!given || !desired)
      continue;
    FailureOr<LayoutAttr> layout =
        resolve(app, output.getDefiningOp(), *desired, output);
    if (failed(layout))
      return failure();
    annotateOutput(view, output, *layout);
  }
  return success();
}

LogicalResult PlanApplier::apply(func::FuncOp func, const Application &app) {
  ModuleView view = viewOf(func, app.path);
  if (view.ops.empty())
    return success();
  switch (app.entry->style) {
  case PlanStyle::Colwise:
  case PlanStyle::Rowwise:
    return applyLinear(app, view);
  case PlanStyle::Sequence:
    return applySequence(app, view);
  case PlanStyle::PrepareInput:
    return applyPrepareInput(app, view);
  case PlanStyle::PrepareOutput:
    return applyPrepareOutput(app, view);
  }
  return success();
}

LogicalResult PlanApplier::run(ArrayRef<PlanEntry> entries) {
  // Parameters, module paths, and tags where propagation cannot use them.
  SmallVector<func::FuncOp> funcs;
  llvm::SetVector<StringRef> paths;
  WalkResult walk = module.walk([&](Operation *op) {
    Attribute tag = op->getAttr(kModuleAttrName);
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      if (func.isExternal())
        return WalkResult::advance();
      funcs.push_back(func);
      for (BlockArgument arg : func.getArguments()) {
        Attribute param = func.getArgAttr(arg.getArgNumber(), kParamAttrName);
        if (!param)
          continue;
        if (!isa<StringAttr>(param) || !isa<RankedTensorType>(arg.getType())) {
          mlir::emitError(func.getLoc(), "tp plan: argument #")
              << arg.getArgNumber()
              << ": dtensor.param must be a string on a ranked tensor";
          return WalkResult::interrupt();
        }
        params.insert(arg);
      }
      return WalkResult::advance();
    }
    if (!tag)
      return WalkResult::advance();
    auto name = dyn_cast<StringAttr>(tag);
    if (!name || name.getValue().empty() ||
        llvm::is_contained(llvm::split(name.getValue(), '.'), "")) {
      mlir::emitError(op->getLoc(),
                      "tp plan: dtensor.module must be a dotted module path");
      return WalkResult::interrupt();
    }
    auto func = dyn_cast<func::FuncOp>(op->getParentOp());
    if (!func) {
      mlir::emitError(op->getLoc(),
                      "tp plan: dtensor.module is only supported on ops "
                      "directly in a function body");
      return WalkResult::interrupt();
    }
    StringRef path = name.getValue();
    for (size_t dot = path.find('.'); dot != StringRef::npos;
         dot = path.find('.', dot + 1))
      paths.insert(path.take_front(dot));
    paths.insert(path);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // Every entry on every module it names, outer modules first.
  SmallVector<Application> apps;
  for (const PlanEntry &entry : entries) {
    size_t before = apps.size();
    for (StringRef path : paths)
      if (keyMatches(entry.key, path))
        apps.push_back({&entry, path.str()});
    if (apps.size() == before)
      return mlir::emitError(module.getLoc(), "tp plan: entry '")
             << entry.key << "' (" << getPlanStyleName(entry.style)
             << "): no op carries dtensor.module = \"" << entry.key
             << "\" (or a submodule of it)";
  }
  auto depth = [](StringRef path) { return path.count('.'); };
  llvm::stable_sort(apps, [&](const Application &a, const Application &b) {
    return std::make_tuple(depth(a.path), StringRef(a.path), a.entry->index) <
           std::make_tuple(depth(b.path), StringRef(b.path), b.entry->index);
  });
  for (func::FuncOp func : funcs) {
    indexModules(func);
    for (const Application &app : apps)
      if (failed(apply(func, app)))
        return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ApplyTPPlanPass : dtensor::impl::ApplyTPPlanPassBase<ApplyTPPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(runOnModule()))
      signalPassFailure();
  }

  LogicalResult runOnModule();
};

LogicalResult ApplyTPPlanPass::runOnModule() {
  ModuleOp module = getOperation();
  PlanError error(module);

  // The plan text.
  if (planFile.empty() == planText.empty())
    return error("give the plan either as a file (plan=) or inline "
                 "(plan-json=), not ")
           << (planFile.empty() ? "neither" : "both");
  // MLIR's pass-option parser takes the braces around `plan-json={...}` as
  // the option's own delimiters; a plan is an object, so put them back.
  std::string text = planText;
  if (!StringRef(text).trim().starts_with("{") &&
      !StringRef(text).trim().empty())
    text = "{" + text + "}";
  if (!planFile.empty()) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFile(planFile, /*IsText=*/true);
    if (!buffer)
      return error("cannot read plan file '")
             << planFile << "': " << buffer.getError().message();
    text = (*buffer)->getBuffer().str();
  }
  llvm::Expected<PlanDocument> document = parsePlanDocument(text);
  if (!document)
    return error(llvm::toString(document.takeError()));

  // The mesh: the option, else the plan's, else the module's only mesh.
  std::string meshRef = meshName;
  if (meshRef.empty() && document->mesh)
    meshRef = *document->mesh;
  StringRef meshSym = StringRef(meshRef).ltrim('@');
  MeshOp mesh;
  if (!meshSym.empty()) {
    mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
        module, StringAttr::get(module.getContext(), meshSym));
    if (!mesh)
      return error("no dtensor.mesh named @") << meshSym;
  } else {
    auto meshes = llvm::to_vector(module.getOps<MeshOp>());
    if (meshes.empty())
      return error("the module declares no dtensor.mesh");
    if (meshes.size() > 1)
      return error("the module declares ")
             << meshes.size()
             << " meshes; name one with the mesh option or the plan's "
                "\"mesh\"";
    mesh = meshes.front();
  }

  llvm::Expected<std::vector<PlanEntry>> entries =
      parsePlanEntries(document->plan, mesh.getRank());
  if (!entries)
    return error(llvm::toString(entries.takeError()));
  return PlanApplier(module, mesh, document->meshDim).run(*entries);
}

} // namespace
