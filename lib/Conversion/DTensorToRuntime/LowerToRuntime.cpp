//===- LowerToRuntime.cpp - per-rank collectives to runtime calls ---------===//
//
// After this pass a per-rank program holds only upstream ops plus calls of
// the runtime ABI (include/dtensor/Runtime/Runtime.h), ready for One-Shot
// Bufferize and the LLVM conversions. The bridge between tensors and the
// buffers the runtime reads and writes is bufferization.to_buffer (inputs,
// with a fully dynamic layout so that any buffer fits) and
// bufferization.to_tensor (fresh output buffers, restrict + writable).
//
//===----------------------------------------------------------------------===//

#include "dtensor/Conversion/DTensorToRuntime/Buffers.h"
#include "dtensor/Overlap/FusedOps.h"
#include "dtensor/Conversion/DTensorToRuntime/Passes.h"
#include "dtensor/Conversion/DTensorToRuntime/RuntimeCalls.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_LOWERTORUNTIMEPASS
#include "dtensor/Conversion/DTensorToRuntime/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// The tensors a collective communicates, one runtime call each: every
/// operand of a coalesced collective, the first operand of the others.
static SmallVector<Value> getCommunicatedInputs(Operation *op) {
  if (isa<AllReduceCoalescedOp, AllGatherCoalescedOp, ReduceScatterCoalescedOp>(
          op))
    return SmallVector<Value>(op->getOperands());
  return {op->getOperand(0)};
}

/// The type of a fresh output buffer for a tensor of `type`.
static MemRefType getBufferType(RankedTensorType type) {
  return MemRefType::get(type.getShape(), type.getElementType());
}

class RuntimeLowering {
public:
  explicit RuntimeLowering(ModuleOp module)
      : module(module), builder(module.getContext()) {}

  LogicalResult run();

private:
  Location loc() { return currentLoc; }
  Value i64(int64_t v) {
    return arith::ConstantOp::create(builder, loc(),
                                     builder.getI64IntegerAttr(v));
  }
  func::FuncOp declare(StringRef name, TypeRange inputs, TypeRange results);
  Value unranked(Value memref);
  /// `tensor` as a buffer the runtime may read.
  Value inputBuffer(Value tensor);
  /// A fresh buffer of `type`, dynamic sizes from `sizes` (one per dim).
  Value outputBuffer(RankedTensorType type, ArrayRef<OpFoldResult> sizes);
  Value asTensor(Value buffer, RankedTensorType type);
  FailureOr<int64_t> meshId(FlatSymbolRefAttr mesh, Operation *op);
  /// The execution context (dtensor_rt_context()) of the function that
  /// holds `op`, asked for once at the function's entry.
  Value context(Operation *op);
  int64_t axesMask(ArrayRef<int64_t> axes);

  LogicalResult expandOps(func::FuncOp func);
  /// Emits the runtime call for a single-tensor collective; returns the
  /// output buffer and, if `async`, sets `handle`.
  FailureOr<Value> emitCall(Operation *op, Value input, RankedTensorType type,
                            int64_t index, bool async, Value *handle);
  LogicalResult lowerSync(Operation *op);
  LogicalResult lowerAsync(AsyncStartOp op);
  void lowerWait(WaitOp op);
  /// Futures carried by scf.for/scf.while/scf.if become (handle, output
  /// buffer) pairs.
  LogicalResult lowerCarriedFutures(func::FuncOp func);

  ModuleOp module;
  OpBuilder builder;
  Location currentLoc = UnknownLoc::get(module.getContext());
  DenseMap<StringAttr, int64_t> meshIds;
  DenseMap<Operation *, Value> contexts;
};

Value RuntimeLowering::context(Operation *op) {
  auto func = op->getParentOfType<func::FuncOp>();
  Value &ctx = contexts[func];
  if (ctx)
    return ctx;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&func.getBody().front());
  Type ptr = LLVM::LLVMPointerType::get(builder.getContext());
  func::FuncOp callee = declare(getRuntimeFunctionSymbol(RuntimeFunction::Context), {}, {ptr});
  ctx = func::CallOp::create(builder, func.getLoc(), callee, ValueRange{})
            .getResult(0);
  return ctx;
}

