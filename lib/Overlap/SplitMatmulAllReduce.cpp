//===- SplitMatmulAllReduce.cpp - matmul + all_reduce in row chunks -------===//
//
// The `dtensor-split-matmul-all-reduce` pass: the all_reduce of a matmul's
// product (the output of a row-parallel layer, e.g. the TP MLP's down
// projection) depends on the whole matmul, so no scheduling can overlap it.
// Split into row chunks, chunk i's all_reduce depends only on chunk i's
// matmul and runs while chunk i + 1 is multiplied once the scheduling passes
// have made it asynchronous. The rewrite, for c chunks along row dim d:
//
//   %a_i = tensor.extract_slice %a (rows i*m/c .. (i+1)*m/c along d)
//   %z_i = tensor.extract_slice %zeros (the same rows of the init)
//   %p_i = <the matmul>(%a_i, %b) into %z_i
//   %r_i = dtensor.all_reduce %p_i
//   %r   = tensor.concat dim(d) %r_0, ..., %r_(c-1)
//
//===----------------------------------------------------------------------===//

#include "RowMatmul.h"
#include "Scheduling.h"

#include "dtensor/Target/Target.h"
#include "dtensor/Overlap/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "llvm/Support/Format.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_SPLITMATMULALLREDUCEPASS
#include "dtensor/Overlap/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// An all_reduce of a row matmul's product.
struct Candidate {
  AllReduceOp allReduce;
  RowMatmul matmul;
  RankedTensorType productType;
};

/// The chunked form of a candidate for one chunk count.
struct Split {
  int64_t chunks = 1;
  int64_t dim = 0;
  /// Modelled times, in microseconds.
  double chunkMatmulUs = 0, chunkAllReduceUs = 0, concatUs = 0;

  /// Chunk matmuls back to back on the compute stream; each chunk's
  /// all_reduce after its matmul and the previous all_reduce; the concat
  /// after the last all_reduce.
  double pipelinedUs() const {
    double computeEnd = 0, commEnd = 0;
    for (int64_t i = 0; i < chunks; ++i) {
      computeEnd += chunkMatmulUs;
      commEnd = std::max(commEnd, computeEnd) + chunkAllReduceUs;
    }
    return commEnd + concatUs;
  }
};

std::string formatUs(double us) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.2f", us);
  return text;
}

/// Matches `op` as a candidate in `body`; otherwise says why not.
std::optional<Candidate> match(AllReduceOp op, Block &body, std::string &why) {
  if (op->getBlock() != &body) {
    why = isa<AsyncStartOp>(op->getParentOp())
              ? "it is asynchronous already (run the split before "
                "async-collectives)"
              : "it is not at the top level of the function body";
    return std::nullopt;
  }
  Value product = op.getInput();
  Operation *def = product.getDefiningOp();
  std::string whyNot;
  std::optional<RowMatmul> matmul =
      def ? matchRowMatmul(def, whyNot) : std::nullopt;
  if (!matmul) {
    why = "its operand is not produced by a matmul";
    if (!whyNot.empty())
      why += ": " + whyNot;
    return std::nullopt;
  }
  if (def->getBlock() != &body) {
    why = "the matmul is in another block";
    return std::nullopt;
  }
  if (!product.hasOneUse()) {
    why = "the matmul's product has other users";
    return std::nullopt;
  }
  auto productType = cast<RankedTensorType>(product.getType());
  if (!productType.hasStaticShape()) {
    why = "the product has dynamic sizes";
    return std::nullopt;
  }
  return Candidate{op, *matmul, productType};
}

/// The first row dim of the product that `chunks` divides.
std::optional<int64_t> chunkDim(RankedTensorType productType, int64_t chunks) {
  for (int64_t dim = 0; dim + 1 < productType.getRank(); ++dim)
    if (productType.getDimSize(dim) % chunks == 0)
      return dim;
  return std::nullopt;
}

/// Rows [i * size, (i + 1) * size) of `value` along `dim`, all of its other
/// dims: the contraction dim of A may be dynamic (an uneven shard of K), and
/// a dynamic size is a `tensor.dim`. Appends the ops it builds to `created`.
Value sliceRows(OpBuilder &b, Location loc, Value value, int64_t dim,
                int64_t index, int64_t size,
                SmallVectorImpl<Operation *> &created) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (d == dim || !type.isDynamicDim(d)) {
      sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
      continue;
    }
    auto index = arith::ConstantIndexOp::create(b, loc, d);
    auto dimOp = tensor::DimOp::create(b, loc, value, index);
    created.push_back(index);
    created.push_back(dimOp);
    sizes.push_back(dimOp.getResult());
  }
  offsets[dim] = b.getIndexAttr(index * size);
  sizes[dim] = b.getIndexAttr(size);
  auto slice =
      tensor::ExtractSliceOp::create(b, loc, value, offsets, sizes, strides);
  created.push_back(slice);
  return slice;
}

