//===- ScreenInput.cpp - reject input before upstream code sees it --------===//
//
// Runs on IR that has not been verified: every op is read through the
// generic Operation API (attributes by name, types of results and block
// arguments), never through an accessor that assumes the op's invariants.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Frontend/Screen.h"

#include "dtensor/Support/SafeMath.h"
#include "dtensor/Frontend/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_SCREENINPUTPASS
#include "dtensor/Frontend/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

/// A static shape over the limits: a dim over kMaxDimSize or more than
/// kMaxNumElements elements.
static LogicalResult checkType(Operation *op, Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasRank())
    return success();
  for (int64_t size : shaped.getShape())
    if (!ShapedType::isDynamic(size) && size > kMaxDimSize)
      return op->emitError("dimension of ")
             << size << " elements in " << type << " exceeds the limit of "
             << kMaxDimSize << " (2^40)";
  std::optional<int64_t> count =
      checkedProduct(shaped.getShape(), ShapedType::kDynamic);
  if (!count || *count > kMaxNumElements)
    return op->emitError("")
           << type << " has more than " << kMaxNumElements
           << " (2^48) elements, the limit for a tensor";
  return success();
}

static LogicalResult checkTypes(Operation *op) {
  for (Type type : op->getResultTypes())
    if (failed(checkType(op, type)))
      return failure();
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (BlockArgument arg : block.getArguments())
        if (failed(checkType(op, arg.getType())))
          return failure();
  if (auto func = dyn_cast<FunctionOpInterface>(op)) {
    auto type = dyn_cast_or_null<FunctionType>(func.getFunctionType());
    if (type) {
      for (Type t : llvm::concat<const Type>(type.getInputs(),
                                             type.getResults()))
        if (failed(checkType(op, t)))
          return failure();
    }
  }
  return success();
}

/// tensor.concat: upstream's verifier indexes the shape with `dim` before
/// it checks that `dim` is not negative (a segfault on dim(-1)).
static LogicalResult checkConcat(Operation *op) {
  auto dim = op->getAttrOfType<IntegerAttr>("dim");
  if (!dim || op->getNumResults() != 1)
    return success();
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type)
    return success();
  int64_t value = dim.getValue().getSExtValue();
  if (value < 0 || value >= type.getRank())
    return op->emitError("concatenation dim ")
           << value << " is out of range for the rank-" << type.getRank()
           << " result " << type;
  return success();
}

/// tensor.expand_shape: upstream's verifier accepts an output_shape whose
/// static entries contradict the result type (or a static entry for a
/// dynamic result dim); bufferization then builds an invalid
/// memref.expand_shape.
static LogicalResult checkExpandShape(Operation *op) {
  auto shape = op->getAttrOfType<DenseI64ArrayAttr>("static_output_shape");
  if (!shape || op->getNumResults() != 1)
    return success();
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || type.getRank() != static_cast<int64_t>(shape.size()))
    return success();
  for (auto [dim, entry] : llvm::enumerate(shape.asArrayRef())) {
    int64_t size = type.getDimSize(dim);
    if (ShapedType::isDynamic(entry) == ShapedType::isDynamic(size) &&
        (ShapedType::isDynamic(entry) || entry == size))
      continue;
    InFlightDiagnostic diag = op->emitError("output_shape entry ");
    diag << dim << " (";
    if (ShapedType::isDynamic(entry))
      diag << "an SSA value";
    else
      diag << entry;
    diag << ") contradicts the result type " << type;
    return diag;
  }
  return success();
}

LogicalResult mlir::dtensor::screenInput(Operation *root) {
  bool failedAny = false;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (failed(checkTypes(op))) {
      failedAny = true;
      return;
    }
    StringRef name = op->getName().getStringRef();
    if (name == "tensor.concat" && failed(checkConcat(op)))
      failedAny = true;
    else if (name == "tensor.expand_shape" && failed(checkExpandShape(op)))
      failedAny = true;
  });
  return failure(failedAny);
}

OwningOpRef<ModuleOp> mlir::dtensor::parseAndScreen(llvm::SourceMgr &sourceMgr,
                                                   MLIRContext *context) {
  ParserConfig config(context, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module || failed(screenInput(*module)) || failed(verify(*module)))
    return {};
  return module;
}

namespace {
struct ScreenInputPass
    : public mlir::dtensor::impl::ScreenInputPassBase<ScreenInputPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(screenInput(getOperation())) ||
        (verify && failed(mlir::verify(getOperation()))))
      signalPassFailure();
  }
};
} // namespace
