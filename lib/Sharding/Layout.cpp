//===- Layout.cpp - layouts applied to tensors and meshes -----------------===//

#include "dtensor/Sharding/Layout.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::dtensor;

LayoutAttr mlir::dtensor::getReplicatedLayout(MeshOp mesh) {
  MLIRContext *ctx = mesh.getContext();
  SmallVector<PlacementAttr> placements(mesh.getRank(),
                                        PlacementAttr::getReplicate(ctx));
  return LayoutAttr::get(ctx, FlatSymbolRefAttr::get(mesh.getSymNameAttr()),
                         placements);
}

LayoutAttr mlir::dtensor::withPlacement(LayoutAttr layout, int64_t axis,
                                        PlacementAttr placement) {
  SmallVector<PlacementAttr> placements(layout.getPlacements());
  placements[axis] = placement;
  return LayoutAttr::get(layout.getContext(), layout.getMesh(), placements);
}

bool mlir::dtensor::mixesPartialReductions(
    ArrayRef<PlacementAttr> placements) {
  std::optional<ReduceKind> kind;
  for (PlacementAttr p : placements) {
    if (!p.isPartial())
      continue;
    if (kind && *kind != p.getReduce())
      return true;
    kind = p.getReduce();
  }
  return false;
}

static_assert(kUnknownSize == ShapedType::kDynamic,
              "HostLayout's unknown size must be MLIR's dynamic size");

HostPlacement mlir::dtensor::toHostPlacement(PlacementAttr placement) {
  switch (placement.getKind()) {
  case PlacementKind::Shard:
    return HostPlacement::shard(placement.getDim());
  case PlacementKind::Replicate:
    return HostPlacement::replicate();
  case PlacementKind::Partial:
    break;
  }
  switch (placement.getReduce()) {
  case ReduceKind::Sum:
    return HostPlacement::partial(HostPlacement::Reduce::Sum);
  case ReduceKind::Avg:
    return HostPlacement::partial(HostPlacement::Reduce::Avg);
  case ReduceKind::Product:
    return HostPlacement::partial(HostPlacement::Reduce::Product);
  case ReduceKind::Min:
    return HostPlacement::partial(HostPlacement::Reduce::Min);
  case ReduceKind::Max:
    return HostPlacement::partial(HostPlacement::Reduce::Max);
  }
  llvm_unreachable("unknown reduce kind");
}

HostLayout mlir::dtensor::toHostLayout(LayoutAttr layout) {
  HostLayout host;
  for (PlacementAttr placement : layout.getPlacements())
    host.placements.push_back(toHostPlacement(placement));
  return host;
}

HostMesh mlir::dtensor::toHostMesh(MeshOp mesh) {
  HostMesh host;
  host.name = mesh.getSymName().str();
  host.shape.assign(mesh.getShape().begin(), mesh.getShape().end());
  if (std::optional<ArrayRef<int64_t>> devices = mesh.getDevices())
    host.devices.assign(devices->begin(), devices->end());
  return host;
}

std::optional<ElementType> mlir::dtensor::getHostElementType(Type type) {
  // The runtime's element types are named by their MLIR spelling.
  std::string spelled;
  llvm::raw_string_ostream(spelled) << type;
  return parseElementType(spelled);
}

FailureOr<EntryLayouts>
mlir::dtensor::getEntryLayouts(FunctionOpInterface func) {
  auto module = func->getParentOfType<ModuleOp>();
  EntryLayouts layouts;
  layouts.entry = func.getName().str();
  llvm::StringMap<int64_t> meshIds;
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    meshIds[mesh.getSymName()] = layouts.meshes.size();
    layouts.meshes.push_back(toHostMesh(mesh));
  }
  auto specOf = [&](DictionaryAttr attrs, const Twine &what,
                    std::vector<HostTensorSpec> &out) -> LogicalResult {
    auto layout =
        attrs ? attrs.getAs<LayoutAttr>(kLayoutAttrName) : LayoutAttr();
    auto global =
        attrs ? attrs.getAs<TypeAttr>(kGlobalTypeAttrName) : TypeAttr();
    auto type = global ? dyn_cast<RankedTensorType>(global.getValue())
                       : RankedTensorType();
    if (!layout || !type)
      return func.emitError() << what << " has no layout";
    auto mesh = meshIds.find(layout.getMesh().getValue());
    if (mesh == meshIds.end())
      return func.emitError()
             << what << " is laid out on the unknown mesh " << layout.getMesh();
    std::optional<ElementType> element =
        getHostElementType(type.getElementType());
    if (!element || !type.hasStaticShape())
      return func.emitError()
             << what << " is a " << type
             << ": hosts hold static f32/f64/i32/i64/bf16/f16 tensors only";
    out.push_back(
        {*element,
         std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
         mesh->second, toHostLayout(layout)});
    return success();
  };
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (failed(specOf(func.getArgAttrDict(i), "argument #" + Twine(i),
                      layouts.args)))
      return failure();
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (failed(specOf(func.getResultAttrDict(i), "result #" + Twine(i),
                      layouts.results)))
      return failure();
  return layouts;
}