func::FuncOp RuntimeLowering::declare(StringRef name, TypeRange inputs,
                                      TypeRange results) {
  if (auto func = module.lookupSymbol<func::FuncOp>(name))
    return func;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(
      builder, module.getLoc(), name,
      builder.getFunctionType(inputs, results));
  func.setPrivate();
  return func;
}

Value RuntimeLowering::unranked(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  return memref::CastOp::create(
      builder, loc(), UnrankedMemRefType::get(type.getElementType(), 0),
      memref);
}

Value RuntimeLowering::inputBuffer(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(builder.getContext(),
                                       ShapedType::kDynamic, strides);
  auto memrefType =
      MemRefType::get(type.getShape(), type.getElementType(), layout);
  return bufferization::ToBufferOp::create(builder, loc(), memrefType, tensor,
                                           /*read_only=*/true);
}

Value RuntimeLowering::outputBuffer(RankedTensorType type,
                                    ArrayRef<OpFoldResult> sizes) {
  SmallVector<Value> dynamic;
  for (auto [dim, size] : llvm::enumerate(type.getShape()))
    if (ShapedType::isDynamic(size))
      dynamic.push_back(
          getValueOrCreateConstantIndexOp(builder, loc(), sizes[dim]));
  return memref::AllocOp::create(builder, loc(), getBufferType(type), dynamic);
}

Value RuntimeLowering::asTensor(Value buffer, RankedTensorType type) {
  return bufferization::ToTensorOp::create(builder, loc(), type, buffer,
                                           builder.getUnitAttr(),
                                           builder.getUnitAttr());
}

FailureOr<int64_t> RuntimeLowering::meshId(FlatSymbolRefAttr mesh,
                                           Operation *op) {
  auto it = meshIds.find(mesh.getAttr());
  if (it == meshIds.end())
    return op->emitError() << mesh << " does not name a dtensor.mesh";
  return it->second;
}

int64_t RuntimeLowering::axesMask(ArrayRef<int64_t> axes) {
  int64_t mask = 0;
  for (int64_t axis : axes)
    mask |= int64_t(1) << axis;
  return mask;
}

