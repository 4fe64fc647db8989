//===- ReuseCollectiveBuffers.cpp - buffer rules of runtime collectives ---===//
//
// dtensor-lower-to-runtime gives every collective a fresh output buffer and
// every started (asynchronous) collective a private copy of its input, so
// that bufferization may do what it likes with the input's buffer while the
// runtime still reads it. After One-Shot Bufferize every buffer and every
// alias of one is explicit in the IR, and this pass removes what it can
// prove unnecessary:
//
//  - the input copy of a started collective, when nothing between the copy
//    and the wait of its handle may write the copied buffer or an alias of
//    it (upstream alias analysis; runtime calls write their output only);
//  - the fresh output of an all_reduce, when the input is a whole local
//    allocation (not a slice or another view of one) that dies at the
//    collective (every other use of it, through views, ends before it, the
//    reads of started collectives at their waits): the all_reduce then runs
//    in place (the runtime passes MPI_IN_PLACE, or the same pointer to
//    NCCL).
//
// What it cannot prove safe keeps its copy or its fresh buffer: function
// arguments and constants are never written, buffers that escape through a
// terminator or an op returning a memref are never reused, a handle not
// waited in the start's block keeps the copy.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Conversion/DTensorToRuntime/Buffers.h"
#include "dtensor/Conversion/DTensorToRuntime/Passes.h"
#include "dtensor/Conversion/DTensorToRuntime/RuntimeCalls.h"

#include "mlir/Analysis/AliasAnalysis.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_REUSECOLLECTIVEBUFFERSPASS
#include "dtensor/Conversion/DTensorToRuntime/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// The dtensor_rt_wait of a started collective's handle, when it is the
/// handle's only use and lies in the start's block; null otherwise (a handle
/// carried by a loop or passed to a call).
static Operation *findWait(RuntimeCall c) {
  Value handle = c.getHandle();
  if (!handle || !handle.hasOneUse())
    return nullptr;
  Operation *user = *handle.getUsers().begin();
  std::optional<RuntimeCall> wait = classifyRuntimeCall(user);
  if (!wait || !wait->is(RuntimeFunction::Wait) ||
      user->getBlock() != c.call->getBlock())
    return nullptr;
  return user;
}

/// Whether `root` is memory the function did not allocate: an argument of
/// the function or a global (constant).
static bool isOutsideBuffer(Value root) {
  if (auto arg = dyn_cast<BlockArgument>(root))
    return arg.getOwner()->isEntryBlock() &&
           isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
  return root.getDefiningOp<memref::GetGlobalOp>() != nullptr;
}

