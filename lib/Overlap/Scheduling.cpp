//===- Scheduling.cpp - shared machinery of the overlap passes ------------===//

#include "Scheduling.h"

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Analysis/CommAnalysis.h"
#include "dtensor/Overlap/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::dtensor;
using namespace mlir::dtensor::sched;

bool sched::isCommunication(Operation *op) {
  return isa<AsyncStartOp, CollectiveOpInterface>(op);
}

bool sched::isBarrier(Operation *op) {
  if (isa<AsyncStartOp, WaitOp, CollectiveOpInterface>(op))
    return false;
  if (op->hasTrait<OpTrait::IsTerminator>())
    return true;
  // Regions other than element bodies may hold control flow (and
  // collectives issued under it).
  if (op->getNumRegions() != 0 &&
      !isa<linalg::LinalgOp, tensor::PadOp, tensor::GenerateOp>(op))
    return true;
  return !isMemoryEffectFree(op);
}

void sched::forEachUsedValue(Operation *op, function_ref<void(Value)> fn) {
  for (Value value : op->getOperands())
    fn(value);
  if (op->getNumRegions() == 0)
    return;
  op->walk([&](Operation *nested) {
    if (nested == op)
      return;
    for (Value value : nested->getOperands())
      if (!op->isAncestor(value.getParentRegion()->getParentOp()))
        fn(value);
  });
}

SmallVector<Operation *> sched::getProducersInBlock(Block &block,
                                                    Operation *op) {
  SmallVector<Operation *> producers;
  llvm::SmallPtrSet<Operation *, 8> seen;
  forEachUsedValue(op, [&](Value value) {
    Operation *def = value.getDefiningOp();
    if (!def)
      return;
    Operation *producer = block.findAncestorOpInBlock(*def);
    if (producer && producer != op && seen.insert(producer).second)
      producers.push_back(producer);
  });
  return producers;
}

//===----------------------------------------------------------------------===//
// MemoryModel
//===----------------------------------------------------------------------===//

/// Bytes of a tensor or of the tensor a future will hold; 0 otherwise.
static int64_t getBufferBytes(Type type) {
  if (auto future = dyn_cast<FutureType>(type))
    type = future.getValueType();
  bool hasDynamic = false;
  return getStaticTensorBytes(type, hasDynamic).value_or(0);
}

MemoryModel::MemoryModel(Block &block) {
  for (Operation &op : block) {
    ids[&op] = ops.size();
    ops.push_back(&op);
  }
  auto addUsers = [&](Buffer &buffer, Value value) {
    for (OpOperand &use : value.getUses())
      if (Operation *user = block.findAncestorOpInBlock(*use.getOwner()))
        buffer.users.push_back(ids.lookup(user));
  };
  for (BlockArgument arg : block.getArguments()) {
    Buffer buffer;
    buffer.bytes = getBufferBytes(arg.getType());
    if (buffer.bytes == 0)
      continue;
    addUsers(buffer, arg);
    buffers.push_back(std::move(buffer));
  }
  DenseMap<Value, unsigned> bufferOfFuture;
  for (auto [id, op] : llvm::enumerate(ops)) {
    auto wait = dyn_cast<WaitOp>(op);
    for (Value result : op->getResults()) {
      // The waited value is the future's buffer.
      if (wait) {
        auto it = bufferOfFuture.find(wait.getFuture());
        if (it != bufferOfFuture.end()) {
          addUsers(buffers[it->second], result);
          continue;
        }
      }
      Buffer buffer;
      buffer.bytes = getBufferBytes(result.getType());
      if (buffer.bytes == 0)
        continue;
      buffer.def = id;
      addUsers(buffer, result);
      if (isa<FutureType>(result.getType()))
        bufferOfFuture[result] = buffers.size();
      buffers.push_back(std::move(buffer));
    }
  }
}