LogicalResult RuntimeLowering::expandOps(func::FuncOp func) {
  // Fused comm + compute: ring pipelines of permutes and chunk matmuls
  // (lib/Overlap/DecomposeFused.cpp).
  if (failed(decomposeFusedOps(func)))
    return failure();

  // Embedding lookups: out[b..., j] = table[ids[b..., 0], j].
  SmallVector<tensor::GatherOp> gathers;
  func.walk([&](tensor::GatherOp op) { gathers.push_back(op); });
  for (tensor::GatherOp op : gathers) {
    currentLoc = op.getLoc();
    RankedTensorType table = op.getSourceType();
    RankedTensorType result = op.getResultType();
    if (table.getRank() != 2 || op.getGatherDims() != ArrayRef<int64_t>{0} ||
        result.getRank() != op.getIndicesType().getRank())
      return op.emitError("only rank-reduced 2-D embedding lookups "
                          "(gather_dims([0])) can be lowered");
    builder.setInsertionPoint(op);
    int64_t rank = result.getRank();
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(builder, loc(), op.getIndices());
    sizes.back() = tensor::getMixedSizes(builder, loc(), op.getSource())[1];
    Value init =
        tensor::EmptyOp::create(builder, loc(), sizes, result.getElementType());
    SmallVector<AffineMap> maps = {builder.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    Value ids = op.getIndices(), source = op.getSource();
    auto generic = linalg::GenericOp::create(
        builder, loc(), result, ValueRange{}, init, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange) {
          SmallVector<Value> idIndex;
          for (int64_t d = 0; d < rank - 1; ++d)
            idIndex.push_back(linalg::IndexOp::create(b, l, d));
          idIndex.push_back(arith::ConstantIndexOp::create(b, l, 0));
          Value id = tensor::ExtractOp::create(b, l, ids, idIndex);
          if (!id.getType().isIndex())
            id = arith::IndexCastOp::create(b, l, b.getIndexType(), id);
          Value column = linalg::IndexOp::create(b, l, rank - 1);
          Value v = tensor::ExtractOp::create(b, l, source,
                                              ValueRange{id, column});
          linalg::YieldOp::create(b, l, v);
        });
    op.getResult().replaceAllUsesWith(generic.getResult(0));
    op.erase();
  }

  // Routed matmuls: y[t, k, f] = sum_h x[t, h] * w[ids[t, k] mod E, h, f].
  SmallVector<RoutedMatmulOp> routed;
  func.walk([&](RoutedMatmulOp op) { routed.push_back(op); });
  for (RoutedMatmulOp op : routed) {
    currentLoc = op.getLoc();
    builder.setInsertionPoint(op);
    auto resultType = cast<RankedTensorType>(op.getResult().getType());
    Type element = resultType.getElementType();
    if (!isa<FloatType>(element) && !element.isSignlessInteger())
      return op.emitError("routed_matmul on ")
             << element << " elements cannot be lowered (floats and signless "
             << "integers can)";
    int64_t numExperts =
        cast<RankedTensorType>(op.getW().getType()).getDimSize(0);
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSizes(builder, loc(), op.getX())[0],
        tensor::getMixedSizes(builder, loc(), op.getIds())[1],
        tensor::getMixedSizes(builder, loc(), op.getW())[2]};
    Value init = tensor::EmptyOp::create(builder, loc(), sizes, element);
    Value zero =
        arith::ConstantOp::create(builder, loc(), builder.getZeroAttr(element));
    init = linalg::FillOp::create(builder, loc(), zero, init).getResult(0);
    MLIRContext *ctx = builder.getContext();
    AffineExpr t, k, f, h;
    bindDims(ctx, t, k, f, h);
    SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {t, h}, ctx),
                                   AffineMap::get(4, 0, {t, k}, ctx),
                                   AffineMap::get(4, 0, {t, k, f}, ctx)};
    auto parallel = utils::IteratorType::parallel;
    SmallVector<utils::IteratorType> iterators = {
        parallel, parallel, parallel, utils::IteratorType::reduction};
    Value w = op.getW();
    auto generic = linalg::GenericOp::create(
        builder, loc(), TypeRange{resultType},
        ValueRange{op.getX(), op.getIds()}, ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value expert = arith::IndexCastOp::create(
              b, l, b.getIndexType(),
              RoutedMatmulOp::buildExpertIndex(b, l, args[1], numExperts));
          Value weight = tensor::ExtractOp::create(
              b, l, w,
              ValueRange{expert, linalg::IndexOp::create(b, l, 3),
                         linalg::IndexOp::create(b, l, 2)});
          Value product, sum;
          if (isa<FloatType>(element)) {
            product = arith::MulFOp::create(b, l, args[0], weight);
            sum = arith::AddFOp::create(b, l, args[2], product);
          } else {
            product = arith::MulIOp::create(b, l, args[0], weight);
            sum = arith::AddIOp::create(b, l, args[2], product);
          }
          linalg::YieldOp::create(b, l, sum);
        });
    op.getResult().replaceAllUsesWith(generic.getResult(0));
    op.erase();
  }

  // Aggregated ops (softmax) into their parts.
  SmallVector<linalg::AggregatedOpInterface> aggregated;
  func.walk([&](linalg::AggregatedOpInterface op) { aggregated.push_back(op); });
  for (linalg::AggregatedOpInterface op : aggregated) {
    builder.setInsertionPoint(op);
    // Upstream's softmax decomposition builds its reductions on the
    // output type and combines them with the input: invalid IR where one
    // is static and the other dynamic in some dim (canonicalization after
    // dtensor-specialize-rank folds one side only). Run it on the input
    // type and cast the result back.
    if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op.getOperation())) {
      Type inputType = softmax.getInputOperandType();
      Type outputType = softmax.getOutputOperandType();
      if (inputType != outputType && softmax->getNumResults() == 1) {
        Value init = tensor::CastOp::create(builder, softmax.getLoc(),
                                            inputType, softmax.getOutput());
        auto typed = linalg::SoftmaxOp::create(
            builder, softmax.getLoc(), TypeRange{inputType},
            softmax.getInput(), init, softmax.getDimension());
        Value back = tensor::CastOp::create(builder, softmax.getLoc(),
                                            outputType, typed.getResult()[0]);
        softmax->replaceAllUsesWith(ValueRange{back});
        softmax->erase();
        op = cast<linalg::AggregatedOpInterface>(typed.getOperation());
        builder.setInsertionPoint(op);
      }
    }
    FailureOr<SmallVector<Value>> parts = op.decomposeOperation(builder);
    if (failed(parts))
      return op->emitError("cannot decompose this op for lowering");
    op->replaceAllUsesWith(*parts);
    op->erase();
  }

  // Concats into insert_slices. The patterns run on the concats alone: a
  // greedy rewrite of the whole function would also fold and simplify
  // everything else, for nothing.
  SmallVector<Operation *> concats;
  func.walk([&](tensor::ConcatOp op) { concats.push_back(op); });
  if (concats.empty())
    return success();
  RewritePatternSet patterns(func.getContext());
  tensor::populateDecomposeTensorConcatPatterns(patterns);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  bool changed = false;
  if (failed(applyOpPatternsGreedily(concats, std::move(patterns), config,
                                     &changed)))
    return failure();
  return success();
}