/// The ops of one chunk that the cost model times.
struct Chunk {
  Operation *matmul;
  AllReduceOp allReduce;
};

/// Builds chunk `index` of `split` at `b`'s insertion point: its slices, its
/// matmul and its all_reduce; appends the ops to `created`.
Chunk buildChunk(OpBuilder &b, const Candidate &candidate, const Split &split,
                 int64_t index, SmallVectorImpl<Operation *> &created) {
  linalg::LinalgOp matmulOp = candidate.matmul.op;
  Location loc = matmulOp->getLoc();
  int64_t rows = candidate.productType.getDimSize(split.dim) / split.chunks;
  Value a = sliceRows(b, loc, candidate.matmul.a->get(), split.dim, index,
                      rows, created);
  Value init = sliceRows(b, loc, matmulOp.getDpsInitOperand(0)->get(),
                         split.dim, index, rows, created);
  SmallVector<Value> operands(matmulOp->getOperands());
  operands[candidate.matmul.a->getOperandNumber()] = a;
  operands[matmulOp.getDpsInitOperand(0)->getOperandNumber()] = init;
  Operation *chunkMatmul = clone(b, matmulOp, {init.getType()}, operands);
  created.push_back(chunkMatmul);
  auto allReduce = cast<AllReduceOp>(b.clone(*candidate.allReduce));
  allReduce->setOperand(0, chunkMatmul->getResult(0));
  allReduce.getResult().setType(cast<RankedTensorType>(init.getType()));
  created.push_back(allReduce);
  return {chunkMatmul, allReduce};
}

void eraseAll(ArrayRef<Operation *> ops) {
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

struct SplitMatmulAllReducePass
    : dtensor::impl::SplitMatmulAllReducePassBase<SplitMatmulAllReducePass> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// Models `chunks` chunks of `candidate` by building one chunk and a
  /// concat of its copies, then erasing them; none if no row dim divides.
  std::optional<Split> model(const Candidate &candidate, int64_t chunks);
  /// Splits `candidate` if that pays and fits in `limitBytes`; returns
  /// whether it did, counting a split refused for memory in `refused`.
  bool visit(const Candidate &candidate, Block &body, int64_t limitBytes,
             unsigned &refused);

  /// The estimator of the current run (owned by runOnOperation).
  CostEstimator *estimator = nullptr;
};

} // namespace

std::optional<Split> SplitMatmulAllReducePass::model(const Candidate &candidate,
                                                     int64_t chunks) {
  std::optional<int64_t> dim = chunkDim(candidate.productType, chunks);
  if (!dim)
    return std::nullopt;
  Split split;
  split.chunks = chunks;
  split.dim = *dim;
  OpBuilder b(candidate.allReduce);
  SmallVector<Operation *> created;
  Chunk chunk = buildChunk(b, candidate, split, 0, created);
  SmallVector<Value> copies(chunks, chunk.allReduce.getResult());
  created.push_back(
      tensor::ConcatOp::create(b, chunk.allReduce.getLoc(), split.dim, copies));
  split.chunkMatmulUs = estimator->estimateUs(chunk.matmul);
  split.chunkAllReduceUs = estimator->estimateUs(chunk.allReduce);
  split.concatUs = estimator->estimateUs(created.back());
  eraseAll(created);
  return split;
}