/// Whether `op` or an op nested in it may write `buffer` or an alias of it.
static bool mayWrite(Operation *op, Value buffer, AliasAnalysis &aa) {
  Value root = getRootBuffer(buffer);
  auto mayAlias = [&](Value written) {
    return !written || !aa.alias(getRootBuffer(written), root).isNo();
  };
  WalkResult result = op->walk([&](Operation *nested) {
    std::optional<RuntimeCall> runtimeCall = classifyRuntimeCall(nested);
    if (runtimeCall && runtimeCall->isCollective())
      return mayAlias(runtimeCall->getOutput()) ? WalkResult::interrupt()
                                                : WalkResult::advance();
    if (runtimeCall && runtimeCall->is(RuntimeFunction::Wait)) {
      // A wait writes the output of its start, a buffer the lowering
      // allocated (or an all_reduce's input made its output), even where the
      // handle comes from a loop or a caller.
      std::optional<RuntimeCall> start =
          classifyRuntimeCall(nested->getOperands().back().getDefiningOp());
      if (!start || !start->isCollective())
        return isOutsideBuffer(root) ? WalkResult::advance()
                                     : WalkResult::interrupt();
      return mayAlias(start->getOutput()) ? WalkResult::interrupt()
                                          : WalkResult::advance();
    }
    // The runtime's queries (context, coord, total_size) write nothing the
    // program sees.
    if (runtimeCall)
      return WalkResult::advance();
    if (isa<CallOpInterface>(nested))
      return WalkResult::interrupt();
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects)
      return nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>()
                 ? WalkResult::advance()
                 : WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (MemoryEffects::EffectInstance &instance : instances)
      if (isa<MemoryEffects::Write, MemoryEffects::Free>(instance.getEffect()) &&
          mayAlias(instance.getValue()))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// Removes the private input copy of a started collective when nothing may
/// write the copied buffer before the wait: no op between the copy and the
/// wait in the start's block, or, for an argument or a constant of the
/// function, no op of the function at all (the wait may then be anywhere: in
/// the next iteration of a loop, in a caller).
static bool elideInputCopy(RuntimeCall c, AliasAnalysis &aa) {
  Value copyBuffer = getRootBuffer(c.getInput());
  auto alloc = copyBuffer.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return false;
  // The allocation exists for this call alone: one copy into it, casts of
  // it that only this call uses.
  memref::CopyOp copy;
  for (Operation *user : alloc->getUsers()) {
    if (auto c2 = dyn_cast<memref::CopyOp>(user);
        c2 && c2.getTarget() == copyBuffer && !copy) {
      copy = c2;
      continue;
    }
    if (user == c.call.getOperation())
      continue;
    if (!isa<memref::CastOp>(user) ||
        !llvm::all_of(user->getUsers(),
                      [&](Operation *u) { return u == c.call; }))
      return false;
  }
  if (!copy || copy->getBlock() != c.call->getBlock() ||
      !copy->isBeforeInBlock(c.call))
    return false;
  Value source = copy.getSource();
  if (Operation *wait = findWait(c)) {
    for (Operation *op = copy->getNextNode(); op != wait;
         op = op->getNextNode())
      if (mayWrite(op, source, aa))
        return false;
  } else {
    auto func = c.call->getParentOfType<FunctionOpInterface>();
    if (!func || !isOutsideBuffer(getRootBuffer(source)))
      return false;
    for (Block &block : func.getFunctionBody())
      for (Operation &op : block)
        if (mayWrite(&op, source, aa))
          return false;
  }
  // The call reads the source itself.
  OpOperand &input = c.call->getOpOperand(1);
  OpBuilder builder(c.call);
  input.set(memref::CastOp::create(builder, c.call.getLoc(),
                                   input.get().getType(), source));
  copy.erase();
  for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
    if (user->use_empty())
      user->erase();
  if (alloc->use_empty())
    alloc.erase();
  return true;
}

/// Where a use of a buffer by `user` ends, in `block`: the user's ancestor
/// there, or the wait of a started collective that reads it; null if
/// unknown.
static Operation *getUseEnd(Operation *user, Block *block) {
  if (std::optional<RuntimeCall> collective = classifyRuntimeCall(user);
      collective && collective->isCollective() && collective->async) {
    Operation *wait = findWait(*collective);
    return wait ? block->findAncestorOpInBlock(*wait) : nullptr;
  }
  return block->findAncestorOpInBlock(*user);
}

/// Whether `value` is all of `root`, element for element: `root` itself or
/// casts of it. A view that may select part of the buffer or reorder it
/// (a subview, a transpose, a reshape) is not, even where its type says the
/// same shape: with dynamic sizes a slice of rows has the type of the whole.
static bool isWholeBuffer(Value value, Value root) {
  while (value != root) {
    auto cast = value.getDefiningOp<memref::CastOp>();
    if (!cast)
      return false;
    value = cast.getSource();
  }
  return true;
}

/// Lets an all_reduce write its result into its input buffer when the input
/// is all of a local allocation that dies at the collective.
static bool reuseInput(RuntimeCall c) {
  if (!c.is(RuntimeCollective::AllReduce))
    return false;
  Value in = getRootBuffer(c.getInput());
  // The output replaces the input's whole allocation: the input must be all
  // of it, or the result would be written over (and read back as) the rest.
  if (!isWholeBuffer(c.getInput(), in))
    return false;
  Value out = getRootBuffer(c.getOutput());
  auto inAlloc = in.getDefiningOp<memref::AllocOp>();
  auto outAlloc = out.getDefiningOp<memref::AllocOp>();
  Block *block = c.call->getBlock();
  if (!inAlloc || !outAlloc || in == out || in.getType() != out.getType() ||
      inAlloc->getBlock() != block || outAlloc->getBlock() != block)
    return false;
  Operation *end = c.async ? findWait(c) : c.call.getOperation();
  if (!end)
    return false;
  // Every other use of the input buffer, through views, ends before the
  // collective; a buffer that escapes is never reused.
  SmallVector<Value> work = {in};
  llvm::SmallPtrSet<Value, 8> seen;
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (Operation *user : value.getUsers()) {
      if (user == c.call.getOperation())
        continue;
      if (getViewedBuffer(user) == value) {
        work.push_back(user->getResult(0));
        continue;
      }
      if (user->hasTrait<OpTrait::IsTerminator>() ||
          llvm::any_of(user->getResultTypes(), llvm::IsaPred<BaseMemRefType>))
        return false;
      Operation *useEnd = getUseEnd(user, block);
      if (!useEnd || !useEnd->isBeforeInBlock(c.call))
        return false;
    }
  }
  // The output is used after the collective completes only.
  for (Operation *user : out.getUsers()) {
    if (user == c.call.getOperation() ||
        (isa<memref::CastOp>(user) &&
         llvm::all_of(user->getUsers(),
                      [&](Operation *u) { return u == c.call; })))
      continue;
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor || !end->isBeforeInBlock(ancestor))
      return false;
  }
  out.replaceAllUsesWith(in);
  outAlloc.erase();
  return true;
}

struct ReuseCollectiveBuffersPass
    : dtensor::impl::ReuseCollectiveBuffersPassBase<
          ReuseCollectiveBuffersPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<RuntimeCall> calls;
    getOperation().walk([&](func::CallOp call) {
      if (std::optional<RuntimeCall> collective = classifyRuntimeCall(call);
          collective && collective->isCollective())
        calls.push_back(*collective);
    });
    AliasAnalysis &aa = getAnalysis<AliasAnalysis>();
    for (RuntimeCall c : calls)
      if (c.async && elideInputCopy(c, aa))
        ++numCopiesElided;
    for (RuntimeCall c : calls)
      if (reuseInput(c))
        ++numInPlace;
  }
};

} // namespace