FailureOr<Value> RuntimeLowering::emitCall(Operation *op, Value input,
                                           RankedTensorType type,
                                           int64_t index, bool async,
                                           Value *handle) {
  auto inputType = cast<RankedTensorType>(input.getType());
  FailureOr<StringRef> suffix =
      getRuntimeElementSuffix(inputType.getElementType());
  if (failed(suffix))
    return op->emitError("the runtime has no collectives on ")
           << inputType.getElementType()
           << " (supported: "
           << llvm::join(getRuntimeElementSuffixes(), ", ")
           << ")";
  auto collective = cast<CollectiveOpInterface>(op);
  FailureOr<int64_t> mesh = meshId(collective.getMeshAttr(), op);
  if (failed(mesh))
    return failure();

  // Kind-specific trailing arguments and the output's dynamic sizes.
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(builder, loc(), input);
  SmallVector<Value> extra;
  RuntimeCollective kind;
  int64_t groupSize = 1;
  if (MeshOp meshOp =
          lookupMesh(op, collective.getMeshAttr(), /*diagnose=*/false))
    groupSize = meshOp.getGroupSize(collective.getMeshAxes());
  auto scale = [&](int64_t dim, bool divide) {
    Value size = getValueOrCreateConstantIndexOp(builder, loc(), sizes[dim]);
    Value n = arith::ConstantIndexOp::create(builder, loc(), groupSize);
    sizes[dim] = divide ? arith::DivUIOp::create(builder, loc(), size, n)
                              .getResult()
                        : arith::MulIOp::create(builder, loc(), size, n)
                              .getResult();
  };
  Value permBuffer;
  SmallVector<Value> sizeBuffers;
  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    kind = RuntimeCollective::AllReduce;
    extra.push_back(i64(static_cast<int64_t>(ar.getReduce())));
  } else if (auto ar = dyn_cast<AllReduceCoalescedOp>(op)) {
    kind = RuntimeCollective::AllReduce;
    extra.push_back(i64(static_cast<int64_t>(ar.getReduce())));
  } else if (auto ag = dyn_cast<AllGatherOp>(op)) {
    kind = RuntimeCollective::AllGather;
    extra.push_back(i64(ag.getGatherDim()));
    scale(ag.getGatherDim(), false);
  } else if (auto ag = dyn_cast<AllGatherCoalescedOp>(op)) {
    kind = RuntimeCollective::AllGather;
    int64_t dim = ag.getGatherDims()[index];
    extra.push_back(i64(dim));
    scale(dim, false);
  } else if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
    kind = RuntimeCollective::ReduceScatter;
    extra.push_back(i64(rs.getScatterDim()));
    extra.push_back(i64(static_cast<int64_t>(rs.getReduce())));
    scale(rs.getScatterDim(), true);
  } else if (auto rs = dyn_cast<ReduceScatterCoalescedOp>(op)) {
    kind = RuntimeCollective::ReduceScatter;
    int64_t dim = rs.getScatterDims()[index];
    extra.push_back(i64(dim));
    extra.push_back(i64(static_cast<int64_t>(rs.getReduce())));
    scale(dim, true);
  } else if (auto a2a = dyn_cast<AllToAllOp>(op)) {
    kind = RuntimeCollective::AllToAll;
    extra.push_back(i64(a2a.getSplitDim()));
    extra.push_back(i64(a2a.getConcatDim()));
    if (a2a.getSplitDim() != a2a.getConcatDim()) {
      scale(a2a.getSplitDim(), true);
      scale(a2a.getConcatDim(), false);
    }
  } else if (auto a2av = dyn_cast<AllToAllVOp>(op)) {
    kind = RuntimeCollective::AllToAllV;
    // The output's size along dim 0 is the sum of the recv sizes, which the
    // runtime reads from wherever they live (device memory on a GPU).
    for (Value sizesTensor : {a2av.getSendSizes(), a2av.getRecvSizes()})
      sizeBuffers.push_back(unranked(inputBuffer(sizesTensor)));
    Value ctx = context(op);
    // The unranked memref lowers to the runtime's (rank, descriptor).
    func::FuncOp total =
        declare(getRuntimeFunctionSymbol(RuntimeFunction::TotalSize),
                {ctx.getType(), sizeBuffers[1].getType()},
                {builder.getI64Type()});
    Value rows = func::CallOp::create(builder, loc(), total,
                                      ValueRange{ctx, sizeBuffers[1]})
                     .getResult(0);
    sizes[0] = arith::IndexCastOp::create(builder, loc(),
                                          builder.getIndexType(), rows)
                   .getResult();
  } else if (auto permute = dyn_cast<PermuteOp>(op)) {
    kind = RuntimeCollective::Permute;
    // The permutation as a small constant buffer.
    auto permType = RankedTensorType::get(
        {static_cast<int64_t>(permute.getPerm().size())},
        builder.getI64Type());
    Value perm = arith::ConstantOp::create(
        builder, loc(),
        DenseIntElementsAttr::get(permType, permute.getPerm()));
    permBuffer = inputBuffer(perm);
  } else if (auto bcast = dyn_cast<BroadcastOp>(op)) {
    kind = RuntimeCollective::Broadcast;
    extra.push_back(i64(bcast.getRoot()));
  } else {
    return op->emitError("no runtime lowering for this collective");
  }

  Value in = inputBuffer(input);
  if (async) {
    // The runtime reads the input until the wait: give it its own copy so
    // that bufferization may reuse the original buffer meanwhile
    // (dtensor-reuse-collective-buffers removes it where nothing may).
    Value copy = outputBuffer(
        inputType, tensor::getMixedSizes(builder, loc(), input));
    memref::CopyOp::create(builder, loc(), in, copy);
    in = copy;
  }
  Value out = outputBuffer(type, sizes);
  SmallVector<Value> args = {context(op), unranked(in), unranked(out)};
  llvm::append_range(args, sizeBuffers);
  args.push_back(i64(*mesh));
  args.push_back(i64(axesMask(collective.getMeshAxes())));
  if (permBuffer)
    args.push_back(unranked(permBuffer));
  llvm::append_range(args, extra);
  // The argument list is the ABI table's (RuntimeABI.def).
  if (args.size() != getRuntimeCollectiveNumOperands(kind))
    return op->emitError("internal error: ")
           << args.size() << " arguments for the runtime's "
           << getRuntimeCollectiveName(kind) << ", which takes "
           << getRuntimeCollectiveNumOperands(kind);
  std::string name = getRuntimeCollectiveSymbol(kind, async, *suffix);
  SmallVector<Type> results;
  if (async)
    results.push_back(builder.getI64Type());
  func::FuncOp callee = declare(name, TypeRange(args), results);
  auto call = func::CallOp::create(builder, loc(), callee, args);
  if (async)
    *handle = call.getResult(0);
  return out;
}

