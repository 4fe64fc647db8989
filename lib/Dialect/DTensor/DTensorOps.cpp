//===- DTensorOps.cpp - dtensor ops and their verifiers -------------------===//
//
// Every documented constraint id (MESH1, AG3, ...) appears here exactly in
// the check that enforces it, and in an expected-error test.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Support/ChunkMath.h"
#include "dtensor/Support/SafeMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::dtensor;

InFlightDiagnostic mlir::dtensor::emitConstraintError(Operation *op,
                                                      StringRef id) {
  return op->emitOpError() << "[" << id << "] ";
}

//===----------------------------------------------------------------------===//
// Custom assembly directives
//===----------------------------------------------------------------------===//

/// `(-> type)?`: the result type, printed only where it differs from the
/// operand type it defaults to.
static ParseResult parseOptionalResultType(OpAsmParser &parser, Type &result,
                                           Type input) {
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(result);
  result = input;
  return success();
}

static void printOptionalResultType(OpAsmPrinter &printer, Operation *,
                                    Type result, Type input) {
  if (result != input)
    printer << " -> " << result;
}

static ParseResult
parseOptionalResultTypes(OpAsmParser &parser, SmallVectorImpl<Type> &results,
                         TypeRange inputs) {
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseTypeList(results);
  llvm::append_range(results, inputs);
  return success();
}

static void printOptionalResultTypes(OpAsmPrinter &printer, Operation *,
                                     TypeRange results, TypeRange inputs) {
  if (results != inputs) {
    printer << " -> ";
    llvm::interleaveComma(results, printer);
  }
}

/// The wait's future type, `!dtensor.future<T>` or just `<T>`, then its
/// result type: the future's value type unless written otherwise.
static ParseResult parseFutureValueType(OpAsmParser &parser, Type &future,
                                        Type &result) {
  FutureType futureType;
  if (parser.parseCustomTypeWithFallback(futureType))
    return failure();
  future = futureType;
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(result);
  result = futureType.getValueType();
  return success();
}

static void printFutureValueType(OpAsmPrinter &printer, Operation *,
                                 Type future, Type result) {
  printer << future;
  if (result != cast<FutureType>(future).getValueType())
    printer << " -> " << result;
}

#define GET_OP_CLASSES
#include "dtensor/Dialect/DTensor/DTensorOps.cpp.inc"

#include "dtensor/Dialect/DTensor/DTensorInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

int64_t MeshOp::getNumProcesses() {
  int64_t n = 1;
  for (int64_t size : getShape())
    n *= size;
  return n;
}

int64_t MeshOp::getGroupSize(ArrayRef<int64_t> axes) {
  int64_t n = 1;
  for (int64_t axis : axes)
    n *= getShape()[axis];
  return n;
}

LogicalResult MeshOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  if (shape.empty())
    return emitConstraintError(*this, "MESH1")
           << "a mesh needs at least one dimension";
  int64_t processes = 1;
  for (auto [i, size] : llvm::enumerate(shape)) {
    if (size <= 0)
      return emitConstraintError(*this, "MESH1")
             << "mesh dimension " << i << " has non-positive size " << size;
    if (llvm::MulOverflow(processes, size, processes) ||
        processes > kMaxMeshProcesses)
      return emitConstraintError(*this, "MESH1")
             << "more than " << kMaxMeshProcesses
             << " processes (2^20), the limit for a mesh";
  }
  if (std::optional<ArrayAttr> names = getNames()) {
    if (static_cast<int64_t>(names->size()) != getRank())
      return emitConstraintError(*this, "MESH2")
             << "expected " << getRank() << " dimension names, got "
             << names->size();
    llvm::StringSet<> seen;
    for (StringAttr name : names->getAsRange<StringAttr>()) {
      if (name.getValue().empty())
        return emitConstraintError(*this, "MESH2")
               << "dimension names must be non-empty";
      if (!seen.insert(name.getValue()).second)
        return emitConstraintError(*this, "MESH2")
               << "duplicate dimension name '" << name.getValue() << "'";
    }
  }
  if (std::optional<ArrayRef<int64_t>> devices = getDevices()) {
    if (static_cast<int64_t>(devices->size()) != getNumProcesses())
      return emitConstraintError(*this, "MESH3")
             << "expected " << getNumProcesses() << " device ids, got "
             << devices->size();
    llvm::SmallSet<int64_t, 16> seen;
    for (int64_t id : *devices) {
      if (id < 0)
        return emitConstraintError(*this, "MESH3")
               << "device id " << id << " is negative";
      if (!seen.insert(id).second)
        return emitConstraintError(*this, "MESH3")
               << "device id " << id << " appears twice";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Mesh and layout lookups shared by the verifiers
//===----------------------------------------------------------------------===//

MeshOp mlir::dtensor::lookupMesh(Operation *from, SymbolRefAttr name,
                                 bool diagnose,
                                 SymbolTableCollection *symbols) {
  MeshOp mesh;
  if (name)
    mesh = symbols ? symbols->lookupNearestSymbolFrom<MeshOp>(from, name)
                   : SymbolTable::lookupNearestSymbolFrom<MeshOp>(from, name);
  if (!mesh && diagnose)
    from->emitError() << name << " does not name a dtensor.mesh";
  return mesh;
}

/// COLL1 + COLL2: resolves `mesh` and checks `axes` against it.
static MeshOp verifyMeshAxes(Operation *op, FlatSymbolRefAttr mesh,
                             ArrayRef<int64_t> axes,
                             SymbolTableCollection &symbolTable) {
  MeshOp meshOp = lookupMesh(op, mesh, /*diagnose=*/false, &symbolTable);
  if (!meshOp) {
    emitConstraintError(op, "COLL1")
        << mesh << " does not name a dtensor.mesh";
    return {};
  }
  if (axes.empty()) {
    emitConstraintError(op, "COLL2") << "needs at least one mesh axis";
    return {};
  }
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= meshOp.getRank()) {
      emitConstraintError(op, "COLL2")
          << "mesh axis " << axis << " is out of range for the rank-"
          << meshOp.getRank() << " mesh " << mesh;
      return {};
    }
    if (i > 0 && axis <= axes[i - 1]) {
      emitConstraintError(op, "COLL2")
          << "mesh axes must be strictly increasing";
      return {};
    }
  }
  return meshOp;
}