int64_t MemoryModel::getPeak(ArrayRef<Operation *> order, Operation *mergedFrom,
                             Operation *mergedInto) const {
  SmallVector<unsigned> orderIds;
  orderIds.reserve(order.size());
  for (Operation *op : order)
    orderIds.push_back(getId(op));
  if (!mergedFrom)
    return getPeakOfIds(orderIds);
  return getPeakOfIds(orderIds, getId(mergedFrom), getId(mergedInto));
}

int64_t MemoryModel::getPeakOfIds(ArrayRef<unsigned> order,
                                  std::optional<unsigned> mergedFrom,
                                  unsigned mergedInto) const {
  position.assign(ops.size(), 0);
  for (auto [index, id] : llvm::enumerate(order))
    position[id] = index;
  if (mergedFrom)
    position[*mergedFrom] = position[mergedInto];
  delta.assign(order.size() + 1, 0);
  for (const Buffer &buffer : buffers) {
    unsigned start = buffer.def ? position[*buffer.def] : 0;
    unsigned end = start;
    for (unsigned user : buffer.users)
      end = std::max(end, position[user]);
    delta[start] += buffer.bytes;
    delta[end + 1] -= buffer.bytes;
  }
  int64_t live = 0, peak = 0;
  for (int64_t change : delta) {
    live += change;
    peak = std::max(peak, live);
  }
  return peak;
}

//===----------------------------------------------------------------------===//
// BlockSchedule
//===----------------------------------------------------------------------===//

BlockSchedule::BlockSchedule(Block &block) : model(block) {
  for (Operation &op : block) {
    orderIds.push_back(order.size());
    order.push_back(&op);
  }
  unsigned begin = 0;
  for (auto [index, op] : llvm::enumerate(order)) {
    if (!isBarrier(op))
      continue;
    segments.push_back({begin, static_cast<unsigned>(index)});
    begin = index + 1;
  }
}

bool BlockSchedule::tryReorder(const Segment &segment,
                               ArrayRef<Operation *> ops) {
  SmallVector<unsigned> ids;
  ids.reserve(ops.size());
  for (Operation *op : ops)
    ids.push_back(model.getId(op));
  return tryReorderIds(segment, ids);
}

bool BlockSchedule::tryReorderIds(const Segment &segment,
                                  ArrayRef<unsigned> ids) {
  MutableArrayRef<unsigned> current = MutableArrayRef<unsigned>(orderIds).slice(
      segment.begin, segment.end - segment.begin);
  if (llvm::equal(ids, current))
    return true;
  if (limit != std::numeric_limits<int64_t>::max()) {
    SmallVector<unsigned> tentative(orderIds);
    llvm::copy(ids, tentative.begin() + segment.begin);
    if (model.getPeakOfIds(tentative) > limit) {
      ++refused;
      return false;
    }
  }
  llvm::copy(ids, current.begin());
  for (auto [offset, id] : llvm::enumerate(ids))
    order[segment.begin + offset] = model.getOp(id);
  return true;
}

void BlockSchedule::apply() {
  Operation *last = order.back();
  for (Operation *op : ArrayRef<Operation *>(order).drop_back())
    op->moveBefore(last);
}

//===----------------------------------------------------------------------===//
// DependenceGraph
//===----------------------------------------------------------------------===//

DependenceGraph::DependenceGraph(Block &block, ArrayRef<Operation *> ops)
    : ops(ops) {
  DenseMap<Operation *, unsigned> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;
  preds.resize(ops.size());
  succs.resize(ops.size());
  std::optional<unsigned> lastComm;
  for (auto [i, op] : llvm::enumerate(ops)) {
    for (Operation *producer : getProducersInBlock(block, op)) {
      auto it = index.find(producer);
      if (it != index.end())
        preds[i].push_back(it->second);
    }
    if (isCommunication(op)) {
      if (lastComm)
        preds[i].push_back(*lastComm);
      lastComm = i;
      comms.push_back(i);
    }
    llvm::sort(preds[i]);
    preds[i].erase(std::unique(preds[i].begin(), preds[i].end()),
                   preds[i].end());
    for (unsigned pred : preds[i])
      succs[pred].push_back(i);
  }
}

