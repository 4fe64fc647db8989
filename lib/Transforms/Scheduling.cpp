//===- Scheduling.cpp - shared machinery of the overlap passes ------------===//

#include "Scheduling.h"

#include "DTensor/DTensor.h"
#include "dtensor/Analysis/CommAnalysis.h"
#include "dtensor/Analysis/CostFiles.h"

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
  if (shared) {
    if (record)
      shared->record(func.getName(), currentPeak);
    else if (std::optional<int64_t> recorded = shared->lookup(func.getName()))
      base = *recorded;
  }
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
  budget.beginModule();
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

FailureOr<std::unique_ptr<CostEstimator>>
sched::createEstimatorFromOptions(Operation *module, StringRef hardware,
                                  StringRef hardwareFile, StringRef costTable) {
  FailureOr<HardwareModel> hw =
      resolveHardwareOrEmitError(module->getLoc(), hardware, hardwareFile);
  if (failed(hw))
    return failure();
  std::unique_ptr<CostEstimator> estimator = createDefaultCostEstimator(*hw);
  if (costTable.empty())
    return estimator;
  llvm::Expected<llvm::StringMap<double>> table = loadCostTable(costTable);
  if (!table)
    return module->emitError(llvm::toString(table.takeError()));
  return createTableCostEstimator(std::move(*table), std::move(estimator));
}

//===----------------------------------------------------------------------===//
// The passes by name
//===----------------------------------------------------------------------===//

static constexpr llvm::StringLiteral kAllPasses[] = {
    "split-matmul-all-reduce", "async-collectives", "bucket-collectives",
    "reorder-compute-for-overlap", "sink-waits", "raise-comms"};
static constexpr llvm::StringLiteral kDefaultPasses[] = {
    "split-matmul-all-reduce", "async-collectives",
    "reorder-compute-for-overlap", "sink-waits", "raise-comms"};

ArrayRef<StringRef> mlir::dtensor::getOverlapPassNames() {
  static const SmallVector<StringRef> names(std::begin(kAllPasses),
                                            std::end(kAllPasses));
  return names;
}

ArrayRef<StringRef> mlir::dtensor::getDefaultOverlapPasses() {
  static const SmallVector<StringRef> names(std::begin(kDefaultPasses),
                                            std::end(kDefaultPasses));
  return names;
}

std::unique_ptr<Pass>
mlir::dtensor::createOverlapPass(StringRef name, const OverlapOptions &options,
                                 std::shared_ptr<PeakMemoryBaseline> baseline,
                                 bool recordBaseline) {
  name.consume_front("dtensor-");
  if (name == "split-matmul-all-reduce")
    return makeSplitMatmulAllReducePass(options, std::move(baseline),
                                        recordBaseline);
  if (name == "async-collectives")
    return makeMakeCollectivesAsyncPass(std::move(baseline), recordBaseline);
  if (name == "bucket-collectives")
    return makeBucketCollectivesPass(options, std::move(baseline),
                                     recordBaseline);
  if (name == "reorder-compute-for-overlap")
    return makeReorderComputeForOverlapPass(options, std::move(baseline),
                                            recordBaseline);
  if (name == "sink-waits")
    return makeSinkWaitsPass(options, std::move(baseline), recordBaseline);
  if (name == "raise-comms")
    return makeRaiseCommsPass(options, std::move(baseline), recordBaseline);
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
  if (options.passes.empty())
    llvm::append_range(names, getDefaultOverlapPasses());
  auto baseline = std::make_shared<PeakMemoryBaseline>();
  SmallVector<std::unique_ptr<Pass>> passes;
  for (StringRef name : names) {
    std::unique_ptr<Pass> pass =
        createOverlapPass(name, options, baseline, passes.empty());
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