bool mlir::dtensor::partialAllowsElementType(ReduceKind kind,
                                            Type elementType) {
  // Complex numbers have no order; i1 sums, averages and products wrap.
  if (isa<ComplexType>(elementType))
    return kind == ReduceKind::Sum || kind == ReduceKind::Avg;
  if (elementType.isInteger(1))
    return kind == ReduceKind::Min || kind == ReduceKind::Max;
  return true;
}

MeshOp mlir::dtensor::verifyLayoutFor(Operation *op, LayoutAttr layout,
                                      RankedTensorType type,
                                      SymbolTableCollection &symbolTable) {
  auto meshOp =
      lookupMesh(op, layout.getMesh(), /*diagnose=*/false, &symbolTable);
  if (!meshOp) {
    emitConstraintError(op, "LAYOUT1")
        << layout.getMesh() << " does not name a dtensor.mesh";
    return {};
  }
  int64_t numPlacements = layout.getPlacements().size();
  if (numPlacements != meshOp.getRank()) {
    emitConstraintError(op, "LAYOUT2")
        << "expected " << meshOp.getRank() << " placements for mesh "
        << layout.getMesh() << ", got " << numPlacements;
    return {};
  }
  for (PlacementAttr placement : layout.getPlacements()) {
    if (placement.isShard() && placement.getDim() >= type.getRank()) {
      emitConstraintError(op, "LAYOUT3")
          << "placement S(" << placement.getDim()
          << ") is out of range for a rank-" << type.getRank() << " tensor";
      return {};
    }
    if (placement.isShard() && type.isDynamicDim(placement.getDim())) {
      emitConstraintError(op, "LAYOUT5")
          << "placement S(" << placement.getDim() << ") shards a dynamic "
          << "dimension of " << type
          << "; only static dimensions can be sharded";
      return {};
    }
    if (placement.isPartial() &&
        !partialAllowsElementType(placement.getReduce(),
                                  type.getElementType())) {
      emitConstraintError(op, "LAYOUT6")
          << "placement P(" << stringifyReduceKind(placement.getReduce())
          << ") is not defined on "
          << type.getElementType() << " elements";
      return {};
    }
  }
  return meshOp;
}

SmallVector<SmallVector<int64_t>>
mlir::dtensor::shardingAxesPerDim(LayoutAttr layout, int64_t rank) {
  SmallVector<SmallVector<int64_t>> axes(rank);
  for (auto [axis, placement] : llvm::enumerate(layout.getPlacements()))
    if (placement.isShard() && placement.getDim() < rank)
      axes[placement.getDim()].push_back(axis);
  return axes;
}

//===----------------------------------------------------------------------===//
// CoordOp
//===----------------------------------------------------------------------===//

LogicalResult CoordOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return success(verifyMeshAxes(*this, getMeshAttr(), getAxes(), symbolTable));
}

//===----------------------------------------------------------------------===//
// Layout ops
//===----------------------------------------------------------------------===//

LogicalResult AnnotateOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitConstraintError(*this, "ANN1")
           << "result type " << getResult().getType()
           << " differs from operand type " << getInput().getType();
  return success();
}

LogicalResult
AnnotateOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return success(
      verifyLayoutFor(*this, getLayout(), getInput().getType(), symbolTable));
}