//===----------------------------------------------------------------------===//
// Budgets, remarks, estimators
//===----------------------------------------------------------------------===//

int64_t MemoryBudget::getLimit(FunctionOpInterface func, int64_t currentPeak) {
  int64_t base = currentPeak;
  if (auto recorded = func->getAttrOfType<IntegerAttr>(kMemoryBaselineAttrName))
    base = recorded.getInt();
  else
    func->setAttr(kMemoryBaselineAttrName,
                  IntegerAttr::get(IntegerType::get(func->getContext(), 64),
                                   currentPeak));
  if (fraction < 0)
    return std::numeric_limits<int64_t>::max();
  int64_t limit = base + static_cast<int64_t>(
                             std::floor(static_cast<double>(base) * fraction));
  // A program already over the budget may not grow further, but need not
  // shrink.
  return std::max(limit, currentPeak);
}

Block *sched::getSchedulableBody(FunctionOpInterface func) {
  if (func.isExternal())
    return nullptr;
  Region &body = func.getFunctionBody();
  if (!body.hasOneBlock() || body.front().empty() ||
      !body.front().back().hasTrait<OpTrait::IsTerminator>())
    return nullptr;
  return &body.front();
}

void sched::reportMemory(FunctionOpInterface func, StringRef passName,
                         int64_t before, int64_t after,
                         const BlockSchedule &schedule) {
  InFlightDiagnostic remark = emitRemark(func->getLoc())
                              << passName << ": peak live memory " << before
                              << " -> " << after << " bytes (";
  if (schedule.getLimit() == std::numeric_limits<int64_t>::max())
    remark << "no budget";
  else
    remark << "budget " << schedule.getLimit() << " bytes";
  remark << "), " << schedule.getNumRefused() << " move(s) refused";
}

void sched::forEachSchedulableFunction(
    ModuleOp module, MemoryBudget &budget,
    function_ref<void(FunctionOpInterface, Block &, BlockSchedule &, int64_t)>
        fn) {
  for (auto func : module.getOps<FunctionOpInterface>()) {
    Block *body = getSchedulableBody(func);
    if (!body)
      continue;
    BlockSchedule schedule(*body);
    int64_t before = schedule.getPeak();
    schedule.setLimit(budget.getLimit(func, before));
    fn(func, *body, schedule, before);
  }
}

void sched::rescheduleFunctions(
    ModuleOp module, StringRef passName, MemoryBudget &budget, bool report,
    function_ref<void(Block &, BlockSchedule &, const BlockSchedule::Segment &)>
        scheduleSegment) {
  forEachSchedulableFunction(
      module, budget,
      [&](FunctionOpInterface func, Block &body, BlockSchedule &schedule,
          int64_t before) {
        for (const BlockSchedule::Segment &segment : schedule.getSegments())
          scheduleSegment(body, schedule, segment);
        schedule.apply();
        if (report)
          reportMemory(func, passName, before, schedule.getPeak(), schedule);
      });
}

//===----------------------------------------------------------------------===//
// The passes by name
//===----------------------------------------------------------------------===//

namespace {
/// A scheduling pass by its pipeline name, and how to make it from the
/// pipeline's options.
struct OverlapPassEntry {
  llvm::StringLiteral name;
  bool isDefault;
  std::unique_ptr<Pass> (*create)(const OverlapOptions &);
};
} // namespace

/// The generated options struct of a scheduling pass with the shared
/// options (SchedulingOptions in Passes.td) taken from `options`.
template <typename PassOptions>
static PassOptions withSchedulingOptions(const OverlapOptions &options) {
  PassOptions passOptions;
  passOptions.memoryBudget = options.memoryBudget;
  passOptions.reportMemory = options.reportMemory;
  return passOptions;
}