SmallVector<SmallVector<int64_t>>
mlir::dtensor::splitsPerDim(LayoutAttr layout, MeshOp mesh, int64_t rank) {
  SmallVector<SmallVector<int64_t>> splits;
  for (const std::vector<int64_t> &sizes : toHostLayout(layout).splitsPerDim(
           std::vector<int64_t>(mesh.getShape().begin(), mesh.getShape().end()),
           rank))
    splits.emplace_back(sizes.begin(), sizes.end());
  return splits;
}

SmallVector<int64_t> mlir::dtensor::getLocalShape(ArrayRef<int64_t> globalShape,
                                                  LayoutAttr layout,
                                                  MeshOp mesh) {
  std::vector<int64_t> shape = getUniformLocalShape(
      std::vector<int64_t>(globalShape.begin(), globalShape.end()),
      toHostLayout(layout),
      std::vector<int64_t>(mesh.getShape().begin(), mesh.getShape().end()));
  return SmallVector<int64_t>(shape.begin(), shape.end());
}

SmallVector<int64_t>
mlir::dtensor::getPaddedLocalShape(ArrayRef<int64_t> globalShape,
                                   LayoutAttr layout, MeshOp mesh) {
  std::vector<int64_t> shape = dtensor::getPaddedLocalShape(
      std::vector<int64_t>(globalShape.begin(), globalShape.end()),
      toHostLayout(layout),
      std::vector<int64_t>(mesh.getShape().begin(), mesh.getShape().end()));
  return SmallVector<int64_t>(shape.begin(), shape.end());
}

RankedTensorType mlir::dtensor::getLocalType(RankedTensorType globalType,
                                             LayoutAttr layout, MeshOp mesh) {
  return RankedTensorType::get(
      getLocalShape(globalType.getShape(), layout, mesh),
      globalType.getElementType());
}

int64_t mlir::dtensor::getElementBytes(Type elementType) {
  if (elementType.isIntOrIndexOrFloat() && !elementType.isIndex())
    return std::max<int64_t>(1, elementType.getIntOrFloatBitWidth() / 8);
  return 8;
}

SmallVector<LayoutAttr> mlir::dtensor::getResultLayouts(Operation *op) {
  SmallVector<LayoutAttr> layouts;
  if (auto array = op->getAttrOfType<ArrayAttr>(kLayoutsAttrName))
    for (Attribute attr : array)
      layouts.push_back(dyn_cast<LayoutAttr>(attr));
  return layouts;
}

void mlir::dtensor::setResultLayouts(Operation *op,
                                     ArrayRef<LayoutAttr> layouts) {
  SmallVector<Attribute> attrs;
  for (LayoutAttr layout : layouts)
    attrs.push_back(layout ? Attribute(layout)
                           : Attribute(UnitAttr::get(op->getContext())));
  op->setAttr(kLayoutsAttrName, ArrayAttr::get(op->getContext(), attrs));
}

LayoutAttr mlir::dtensor::getLayoutOf(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Operation *parent = arg.getOwner()->getParentOp();
    auto func = dyn_cast<FunctionOpInterface>(parent);
    if (!func) {
      // A value a loop carries (the trailing block arguments of its body,
      // one per result): the layout of the loop's result.
      unsigned numArgs = arg.getOwner()->getNumArguments();
      unsigned numResults = parent ? parent->getNumResults() : 0;
      if (!parent || !isa<RankedTensorType>(arg.getType()) ||
          numResults > numArgs ||
          arg.getArgNumber() < numArgs - numResults)
        return {};
      SmallVector<LayoutAttr> layouts = getResultLayouts(parent);
      unsigned index = arg.getArgNumber() - (numArgs - numResults);
      return index < layouts.size() ? layouts[index] : LayoutAttr();
    }
    if (arg.getOwner() != &func.getFunctionBody().front())
      return {};
    return func.getArgAttrOfType<LayoutAttr>(arg.getArgNumber(),
                                             kLayoutAttrName);
  }
  Operation *op = value.getDefiningOp();
  if (auto redistribute = dyn_cast<RedistributeOp>(op))
    return redistribute.getTo();
  if (auto annotate = dyn_cast<AnnotateOp>(op))
    return annotate.getLayout();
  if (auto fromLocal = dyn_cast<FromLocalOp>(op))
    return fromLocal.getLayout();
  SmallVector<LayoutAttr> layouts = getResultLayouts(op);
  unsigned index = cast<OpResult>(value).getResultNumber();
  return index < layouts.size() ? layouts[index] : LayoutAttr();
}