LogicalResult mlir::dtensor::checkRedistribution(
    LayoutAttr from, LayoutAttr to, Type elementType,
    function_ref<InFlightDiagnostic(StringRef id)> emitError) {
  if (from.getMesh() != to.getMesh())
    return emitError("RD2") << "cannot redistribute from mesh "
                            << from.getMesh() << " to mesh " << to.getMesh();
  for (auto [axis, pair] :
       llvm::enumerate(llvm::zip(from.getPlacements(), to.getPlacements()))) {
    auto [src, dst] = pair;
    if (!dst.isPartial())
      continue;
    if (src.isShard())
      return emitError("RD3") << "mesh dimension " << axis << ": S("
                              << src.getDim()
                              << ") cannot become a Partial placement";
    if (src.isReplicate() && dst.getReduce() == ReduceKind::Product)
      return emitError("RD4")
             << "mesh dimension " << axis << ": R cannot become P(product)";
    // P(sum) and P(avg) differ by the group size: a local rescale, exact
    // on integers only from sum to avg.
    auto isSumOrAvg = [](PlacementAttr p) {
      return p.getReduce() == ReduceKind::Sum ||
             p.getReduce() == ReduceKind::Avg;
    };
    bool rescale = src.isPartial() && isSumOrAvg(src) && isSumOrAvg(dst) &&
                   (dst.getReduce() == ReduceKind::Avg ||
                    isa<FloatType>(elementType));
    if (src.isPartial() && src.getReduce() != dst.getReduce() && !rescale)
      return emitError("RD5")
             << "mesh dimension " << axis << ": P("
             << stringifyReduceKind(src.getReduce()) << ") cannot become P("
             << stringifyReduceKind(dst.getReduce()) << ")";
  }
  return success();
}

LogicalResult RedistributeOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitConstraintError(*this, "RD1")
           << "result type " << getResult().getType()
           << " differs from operand type " << getInput().getType();
  std::optional<LayoutAttr> from = getFrom();
  if (!from)
    return success();
  return checkRedistribution(
      *from, getTo(), getInput().getType().getElementType(),
      [&](StringRef id) { return emitConstraintError(*this, id); });
}

LogicalResult
RedistributeOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  RankedTensorType type = getInput().getType();
  if (std::optional<LayoutAttr> from = getFrom())
    if (!verifyLayoutFor(*this, *from, type, symbolTable))
      return failure();
  return success(verifyLayoutFor(*this, getTo(), type, symbolTable));
}

/// LOCAL1: shape-independent agreement of a local and a global type.
static LogicalResult verifyLocalGlobalTypes(Operation *op,
                                            RankedTensorType local,
                                            RankedTensorType global) {
  if (local.getElementType() != global.getElementType() ||
      local.getRank() != global.getRank())
    return emitConstraintError(op, "LOCAL1")
           << "local type " << local << " and global type " << global
           << " differ in element type or rank";
  if (!global.hasStaticShape())
    return emitConstraintError(op, "LOCAL1")
           << "global type " << global << " must be static";
  return success();
}

/// LOCAL2 (plus the layout checks): each local dim agrees with the chunks
/// that `layout` gives every process.
static LogicalResult verifyLocalShape(Operation *op, LayoutAttr layout,
                                      RankedTensorType local,
                                      RankedTensorType global,
                                      SymbolTableCollection &symbolTable) {
  MeshOp mesh = verifyLayoutFor(op, layout, global, symbolTable);
  if (!mesh)
    return failure();
  SmallVector<SmallVector<int64_t>> axesPerDim =
      shardingAxesPerDim(layout, global.getRank());
  for (int64_t dim = 0; dim < global.getRank(); ++dim) {
    SmallVector<int64_t> splits;
    for (int64_t axis : axesPerDim[dim])
      splits.push_back(mesh.getShape()[axis]);
    std::optional<int64_t> uniform =
        uniformChunkSize(global.getDimSize(dim), splits);
    int64_t localSize = local.getDimSize(dim);
    if (!uniform) {
      if (!ShapedType::isDynamic(localSize))
        return emitConstraintError(op, "LOCAL2")
               << "dimension " << dim << " of " << global.getDimSize(dim)
               << " elements is sharded unevenly, so its local size must "
                  "be dynamic ('?'), got "
               << localSize;
      continue;
    }
    if (!ShapedType::isDynamic(localSize) && localSize != *uniform)
      return emitConstraintError(op, "LOCAL2")
             << "dimension " << dim << " has local size " << localSize
             << " but every process holds " << *uniform;
  }
  return success();
}

LogicalResult FromLocalOp::verify() {
  return verifyLocalGlobalTypes(*this, getInput().getType(),
                                getResult().getType());
}

LogicalResult
FromLocalOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyLocalShape(*this, getLayout(), getInput().getType(),
                          getResult().getType(), symbolTable);
}

LogicalResult ToLocalOp::verify() {
  return verifyLocalGlobalTypes(*this, getResult().getType(),
                                getInput().getType());
}

LogicalResult ToLocalOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyLocalShape(*this, getLayout(), getResult().getType(),
                          getInput().getType(), symbolTable);
}

//===----------------------------------------------------------------------===//
// Global-view compute
//===----------------------------------------------------------------------===//

Value RoutedMatmulOp::buildExpertIndex(OpBuilder &b, Location loc, Value id,
                                       int64_t numExperts) {
  Type i64 = b.getI64Type();
  unsigned width = id.getType().getIntOrFloatBitWidth();
  if (width < 64)
    id = arith::ExtSIOp::create(b, loc, i64, id);
  else if (width > 64)
    id = arith::TruncIOp::create(b, loc, i64, id);
  Value e = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(numExperts));
  Value zero = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
  Value rem = arith::RemSIOp::create(b, loc, id, e);
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rem, zero);
  return arith::SelectOp::create(b, loc, negative,
                                 arith::AddIOp::create(b, loc, rem, e), rem);
}

