//===- Layout.cpp - layouts applied to tensors and meshes -----------------===//

#include "dtensor/Sharding/Layout.h"
#include "dtensor/Support/ChunkMath.h"

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

SmallVector<SmallVector<int64_t>>
mlir::dtensor::splitsPerDim(LayoutAttr layout, MeshOp mesh, int64_t rank) {
  SmallVector<SmallVector<int64_t>> splits;
  for (ArrayRef<int64_t> axes : shardingAxesPerDim(layout, rank)) {
    SmallVector<int64_t> sizes;
    for (int64_t axis : axes)
      sizes.push_back(mesh.getShape()[axis]);
    splits.push_back(sizes);
  }
  return splits;
}

SmallVector<int64_t> mlir::dtensor::getLocalShape(ArrayRef<int64_t> globalShape,
                                                  LayoutAttr layout,
                                                  MeshOp mesh) {
  SmallVector<int64_t> shape(globalShape);
  auto splits = splitsPerDim(layout, mesh, globalShape.size());
  for (auto [dim, size] : llvm::enumerate(shape)) {
    if (ShapedType::isDynamic(size) || splits[dim].empty())
      continue;
    std::optional<int64_t> uniform = uniformChunkSize(size, splits[dim]);
    size = uniform ? *uniform : ShapedType::kDynamic;
  }
  return shape;
}

SmallVector<int64_t>
mlir::dtensor::getPaddedLocalShape(ArrayRef<int64_t> globalShape,
                                   LayoutAttr layout, MeshOp mesh) {
  SmallVector<int64_t> shape(globalShape);
  auto splits = splitsPerDim(layout, mesh, globalShape.size());
  for (auto [dim, size] : llvm::enumerate(shape)) {
    if (ShapedType::isDynamic(size))
      continue;
    for (int64_t n : splits[dim])
      size = maxChunkSize(size, n);
  }
  return shape;
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
    auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    if (!func || arg.getOwner() != &func.getFunctionBody().front())
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