LogicalResult RuntimeLowering::lowerSync(Operation *op) {
  currentLoc = op->getLoc();
  builder.setInsertionPoint(op);
  SmallVector<Value> inputs = getCommunicatedInputs(op);
  for (auto [i, input] : llvm::enumerate(inputs)) {
    auto type = cast<RankedTensorType>(op->getResult(i).getType());
    FailureOr<Value> out = emitCall(op, input, type, i, false, nullptr);
    if (failed(out))
      return failure();
    op->getResult(i).replaceAllUsesWith(asTensor(*out, type));
  }
  op->erase();
  return success();
}

// A future becomes the started collective's handle and its output buffer.
// Starts and waits are lowered one by one, bridged by unrealized casts
// (handle, buffer) <-> future; lowerCarriedFutures converts what structured
// control flow carries in between, and the casts then cancel.

LogicalResult RuntimeLowering::lowerAsync(AsyncStartOp start) {
  Operation *op = start.getCollective();
  if (!op)
    return start.emitError("malformed dtensor.async_start");
  currentLoc = op->getLoc();
  builder.setInsertionPoint(start);
  // Operands of the collective are defined above the start.
  SmallVector<Value> inputs = getCommunicatedInputs(op);
  for (auto [i, input] : llvm::enumerate(inputs)) {
    auto type = cast<RankedTensorType>(op->getResult(i).getType());
    Value handle;
    FailureOr<Value> out = emitCall(op, input, type, i, true, &handle);
    if (failed(out))
      return failure();
    Value future = start.getFutures()[i];
    future.replaceAllUsesWith(
        UnrealizedConversionCastOp::create(builder, loc(), future.getType(),
                                           ValueRange{handle, *out})
            .getResult(0));
  }
  start.erase();
  return success();
}