LogicalResult RoutedMatmulOp::verify() {
  auto x = cast<RankedTensorType>(getX().getType());
  auto ids = cast<RankedTensorType>(getIds().getType());
  auto w = cast<RankedTensorType>(getW().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (x.getRank() != 2 || ids.getRank() != 2 || w.getRank() != 3 ||
      result.getRank() != 3 || !ids.getElementType().isSignlessInteger())
    return emitConstraintError(*this, "RM1")
           << "expected x: T x H, ids: T x K of signless integers, w: E x H x "
              "F and result T x K x F, got "
           << x << ", " << ids << ", " << w << " -> " << result;
  if (x.getElementType() != w.getElementType() ||
      x.getElementType() != result.getElementType())
    return emitConstraintError(*this, "RM2")
           << "x, w and the result must have one element type, got "
           << x.getElementType() << ", " << w.getElementType() << " and "
           << result.getElementType();
  struct Pair {
    const char *what;
    int64_t a, b;
  };
  Pair pairs[] = {{"T (x dim 0, ids dim 0)", x.getDimSize(0), ids.getDimSize(0)},
                  {"T (x dim 0, result dim 0)", x.getDimSize(0),
                   result.getDimSize(0)},
                  {"H (x dim 1, w dim 1)", x.getDimSize(1), w.getDimSize(1)},
                  {"K (ids dim 1, result dim 1)", ids.getDimSize(1),
                   result.getDimSize(1)},
                  {"F (w dim 2, result dim 2)", w.getDimSize(2),
                   result.getDimSize(2)}};
  for (const Pair &pair : pairs)
    if (!ShapedType::isDynamic(pair.a) && !ShapedType::isDynamic(pair.b) &&
        pair.a != pair.b)
      return emitConstraintError(*this, "RM3")
             << "sizes of " << pair.what << " differ: " << pair.a << " vs "
             << pair.b;
  if (w.isDynamicDim(0) || w.getDimSize(0) < 1)
    return emitConstraintError(*this, "RM4")
           << "the number of experts (w dim 0) must be static and positive, "
              "got "
           << w;
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Shared verifySymbolUses of every collective: COLL1, COLL2, then the op's
/// own group-size-dependent checks.
static LogicalResult
verifyCollectiveSymbolUses(CollectiveOpInterface op,
                           SymbolTableCollection &symbolTable) {
  MeshOp mesh = verifyMeshAxes(op, op.getMeshAttr(), op.getMeshAxes(),
                               symbolTable);
  if (!mesh)
    return failure();
  return op.verifyWithGroupSize(mesh.getGroupSize(op.getMeshAxes()));
}

#define DTENSOR_COLLECTIVE_SYMBOL_USES(OpClass)                                \
  LogicalResult OpClass::verifySymbolUses(SymbolTableCollection &table) {     \
    return verifyCollectiveSymbolUses(*this, table);                           \
  }
DTENSOR_COLLECTIVE_SYMBOL_USES(AllReduceOp)
DTENSOR_COLLECTIVE_SYMBOL_USES(AllGatherOp)
DTENSOR_COLLECTIVE_SYMBOL_USES(ReduceScatterOp)
DTENSOR_COLLECTIVE_SYMBOL_USES(AllToAllOp)
DTENSOR_COLLECTIVE_SYMBOL_USES(AllToAllVOp)
DTENSOR_COLLECTIVE_SYMBOL_USES(PermuteOp)
DTENSOR_COLLECTIVE_SYMBOL_USES(BroadcastOp)
DTENSOR_COLLECTIVE_SYMBOL_USES(AllReduceCoalescedOp)
DTENSOR_COLLECTIVE_SYMBOL_USES(AllGatherCoalescedOp)
DTENSOR_COLLECTIVE_SYMBOL_USES(ReduceScatterCoalescedOp)
DTENSOR_COLLECTIVE_SYMBOL_USES(AllGatherMatmulOp)
DTENSOR_COLLECTIVE_SYMBOL_USES(MatmulReduceScatterOp)
#undef DTENSOR_COLLECTIVE_SYMBOL_USES

static bool sizesMatch(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Checks that `result` has `input`'s element type, rank, and sizes on every
/// dimension not in `exempt`. Emits constraint `id` on mismatch.
static LogicalResult verifySameShapeExcept(Operation *op, StringRef id,
                                           RankedTensorType input,
                                           RankedTensorType result,
                                           ArrayRef<int64_t> exempt) {
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return emitConstraintError(op, id)
           << "operand " << input << " and result " << result
           << " differ in element type or rank";
  for (int64_t dim = 0; dim < input.getRank(); ++dim)
    if (!llvm::is_contained(exempt, dim) &&
        !sizesMatch(input.getDimSize(dim), result.getDimSize(dim)))
      return emitConstraintError(op, id)
             << "operand " << input << " and result " << result
             << " differ in dimension " << dim;
  return success();
}

static LogicalResult verifyDimInRange(Operation *op, StringRef id,
                                      StringRef name, int64_t dim,
                                      RankedTensorType type) {
  if (dim < 0 || dim >= type.getRank())
    return emitConstraintError(op, id)
           << name << " " << dim << " is out of range for " << type;
  return success();
}

/// `result[dim] == input[dim] * factor` (or the reverse for `divide`), where
/// both are static.
static LogicalResult verifyScaledDim(Operation *op, StringRef id,
                                     RankedTensorType input,
                                     RankedTensorType result, int64_t dim,
                                     int64_t groupSize, bool divide) {
  int64_t in = input.getDimSize(dim), out = result.getDimSize(dim);
  if (ShapedType::isDynamic(in) || ShapedType::isDynamic(out))
    return success();
  // The product is checked: a wrapped one could equal the other size.
  std::optional<int64_t> scaled = checkedMul(divide ? out : in, groupSize);
  if (!scaled)
    return emitConstraintError(op, id)
           << "size " << (divide ? out : in) << " along dimension " << dim
           << " times the group size " << groupSize
           << " overflows a 64-bit integer";
  if (!divide && out != *scaled)
    return emitConstraintError(op, id)
           << "expected result size " << *scaled << " along dimension "
           << dim << " (" << in << " x group size " << groupSize << "), got "
           << out;
  if (divide && in != *scaled)
    return emitConstraintError(op, id)
           << "operand size " << in << " along dimension " << dim
           << " must be the group size " << groupSize << " times the result "
           << "size " << out;
  return success();
}

static LogicalResult verifyGather(Operation *op, RankedTensorType input,
                                  RankedTensorType result, int64_t dim,
                                  int64_t groupSize) {
  if (failed(verifyDimInRange(op, "AG1", "gather_dim", dim, input)) ||
      failed(verifySameShapeExcept(op, "AG2", input, result, {dim})))
    return failure();
  return verifyScaledDim(op, "AG3", input, result, dim, groupSize,
                         /*divide=*/false);
}

static LogicalResult verifyScatter(Operation *op, RankedTensorType input,
                                   RankedTensorType result, int64_t dim,
                                   int64_t groupSize) {
  if (failed(verifyDimInRange(op, "RS1", "scatter_dim", dim, input)) ||
      failed(verifySameShapeExcept(op, "RS2", input, result, {dim})))
    return failure();
  return verifyScaledDim(op, "RS3", input, result, dim, groupSize,
                         /*divide=*/true);
}

static LogicalResult verifySameType(Operation *op, StringRef id, Type input,
                                    Type result) {
  if (input != result)
    return emitConstraintError(op, id)
           << "result type " << result << " differs from operand type "
           << input;
  return success();
}

/// COAL1: one result (and one dim entry, if any) per operand.
static LogicalResult verifyCoalescedArity(Operation *op, size_t numInputs,
                                          size_t numResults,
                                          std::optional<size_t> numDims) {
  if (numInputs == 0)
    return emitConstraintError(op, "COAL1") << "needs at least one operand";
  if (numResults != numInputs)
    return emitConstraintError(op, "COAL1")
           << "expected " << numInputs << " results, got " << numResults;
  if (numDims && *numDims != numInputs)
    return emitConstraintError(op, "COAL1")
           << "expected " << numInputs << " dimension entries, got "
           << *numDims;
  return success();
}

LogicalResult AllReduceOp::verifyWithGroupSize(int64_t) {
  return verifySameType(*this, "AR1", getInput().getType(),
                        getResult().getType());
}

LogicalResult AllGatherOp::verifyWithGroupSize(int64_t groupSize) {
  return verifyGather(*this, getInput().getType(), getResult().getType(),
                      getGatherDim(), groupSize);
}

LogicalResult ReduceScatterOp::verifyWithGroupSize(int64_t groupSize) {
  return verifyScatter(*this, getInput().getType(), getResult().getType(),
                       getScatterDim(), groupSize);
}

LogicalResult AllToAllOp::verifyWithGroupSize(int64_t groupSize) {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getResult().getType();
  int64_t split = getSplitDim(), concat = getConcatDim();
  if (failed(verifyDimInRange(*this, "A2A1", "split_dim", split, input)) ||
      failed(verifyDimInRange(*this, "A2A1", "concat_dim", concat, input)) ||
      failed(verifySameShapeExcept(*this, "A2A2", input, result,
                                   {split, concat})))
    return failure();
  if (split == concat) {
    if (sizesMatch(input.getDimSize(split), result.getDimSize(split)))
      return success();
    return emitConstraintError(*this, "A2A3")
           << "with split_dim == concat_dim the size along dimension "
           << split << " must not change";
  }
  if (failed(verifyScaledDim(*this, "A2A3", input, result, split, groupSize,
                             /*divide=*/true)))
    return failure();
  return verifyScaledDim(*this, "A2A3", input, result, concat, groupSize,
                         /*divide=*/false);
}

LogicalResult AllToAllVOp::verifyWithGroupSize(int64_t groupSize) {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getResult().getType();
  if (input.getRank() < 1)
    return emitConstraintError(*this, "A2AV1")
           << "operand " << input << " has rank 0";
  if (failed(verifySameShapeExcept(*this, "A2AV1", input, result, {0})))
    return failure();
  if (!result.isDynamicDim(0))
    return emitConstraintError(*this, "A2AV2")
           << "result size along dimension 0 must be dynamic (it is the sum "
              "of recv_sizes), got "
           << result;
  for (auto [name, value] : {std::make_pair("send_sizes", getSendSizes()),
                             std::make_pair("recv_sizes", getRecvSizes())}) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() != 1 || !type.getElementType().isSignlessInteger(64) ||
        type.getDimSize(0) != groupSize)
      return emitConstraintError(*this, "A2AV3")
             << name << " must be tensor<" << groupSize
             << "xi64> (one size per group member), got " << type;
  }
  return success();
}

LogicalResult PermuteOp::verifyWithGroupSize(int64_t groupSize) {
  if (failed(verifySameType(*this, "PERM1", getInput().getType(),
                            getResult().getType())))
    return failure();
  ArrayRef<int64_t> perm = getPerm();
  if (static_cast<int64_t>(perm.size()) != groupSize)
    return emitConstraintError(*this, "PERM2")
           << "perm has " << perm.size() << " entries for a group of "
           << groupSize;
  SmallVector<bool> seen(groupSize, false);
  for (int64_t target : perm) {
    if (target < 0 || target >= groupSize || seen[target])
      return emitConstraintError(*this, "PERM2")
             << "perm is not a permutation of 0.." << groupSize - 1;
    seen[target] = true;
  }
  return success();
}

LogicalResult BroadcastOp::verifyWithGroupSize(int64_t groupSize) {
  if (failed(verifySameType(*this, "BC1", getInput().getType(),
                            getResult().getType())))
    return failure();
  int64_t root = static_cast<int64_t>(getRoot());
  if (root < 0 || root >= groupSize)
    return emitConstraintError(*this, "BC2")
           << "root " << root << " is not in the group of " << groupSize;
  return success();
}

LogicalResult AllReduceCoalescedOp::verifyWithGroupSize(int64_t) {
  if (failed(verifyCoalescedArity(*this, getInputs().size(),
                                  getResults().size(), std::nullopt)))
    return failure();
  for (auto [input, result] : llvm::zip(getInputs(), getResults()))
    if (failed(verifySameType(*this, "AR1", input.getType(),
                              result.getType())))
      return failure();
  return success();
}

LogicalResult AllGatherCoalescedOp::verifyWithGroupSize(int64_t groupSize) {
  if (failed(verifyCoalescedArity(*this, getInputs().size(),
                                  getResults().size(),
                                  getGatherDims().size())))
    return failure();
  for (auto [input, result, dim] :
       llvm::zip(getInputs(), getResults(), getGatherDims()))
    if (failed(verifyGather(*this, cast<RankedTensorType>(input.getType()),
                            cast<RankedTensorType>(result.getType()), dim,
                            groupSize)))
      return failure();
  return success();
}

LogicalResult
ReduceScatterCoalescedOp::verifyWithGroupSize(int64_t groupSize) {
  if (failed(verifyCoalescedArity(*this, getInputs().size(),
                                  getResults().size(),
                                  getScatterDims().size())))
    return failure();
  for (auto [input, result, dim] :
       llvm::zip(getInputs(), getResults(), getScatterDims()))
    if (failed(verifyScatter(*this, cast<RankedTensorType>(input.getType()),
                             cast<RankedTensorType>(result.getType()), dim,
                             groupSize)))
      return failure();
  return success();
}

/// The shape of A @ B: A's shape with its last size replaced by B's last.
static SmallVector<int64_t> matmulShape(RankedTensorType a,
                                        RankedTensorType b) {
  SmallVector<int64_t> shape(a.getShape());
  shape.back() = b.getDimSize(1);
  return shape;
}

/// AGMM1 / MMRS1: operand ranks, contraction sizes and element types.
static LogicalResult verifyMatmulOperands(Operation *op, StringRef id,
                                          RankedTensorType a,
                                          ValueRange bs) {
  if (a.getRank() != 2 && a.getRank() != 3)
    return emitConstraintError(op, id)
           << "A must have rank 2 or 3, got " << a;
  if (bs.empty())
    return emitConstraintError(op, id) << "needs at least one B operand";
  for (Value bValue : bs) {
    auto b = cast<RankedTensorType>(bValue.getType());
    if (b.getRank() != 2 || b.getElementType() != a.getElementType())
      return emitConstraintError(op, id)
             << "B must be a rank-2 tensor of " << a.getElementType()
             << ", got " << b;
    if (!sizesMatch(a.getShape().back(), b.getDimSize(0)))
      return emitConstraintError(op, id)
             << "A " << a << " and B " << b
             << " disagree on the contracted size";
  }
  return success();
}

static LogicalResult verifyShapeIs(Operation *op, StringRef id, StringRef what,
                                   RankedTensorType type,
                                   ArrayRef<int64_t> expected,
                                   Type elementType) {
  bool ok = type.getElementType() == elementType &&
            type.getRank() == static_cast<int64_t>(expected.size());
  for (int64_t i = 0; ok && i < type.getRank(); ++i)
    ok = sizesMatch(type.getDimSize(i), expected[i]);
  if (!ok) {
    auto expectedType = RankedTensorType::get(expected, elementType);
    return emitConstraintError(op, id)
           << what << " must be " << expectedType << ", got " << type;
  }
  return success();
}

static int64_t scaleSize(int64_t size, int64_t factor, bool divide) {
  if (ShapedType::isDynamic(size))
    return size;
  return divide ? size / factor : size * factor;
}

LogicalResult AllGatherMatmulOp::verifyWithGroupSize(int64_t groupSize) {
  RankedTensorType a = getA().getType();
  if (failed(verifyMatmulOperands(*this, "AGMM1", a, getBs())))
    return failure();
  int64_t dim = getGatherDim();
  if (dim < 0 || dim >= a.getRank() - 1)
    return emitConstraintError(*this, "AGMM2")
           << "gather_dim " << dim << " must be a non-contracted dimension "
           << "of A (0.." << a.getRank() - 2 << ")";
  SmallVector<int64_t> gathered(a.getShape());
  gathered[dim] = scaleSize(gathered[dim], groupSize, /*divide=*/false);
  if (failed(verifyShapeIs(*this, "AGMM3", "gathered A", getGathered().getType(),
                           gathered, a.getElementType())))
    return failure();
  if (getResults().size() != getBs().size())
    return emitConstraintError(*this, "AGMM4")
           << "expected " << getBs().size() << " matmul results, got "
           << getResults().size();
  auto gatheredType = RankedTensorType::get(gathered, a.getElementType());
  for (auto [b, c] : llvm::zip(getBs(), getResults()))
    if (failed(verifyShapeIs(
            *this, "AGMM4", "matmul result", cast<RankedTensorType>(c.getType()),
            matmulShape(gatheredType, cast<RankedTensorType>(b.getType())),
            a.getElementType())))
      return failure();
  return success();
}

LogicalResult MatmulReduceScatterOp::verifyWithGroupSize(int64_t groupSize) {
  RankedTensorType a = getA().getType();
  if (failed(verifyMatmulOperands(*this, "MMRS1", a, getB())))
    return failure();
  SmallVector<int64_t> shape = matmulShape(a, getB().getType());
  int64_t dim = getScatterDim();
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
    return emitConstraintError(*this, "MMRS2")
           << "scatter_dim " << dim << " is out of range for the rank-"
           << shape.size() << " product";
  if (!ShapedType::isDynamic(shape[dim]) && shape[dim] % groupSize != 0)
    return emitConstraintError(*this, "MMRS3")
           << "product size " << shape[dim] << " along dimension " << dim
           << " is not divisible by the group size " << groupSize;
  shape[dim] = scaleSize(shape[dim], groupSize, /*divide=*/true);
  if (failed(verifyShapeIs(*this, "MMRS3", "result", getResult().getType(),
                           shape, a.getElementType())))
    return failure();
  if (getReduce() != ReduceKind::Sum && getReduce() != ReduceKind::Avg)
    return emitConstraintError(*this, "MMRS4")
           << "reduce must be sum or avg, got "
           << stringifyReduceKind(getReduce());
  return success();
}

//===----------------------------------------------------------------------===//
// Async
//===----------------------------------------------------------------------===//

Operation *AsyncStartOp::getCollective() {
  Block &body = getBody().front();
  if (body.getOperations().size() != 2)
    return nullptr;
  Operation *op = &body.front();
  return isa<CollectiveOpInterface>(op) ? op : nullptr;
}

/// The values that `use` of a future hands it on to: none for a
/// dtensor.wait; the loop's region argument and result for an scf.for init
/// or a yield of its body; the scf.if result for a yield of a branch; the
/// before-region argument for an scf.while init or a yield of its after
/// region; the after-region argument and the result for scf.condition.
/// Failure for any other use.
static LogicalResult getForwardedFutures(OpOperand &use,
                                         SmallVectorImpl<Value> &next) {
  Operation *user = use.getOwner();
  unsigned n = use.getOperandNumber();
  if (isa<WaitOp>(user))
    return success();
  auto forwardFor = [&](scf::ForOp loop, unsigned k) {
    next.push_back(loop.getRegionIterArgs()[k]);
    next.push_back(loop.getResult(k));
    return success();
  };
  if (auto loop = dyn_cast<scf::ForOp>(user)) {
    if (n < loop.getNumControlOperands())
      return failure();
    return forwardFor(loop, n - loop.getNumControlOperands());
  }
  if (auto loop = dyn_cast<scf::WhileOp>(user)) {
    next.push_back(loop.getBeforeArguments()[n]);
    return success();
  }
  if (auto condition = dyn_cast<scf::ConditionOp>(user)) {
    auto loop = dyn_cast<scf::WhileOp>(condition->getParentOp());
    if (!loop || n == 0)
      return failure();
    next.push_back(loop.getAfterArguments()[n - 1]);
    next.push_back(loop.getResult(n - 1));
    return success();
  }
  if (isa<scf::YieldOp>(user)) {
    Operation *parent = user->getParentOp();
    if (auto loop = dyn_cast<scf::ForOp>(parent))
      return forwardFor(loop, n);
    if (auto branch = dyn_cast<scf::IfOp>(parent)) {
      next.push_back(branch.getResult(n));
      return success();
    }
    if (auto loop = dyn_cast<scf::WhileOp>(parent)) {
      next.push_back(loop.getBeforeArguments()[n]);
      return success();
    }
  }
  return failure();
}

/// Whether every future that can reach `future` through structured control
/// flow (the inverse of getForwardedFutures) is a dtensor.async_start result.
static bool comesFromAsyncStart(Value future) {
  SmallVector<Value> work = {future};
  llvm::SmallPtrSet<Value, 8> seen;
  auto yielded = [](Region &region, unsigned k) -> Value {
    auto yield = dyn_cast<scf::YieldOp>(region.front().getTerminator());
    return yield && k < yield.getNumOperands() ? yield.getOperand(k) : Value();
  };
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (!value || !isa<FutureType>(value.getType()))
      return false;
    if (!seen.insert(value).second || value.getDefiningOp<AsyncStartOp>())
      continue;
    Operation *parent = isa<BlockArgument>(value)
                            ? value.getParentRegion()->getParentOp()
                            : value.getDefiningOp();
    unsigned k = isa<BlockArgument>(value)
                     ? cast<BlockArgument>(value).getArgNumber()
                     : cast<OpResult>(value).getResultNumber();
    if (auto loop = dyn_cast<scf::ForOp>(parent)) {
      if (isa<BlockArgument>(value)) {
        if (k == 0)
          return false; // the induction variable
        --k;
      }
      work.push_back(loop.getInitArgs()[k]);
      work.push_back(yielded(loop.getRegion(), k));
    } else if (auto branch = dyn_cast<scf::IfOp>(parent)) {
      if (isa<BlockArgument>(value) || branch.getElseRegion().empty())
        return false;
      work.push_back(yielded(branch.getThenRegion(), k));
      work.push_back(yielded(branch.getElseRegion(), k));
    } else if (auto loop = dyn_cast<scf::WhileOp>(parent)) {
      bool before = isa<BlockArgument>(value) &&
                    value.getParentRegion() == &loop.getBefore();
      if (before) {
        work.push_back(loop.getInits()[k]);
        work.push_back(yielded(loop.getAfter(), k));
      } else {
        scf::ConditionOp condition = loop.getConditionOp();
        work.push_back(k + 1 < condition.getNumOperands()
                           ? condition.getOperand(k + 1)
                           : Value());
      }
    } else {
      return false;
    }
  }
  return true;
}