LogicalResult mlir::dtensor::verifyLayoutAttrs(FunctionOpInterface func) {
  SymbolTableCollection symbols;
  // `attr` (if any) must be a layout valid for a `type` tensor.
  auto check = [&](Operation *op, Attribute attr, Type type,
                   const Twine &what) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!attr || !tensor)
      return success();
    auto layout = dyn_cast<LayoutAttr>(attr);
    if (!layout)
      return op->emitError() << what << " is not a #dtensor.layout: " << attr;
    return success(verifyLayoutFor(op, layout, tensor, symbols));
  };
  ArrayRef<Type> argTypes = func.getArgumentTypes();
  for (auto [i, type] : llvm::enumerate(argTypes))
    if (failed(check(func, func.getArgAttr(i, kLayoutAttrName), type,
                     "the layout of argument #" + Twine(i))))
      return failure();
  ArrayRef<Type> resultTypes = func.getResultTypes();
  for (auto [i, type] : llvm::enumerate(resultTypes))
    if (failed(check(func, func.getResultAttr(i, kLayoutAttrName), type,
                     "the layout of result #" + Twine(i))))
      return failure();
  WalkResult walk = func->walk([&](Operation *op) {
    Attribute attr = op->getAttr(kLayoutsAttrName);
    if (!attr || op == func.getOperation())
      return WalkResult::advance();
    auto array = dyn_cast<ArrayAttr>(attr);
    if (!array || array.size() != op->getNumResults()) {
      op->emitError() << "'" << kLayoutsAttrName
                      << "' must list one entry per result";
      return WalkResult::interrupt();
    }
    for (auto [i, entry] : llvm::enumerate(array))
      if (failed(check(op, entry, op->getResult(i).getType(),
                       "the layout of result #" + Twine(i))))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// Whether `layout` replicates on every mesh dimension.
static bool isFullyReplicated(LayoutAttr layout) {
  return llvm::all_of(layout.getPlacements(), [](PlacementAttr placement) {
    return placement.isReplicate();
  });
}

LogicalResult mlir::dtensor::globalizeLocalBoundaries(FunctionOpInterface func) {
  if (func.isExternal())
    return success();
  Block &body = func.getFunctionBody().front();
  Operation *terminator = body.getTerminator();
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<FromLocalOp, ToLocalOp>(op))
      ops.push_back(op);
  });
  if (ops.empty())
    return success();
  SmallVector<Type> argTypes(func.getArgumentTypes());
  SmallVector<Type> resultTypes(func.getResultTypes());
  MLIRContext *ctx = func->getContext();
  auto layoutName = StringAttr::get(ctx, kLayoutAttrName);
  auto layoutOfOp = [](Operation *op) {
    if (auto fromLocal = dyn_cast<FromLocalOp>(op))
      return fromLocal.getLayout();
    return cast<ToLocalOp>(op).getLayout();
  };
  auto isAnnotation = [&](Operation *op) {
    return isFullyReplicated(layoutOfOp(op)) &&
           op->getOperand(0).getType() == op->getResult(0).getType();
  };
  // Every op is checked before any is rewritten, so that a refused
  // function is left as it was.
  for (Operation *op : ops) {
    if (isAnnotation(op))
      continue;
    LayoutAttr layout = layoutOfOp(op);
    if (auto fromLocal = dyn_cast<FromLocalOp>(op)) {
      auto arg = dyn_cast<BlockArgument>(fromLocal.getInput());
      bool onArgument =
          arg && arg.getOwner() == &body &&
          llvm::all_of(arg.getUsers(), [&](Operation *user) {
            auto other = dyn_cast<FromLocalOp>(user);
            return other && other.getLayout() == layout &&
                   other.getType() == fromLocal.getType();
          });
      if (!onArgument)
        return op->emitError("from_local of a sharded or partial layout is "
                             "supported on function arguments only (an "
                             "argument read by from_local ops of one layout)");
      Attribute existing = func.getArgAttr(arg.getArgNumber(), layoutName);
      if (existing && existing != layout)
        return op->emitError("from_local of argument #")
               << arg.getArgNumber() << " as " << layout
               << ", but the argument is laid out " << existing;
      continue;
    }
    Value local = op->getResult(0);
    if (!local.hasOneUse() || *local.getUsers().begin() != terminator ||
        op->getBlock() != &body)
      return op->emitError("to_local of a sharded or partial layout is "
                           "supported on function results only (its one use "
                           "returned)");
  }
  for (Operation *op : ops) {
    OpBuilder b(op);
    Value input = op->getOperand(0);
    LayoutAttr layout = layoutOfOp(op);
    if (isAnnotation(op)) {
      Value global = AnnotateOp::create(b, op->getLoc(), input.getType(),
                                        input, layout);
      op->getResult(0).replaceAllUsesWith(global);
      op->erase();
      continue;
    }
    if (auto fromLocal = dyn_cast<FromLocalOp>(op)) {
      // An argument read by several from_local ops: the first retypes it,
      // each is replaced by it.
      auto arg = cast<BlockArgument>(input);
      arg.setType(fromLocal.getType());
      argTypes[arg.getArgNumber()] = fromLocal.getType();
      func.setArgAttr(arg.getArgNumber(), layoutName, layout);
      fromLocal.getResult().replaceAllUsesWith(arg);
      op->erase();
      continue;
    }
    Value local = op->getResult(0);
    unsigned index = local.getUses().begin()->getOperandNumber();
    Value global =
        AnnotateOp::create(b, op->getLoc(), input.getType(), input, layout);
    resultTypes[index] = input.getType();
    func.setResultAttr(index, layoutName, layout);
    local.replaceAllUsesWith(global);
    op->erase();
  }
  func.setType(FunctionType::get(ctx, argTypes, resultTypes));
  return success();
}