/// Every scheduling pass, in the default order where it is in the default
/// list.
static const OverlapPassEntry kOverlapPasses[] = {
    {"split-matmul-all-reduce", true,
     [](const OverlapOptions &options) {
       return createSplitMatmulAllReducePass(
           withSchedulingOptions<SplitMatmulAllReducePassOptions>(options));
     }},
    {"async-collectives", true,
     [](const OverlapOptions &) { return createMakeCollectivesAsyncPass(); }},
    {"bucket-collectives", false,
     [](const OverlapOptions &options) {
       auto passOptions =
           withSchedulingOptions<BucketCollectivesPassOptions>(options);
       passOptions.bucketCapBytes = options.bucketCapBytes;
       return createBucketCollectivesPass(passOptions);
     }},
    {"reorder-compute-for-overlap", true,
     [](const OverlapOptions &options) {
       return createReorderComputeForOverlapPass(
           withSchedulingOptions<ReorderComputeForOverlapPassOptions>(
               options));
     }},
    {"sink-waits", true,
     [](const OverlapOptions &options) {
       return createSinkWaitsPass(
           withSchedulingOptions<SinkWaitsPassOptions>(options));
     }},
    {"raise-comms", true,
     [](const OverlapOptions &options) {
       return createRaiseCommsPass(
           withSchedulingOptions<RaiseCommsPassOptions>(options));
     }},
};

ArrayRef<StringRef> mlir::dtensor::getOverlapPassNames() {
  static const SmallVector<StringRef> names = llvm::map_to_vector(
      kOverlapPasses, [](const OverlapPassEntry &e) -> StringRef {
        return e.name;
      });
  return names;
}

ArrayRef<StringRef> mlir::dtensor::getDefaultOverlapPasses() {
  static const SmallVector<StringRef> names = [] {
    SmallVector<StringRef> result;
    for (const OverlapPassEntry &entry : kOverlapPasses)
      if (entry.isDefault)
        result.push_back(entry.name);
    return result;
  }();
  return names;
}

std::unique_ptr<Pass> mlir::dtensor::createOverlapPass(
    StringRef name, const OverlapOptions &options) {
  name.consume_front("dtensor-");
  for (const OverlapPassEntry &entry : kOverlapPasses)
    if (entry.name == name)
      return entry.create(options);
  return nullptr;
}

LogicalResult mlir::dtensor::addOverlapPasses(OpPassManager &pm,
                                              const OverlapOptions &options,
                                              std::string *error) {
  SmallVector<StringRef> names;
  for (const std::string &name : options.passes) {
    if (name == "default")
      llvm::append_range(names, getDefaultOverlapPasses());
    else
      names.push_back(name);
  }
  SmallVector<std::unique_ptr<Pass>> passes;
  for (StringRef name : names) {
    std::unique_ptr<Pass> pass = createOverlapPass(name, options);
    if (!pass) {
      if (error)
        *error = ("unknown overlap pass '" + name + "' (expected " +
                  llvm::join(getOverlapPassNames(), ", ") + ", or default)")
                     .str();
      return failure();
    }
    passes.push_back(std::move(pass));
  }
  for (std::unique_ptr<Pass> &pass : passes)
    pm.addPass(std::move(pass));
  return success();
}

LogicalResult mlir::dtensor::addOverlapStagePasses(
    OpPassManager &pm, const FuseOptions &fuse, int64_t splitAllReduce,
    const OverlapOptions &overlap, std::string *error) {
  if (fuse.enabled) {
    FuseCollectiveMatmulPassOptions options;
    options.force = fuse.force;
    options.minRows = fuse.minRows;
    options.threshold = fuse.threshold;
    pm.addPass(createFuseCollectiveMatmulPass(options));
  }
  if (splitAllReduce != 0) {
    SplitMatmulAllReducePassOptions options;
    options.chunks = splitAllReduce;
    options.force = true;
    options.memoryBudget = overlap.memoryBudget;
    options.reportMemory = overlap.reportMemory;
    pm.addPass(createSplitMatmulAllReducePass(options));
  }
  return addOverlapPasses(pm, overlap, error);
}