/// ASYNC4: a linear discipline that makes every future waited exactly once
/// on every path. Each future, and each value structured control flow hands
/// it on to (getForwardedFutures), has exactly one use, in its own block,
/// that waits for it or hands it on.
static LogicalResult verifyFutureUses(AsyncStartOp start, unsigned index) {
  SmallVector<Value> work = {start.getFutures()[index]};
  llvm::SmallPtrSet<Value, 8> seen;
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    auto fail = [&](const Twine &why) {
      InFlightDiagnostic diag = emitConstraintError(start, "ASYNC4")
                                << "future #" << index
                                << " must be waited exactly once on every "
                                   "path: "
                                << why;
      if (value != start.getFutures()[index])
        diag.attachNote(value.getLoc()) << "where it is handed on to";
      return diag;
    };
    if (value.use_empty())
      return fail("it is never waited");
    if (!value.hasOneUse())
      return fail("it has more than one use");
    OpOperand &use = *value.getUses().begin();
    if (use.getOwner()->getBlock() != value.getParentBlock())
      return fail("it is used in a nested region (hand it into a loop as an "
                  "init operand)");
    if (failed(getForwardedFutures(use, work)))
      return fail(Twine("'") + use.getOwner()->getName().getStringRef() +
                  "' neither waits for it nor hands it on (scf.for, "
                  "scf.while, scf.if yields)");
  }
  return success();
}

