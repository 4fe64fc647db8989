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

/// The value of an index or integer SSA value that folds to a constant
/// through arith.constant, arith.addi/subi/muli and tensor.dim of a static
/// dim; none otherwise (or on overflow). Reads unverified IR generically.
static std::optional<int64_t> foldInteger(Value value, unsigned depth = 0) {
  Operation *def = value.getDefiningOp();
  if (!def || depth > 16 || def->getNumResults() != 1)
    return std::nullopt;
  StringRef name = def->getName().getStringRef();
  if (name == "arith.constant") {
    auto attr = def->getAttrOfType<IntegerAttr>("value");
    if (!attr || attr.getValue().getBitWidth() > 64)
      return std::nullopt;
    return attr.getValue().getSExtValue();
  }
  if (def->getNumOperands() != 2)
    return std::nullopt;
  if (name == "tensor.dim") {
    auto type = dyn_cast<RankedTensorType>(def->getOperand(0).getType());
    std::optional<int64_t> index = foldInteger(def->getOperand(1), depth + 1);
    if (!type || !index || *index < 0 || *index >= type.getRank() ||
        type.isDynamicDim(*index))
      return std::nullopt;
    return type.getDimSize(*index);
  }
  if (name != "arith.addi" && name != "arith.subi" && name != "arith.muli")
    return std::nullopt;
  std::optional<int64_t> lhs = foldInteger(def->getOperand(0), depth + 1);
  std::optional<int64_t> rhs = foldInteger(def->getOperand(1), depth + 1);
  if (!lhs || !rhs)
    return std::nullopt;
  if (name == "arith.muli")
    return checkedMul(*lhs, *rhs);
  if (name == "arith.subi") {
    if (*rhs == std::numeric_limits<int64_t>::min())
      return std::nullopt;
    return checkedAdd(*lhs, -*rhs);
  }
  return checkedAdd(*lhs, *rhs);
}

/// tensor.pad: upstream's verifier checks the result type against static
/// padding only; with dynamic padding it accepts a static result smaller
/// than the source (the padding must then be negative) and padding that
/// folds to a negative constant, and one-shot-bufferize then builds a
/// slice out of bounds. Refused: a static result dim smaller than its
/// static source dim, padding that is or folds to a negative constant, and
/// folded padding that contradicts a static result dim, and padding wider
/// than a static result dim around a dynamic source dim.
static LogicalResult checkPad(Operation *op) {
  auto staticLow = op->getAttrOfType<DenseI64ArrayAttr>("static_low");
  auto staticHigh = op->getAttrOfType<DenseI64ArrayAttr>("static_high");
  if (!staticLow || !staticHigh || op->getNumResults() != 1 ||
      op->getNumOperands() < 1)
    return success();
  auto source = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = staticLow.size();
  if (!source || !result || source.getRank() != rank ||
      result.getRank() != rank || int64_t(staticHigh.size()) != rank)
    return success();
  // The dynamic entries are the operands after the source, low then high.
  int64_t numLow = llvm::count_if(staticLow.asArrayRef(), ShapedType::isDynamic);
  int64_t numHigh =
      llvm::count_if(staticHigh.asArrayRef(), ShapedType::isDynamic);
  if (int64_t(op->getNumOperands()) != 1 + numLow + numHigh)
    return success();
  auto folded = [&](ArrayRef<int64_t> entries, unsigned firstOperand) {
    SmallVector<std::optional<int64_t>> values;
    unsigned next = firstOperand;
    for (int64_t entry : entries)
      values.push_back(ShapedType::isDynamic(entry)
                           ? foldInteger(op->getOperand(next++))
                           : std::optional<int64_t>(entry));
    return values;
  };
  SmallVector<std::optional<int64_t>> low = folded(staticLow.asArrayRef(), 1);
  SmallVector<std::optional<int64_t>> high =
      folded(staticHigh.asArrayRef(), 1 + numLow);
  for (int64_t dim = 0; dim < rank; ++dim) {
    for (auto [side, value] : {std::pair(StringRef("low"), low[dim]),
                               std::pair(StringRef("high"), high[dim])})
      if (value && *value < 0)
        return op->emitError(side)
               << " padding of dimension " << dim << " is " << *value
               << ", negative";
    int64_t sourceSize = source.getDimSize(dim);
    int64_t resultSize = result.getDimSize(dim);
    // A dynamic source dim under padding wider than the static result:
    // the source would have a negative size.
    if (ShapedType::isDynamic(sourceSize) &&
        !ShapedType::isDynamic(resultSize) && low[dim] && high[dim]) {
      std::optional<int64_t> padding = checkedAdd(*low[dim], *high[dim]);
      if (!padding || *padding > resultSize)
        return op->emitError("padding of dimension ")
               << dim << " (" << *low[dim] << " low + " << *high[dim]
               << " high) is wider than the result's " << resultSize
               << " elements: the source would have a negative size";
    }
    if (ShapedType::isDynamic(sourceSize) || ShapedType::isDynamic(resultSize))
      continue;
    if (resultSize < sourceSize)
      return op->emitError("result dimension ")
             << dim << " of " << resultSize
             << " elements is smaller than the source's " << sourceSize
             << ": the padding would be negative";
    if (!low[dim] || !high[dim])
      continue;
    std::optional<int64_t> padded = checkedAdd(sourceSize, *low[dim]);
    if (padded)
      padded = checkedAdd(*padded, *high[dim]);
    if (padded != resultSize) {
      InFlightDiagnostic diag =
          op->emitError("padding of dimension ") << dim << " gives ";
      if (padded)
        diag << *padded;
      else
        diag << "more than 2^63";
      return diag << " elements (" << sourceSize << " + " << *low[dim]
                  << " low + " << *high[dim] << " high), but the result type "
                  << result << " has " << resultSize;
    }
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
    else if (name == "tensor.pad" && failed(checkPad(op)))
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