void RuntimeLowering::lowerWait(WaitOp wait) {
  builder.setInsertionPoint(wait);
  currentLoc = wait.getLoc();
  auto type = cast<RankedTensorType>(wait.getResult().getType());
  auto parts = UnrealizedConversionCastOp::create(
      builder, loc(), TypeRange{builder.getI64Type(), getBufferType(type)},
      wait.getFuture());
  Value ctx = context(wait);
  func::FuncOp waitFn =
      declare(getRuntimeFunctionSymbol(RuntimeFunction::Wait), {ctx.getType(), builder.getI64Type()}, {});
  func::CallOp::create(builder, loc(), waitFn,
                       ValueRange{ctx, parts.getResult(0)});
  wait.getResult().replaceAllUsesWith(asTensor(parts.getResult(1), type));
  wait.erase();
}

LogicalResult RuntimeLowering::lowerCarriedFutures(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  auto carries = [](Operation *op) {
    return llvm::any_of(op->getOperandTypes(), llvm::IsaPred<FutureType>) ||
           llvm::any_of(op->getResultTypes(), llvm::IsaPred<FutureType>);
  };
  bool carried = false;
  func.walk([&](Operation *op) {
    if (!isa<UnrealizedConversionCastOp>(op) && carries(op))
      carried = true;
  });
  if (carried) {
    TypeConverter converter;
    converter.addConversion([](Type type) { return type; });
    converter.addConversion(
        [&](FutureType type, SmallVectorImpl<Type> &results) {
          results.push_back(IntegerType::get(ctx, 64));
          results.push_back(
              getBufferType(cast<RankedTensorType>(type.getValueType())));
          return success();
        });
    ConversionTarget target(*ctx);
    RewritePatternSet patterns(ctx);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    // The bridging casts stay (reconciled below) rather than materialized.
    ConversionConfig config;
    config.buildMaterializations = false;
    if (failed(applyPartialConversion(func, target, std::move(patterns),
                                      config)))
      return func.emitError("cannot lower the futures that structured "
                            "control flow carries");
  }
  SmallVector<UnrealizedConversionCastOp> casts, remaining;
  func.walk([&](UnrealizedConversionCastOp op) { casts.push_back(op); });
  reconcileUnrealizedCasts(casts, &remaining);
  for (UnrealizedConversionCastOp op : remaining)
    return op.emitError("a dtensor.async_start future is used by an op that "
                        "neither waits for it nor hands it on");
  return success();
}