LogicalResult AsyncStartOp::verifyRegions() {
  Operation *collective = getCollective();
  if (!collective)
    return emitConstraintError(*this, "ASYNC1")
           << "body must hold exactly one collective followed by "
              "dtensor.yield";
  auto yield = dyn_cast<YieldOp>(getBody().front().getTerminator());
  if (!yield)
    return emitConstraintError(*this, "ASYNC1")
           << "body must end with dtensor.yield";
  if (!llvm::equal(yield.getValues(), collective->getResults()))
    return emitConstraintError(*this, "ASYNC2")
           << "dtensor.yield must return the results of '"
           << collective->getName() << "' in order";
  if (getFutures().size() != yield.getValues().size())
    return emitConstraintError(*this, "ASYNC3")
           << "expected " << yield.getValues().size() << " futures, got "
           << getFutures().size();
  for (auto [future, value] : llvm::zip(getFutures(), yield.getValues()))
    if (cast<FutureType>(future.getType()).getValueType() != value.getType())
      return emitConstraintError(*this, "ASYNC3")
             << "future type " << future.getType() << " does not hold "
             << value.getType();
  for (unsigned i = 0, e = getFutures().size(); i < e; ++i)
    if (failed(verifyFutureUses(*this, i)))
      return failure();
  return success();
}

LogicalResult WaitOp::verify() {
  if (!comesFromAsyncStart(getFuture()))
    return emitConstraintError(*this, "WAIT1")
           << "the future must be a result of dtensor.async_start, directly "
              "or through scf.for, scf.while or scf.if";
  Type valueType = getFuture().getType().getValueType();
  if (getResult().getType() != valueType)
    return emitConstraintError(*this, "WAIT2")
           << "result type " << getResult().getType()
           << " differs from the future's value type " << valueType;
  return success();
}