bool SplitMatmulAllReducePass::visit(const Candidate &candidate, Block &body,
                                     int64_t limitBytes, unsigned &refused) {
  AllReduceOp allReduce = candidate.allReduce;
  auto notSplit = [&](const Twine &why) {
    emitRemark(allReduce.getLoc()) << "not split: " << why;
    return false;
  };
  SmallVector<int64_t> counts;
  if (chunks > 0)
    counts.push_back(chunks);
  else
    counts = {2, 4, 8};
  std::optional<Split> best;
  for (int64_t count : counts) {
    std::optional<Split> split = model(candidate, count);
    if (split && (!best || split->pipelinedUs() < best->pipelinedUs()))
      best = split;
  }
  if (!best)
    return notSplit("no row dim of the product divides into " +
                    llvm::join(llvm::map_range(counts,
                                               [](int64_t count) {
                                                 return std::to_string(count);
                                               }),
                               ", ") +
                    " chunks");
  double matmulUs = estimator->estimateUs(candidate.matmul.op);
  double allReduceUs = estimator->estimateUs(allReduce);
  double unsplitUs = matmulUs + allReduceUs;
  std::string verdict;
  llvm::raw_string_ostream os(verdict);
  os << best->chunks << " row chunks along dim " << best->dim
     << ": modelled pipeline " << formatUs(best->pipelinedUs()) << " us";
  bool pays = unsplitUs > threshold * best->pipelinedUs();
  os << (pays ? " beats" : " does not beat") << " unsplit "
     << formatUs(unsplitUs) << " us (matmul " << formatUs(matmulUs)
     << " + all_reduce " << formatUs(allReduceUs) << "; per chunk matmul "
     << formatUs(best->chunkMatmulUs) << ", all_reduce "
     << formatUs(best->chunkAllReduceUs) << "; concat "
     << formatUs(best->concatUs) << ")";
  if (threshold != 1.0)
    os << ", required speedup " << llvm::format("%g", double(threshold));
  if (force) {
    verdict = std::to_string(best->chunks) + " row chunks along dim " +
              std::to_string(best->dim) + ": force=true";
  } else if (!pays) {
    return notSplit(verdict);
  }

  // The rewrite, then the memory check with the originals unlinked.
  OpBuilder b(allReduce);
  SmallVector<Operation *> created;
  SmallVector<Value> reduced;
  for (int64_t i = 0; i < best->chunks; ++i)
    reduced.push_back(
        buildChunk(b, candidate, *best, i, created).allReduce.getResult());
  auto concat =
      tensor::ConcatOp::create(b, allReduce.getLoc(), best->dim, reduced);
  created.push_back(concat);
  Operation *matmulOp = candidate.matmul.op;
  Operation *matmulNext = matmulOp->getNextNode();
  allReduce.getResult().replaceAllUsesWith(concat.getResult());
  allReduce->remove();
  matmulOp->remove();
  if (limitBytes != std::numeric_limits<int64_t>::max()) {
    int64_t peak = sched::BlockSchedule(body).getPeak();
    if (peak > limitBytes) {
      // Undo: the originals back where they were (the all_reduce first: it
      // may be the op that followed the matmul).
      body.getOperations().insert(Block::iterator(concat), allReduce);
      body.getOperations().insert(Block::iterator(matmulNext), matmulOp);
      concat.getResult().replaceAllUsesWith(allReduce.getResult());
      eraseAll(created);
      ++refused;
      return notSplit(verdict + "; but the peak live memory would be " +
                      std::to_string(peak) + " bytes, over the budget of " +
                      std::to_string(limitBytes));
    }
  }
  emitRemark(allReduce.getLoc()) << "split into " << verdict;
  Value init = cast<linalg::LinalgOp>(matmulOp).getDpsInitOperand(0)->get();
  allReduce->destroy();
  matmulOp->destroy();
  eraseIfDead(init);
  ++numSplit;
  return true;
}

void SplitMatmulAllReducePass::runOnOperation() {
  if (chunks == 1 || chunks < 0 || threshold <= 0) {
    getOperation().emitError("chunks must be 0 or at least 2, and threshold "
                             "positive");
    return signalPassFailure();
  }
  FailureOr<std::unique_ptr<CostEstimator>> created =
      getTargetCostEstimator(getOperation());
  if (failed(created))
    return signalPassFailure();
  estimator = created->get();
  sched::MemoryBudget budget(memoryBudget);
  sched::forEachSchedulableFunction(
      getOperation(), budget,
      [&](FunctionOpInterface func, Block &body, sched::BlockSchedule &schedule,
          int64_t before) {
        SmallVector<AllReduceOp> allReduces;
        func.walk([&](AllReduceOp op) { allReduces.push_back(op); });
        unsigned refused = 0;
        for (AllReduceOp op : allReduces) {
          std::string why;
          std::optional<Candidate> candidate = match(op, body, why);
          if (!candidate) {
            emitRemark(op.getLoc()) << "not split: " << why;
            continue;
          }
          visit(*candidate, body, schedule.getLimit(), refused);
        }
        if (!reportMemory)
          return;
        // The block changed under `schedule`: measure it anew.
        sched::BlockSchedule after(body);
        after.setLimit(schedule.getLimit());
        for (unsigned i = 0; i < refused; ++i)
          after.refuse();
        sched::reportMemory(func, getArgument(), before, after.getPeak(),
                            after);
      });
}