LogicalResult RuntimeLowering::run() {
  int64_t next = 0;
  for (auto mesh : module.getOps<MeshOp>())
    meshIds[mesh.getSymNameAttr()] = next++;

  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  for (func::FuncOp func : funcs) {
    if (func.isExternal())
      continue;
    if (failed(expandOps(func)))
      return failure();
    // Coordinates from the runtime.
    SmallVector<CoordOp> coords;
    func.walk([&](CoordOp op) { coords.push_back(op); });
    for (CoordOp op : coords) {
      currentLoc = op.getLoc();
      builder.setInsertionPoint(op);
      FailureOr<int64_t> mesh = meshId(op.getMeshAttr(), op);
      if (failed(mesh))
        return failure();
      func::FuncOp callee =
          declare(getRuntimeFunctionSymbol(RuntimeFunction::Coord), {builder.getI64Type(), builder.getI64Type()},
                  {builder.getI64Type()});
      Value value = func::CallOp::create(
                        builder, loc(), callee,
                        ValueRange{i64(*mesh), i64(axesMask(op.getAxes()))})
                        .getResult(0);
      op.getResult().replaceAllUsesWith(arith::IndexCastOp::create(
          builder, loc(), builder.getIndexType(), value));
      op.erase();
    }
    SmallVector<AsyncStartOp> starts;
    func.walk([&](AsyncStartOp op) { starts.push_back(op); });
    for (AsyncStartOp op : starts)
      if (failed(lowerAsync(op)))
        return failure();
    SmallVector<WaitOp> waits;
    func.walk([&](WaitOp op) { waits.push_back(op); });
    for (WaitOp op : waits)
      lowerWait(op);
    if (failed(lowerCarriedFutures(func)))
      return failure();
    SmallVector<Operation *> collectives;
    func.walk([&](CollectiveOpInterface op) { collectives.push_back(op); });
    for (Operation *op : collectives)
      if (failed(lowerSync(op)))
        return failure();
    // Nothing dtensor-specific may reach the LLVM translation.
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      for (NamedAttribute attr : llvm::to_vector(func.getArgAttrDict(i)
                                                     ? func.getArgAttrDict(i).getValue()
                                                     : ArrayRef<NamedAttribute>()))
        if (attr.getName().getValue().starts_with("dtensor."))
          func.removeArgAttr(i, attr.getName());
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      for (NamedAttribute attr :
           llvm::to_vector(func.getResultAttrDict(i)
                               ? func.getResultAttrDict(i).getValue()
                               : ArrayRef<NamedAttribute>()))
        if (attr.getName().getValue().starts_with("dtensor."))
          func.removeResultAttr(i, attr.getName());
    func->removeAttr("dtensor.mesh");
    // Hosts call public functions through the C interface
    // (_mlir_ciface_<name>, memrefs passed as descriptor pointers).
    if (func.isPublic())
      func->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
    WalkResult leftover = func.walk([&](Operation *op) {
      if (isa<DTensorDialect>(op->getDialect())) {
        op->emitError("cannot lower this op to the runtime; partition the "
                      "program first");
        return WalkResult::interrupt();
      }
      for (NamedAttribute attr : llvm::to_vector(op->getDiscardableAttrs()))
        if (attr.getName().getValue().starts_with("dtensor."))
          op->removeDiscardableAttr(attr.getName());
      return WalkResult::advance();
    });
    if (leftover.wasInterrupted())
      return failure();
  }
  for (auto mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
    mesh.erase();
  return success();
}

struct LowerToRuntimePass
    : dtensor::impl::LowerToRuntimePassBase<LowerToRuntimePass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(RuntimeLowering(getOperation()).run()))
      signalPassFailure();
  }
};

} // namespace
