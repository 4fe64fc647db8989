//===- CUDADeviceMemory.cpp - every buffer on the device ------------------===//
//
// A per-rank program on the CUDA target computes in device memory only:
// its arguments are device pointers, its allocations become gpu.alloc, and
// nothing copies between host and device. Host code only passes pointers
// around (to kernels, to runtime calls).
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

#include "dtensor/Conversion/DTensorToRuntime/Buffers.h"
#include "dtensor/Conversion/DTensorToRuntime/RuntimeCalls.h"
#include "RuntimeCalls.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_CUDADEVICEMEMORYPASS
#include "dtensor/Target/CUDA/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// Whether `use` is read on the host only: the perm operand (the last one)
/// of a permute collective, directly or through memref.casts.
static bool isHostRead(OpOperand &use) {
  Operation *user = use.getOwner();
  if (isa<memref::CastOp>(user))
    return llvm::all_of(user->getResult(0).getUses(),
                        [](OpOperand &u) { return isHostRead(u); });
  std::optional<RuntimeCall> call = classifyRuntimeCall(user);
  return call && call->is(RuntimeCollective::Permute) &&
         use.getOperandNumber() == user->getNumOperands() - 1;
}

/// The op after which the buffer of `alloc` is dead, in the alloc's block,
/// or null if the buffer escapes (returned, yielded, stored, passed to a
/// call other than a runtime call) and must not be freed here. A buffer
/// given to an asynchronous collective (dtensor_rt_start_*) lives until the
/// dtensor_rt_wait of its handle, and is not freed here when the handle goes
/// elsewhere.
static Operation *lastUse(Operation *alloc) {
  Block *block = alloc->getBlock();
  Operation *last = alloc;
  auto extend = [&](Operation *user) -> bool {
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor)
      return false;
    if (last->isBeforeInBlock(ancestor))
      last = ancestor;
    return true;
  };
  for (Value alias : getAliases(alloc->getResult(0))) {
    for (Operation *user : alias.getUsers()) {
      if (user->hasTrait<OpTrait::IsTerminator>() ||
          isa<memref::StoreOp, LLVM::StoreOp>(user))
        return nullptr;
      if (auto call = dyn_cast<func::CallOp>(user)) {
        std::optional<RuntimeCall> runtimeCall = classifyRuntimeCall(call);
        if (!runtimeCall && !cuda::isRuntimeCall(call))
          return nullptr;
        if (runtimeCall && runtimeCall->async) {
          // A handle carried on by a loop (a future waited in the next
          // iteration) or passed to a call is waited out of sight: keep
          // the buffer.
          for (Operation *wait : runtimeCall->getHandle().getUsers()) {
            std::optional<RuntimeCall> waitCall = classifyRuntimeCall(wait);
            if (!waitCall || !waitCall->is(RuntimeFunction::Wait) ||
                !extend(wait))
              return nullptr;
          }
        }
      }
      if (!extend(user))
        return nullptr;
    }
  }
  return last;
}

struct CUDADeviceMemoryPass
    : dtensor::impl::CUDADeviceMemoryPassBase<CUDADeviceMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp,
              memref::AllocaOp, memref::GetGlobalOp,
              memref::ReallocOp>(op))
        ops.push_back(op);
    });
    SmallVector<gpu::AllocOp> allocs;
    for (Operation *op : ops) {
      OpBuilder builder(op);
      Location loc = op->getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        if (!alloc.getSymbolOperands().empty()) {
          alloc.emitOpError("cannot place an allocation with symbol operands "
                          "in device memory");
          return signalPassFailure();
        }
        auto gpuAlloc = gpu::AllocOp::create(
            builder, loc, alloc.getType(), /*asyncToken=*/Type(),
            /*asyncDependencies=*/ValueRange(), alloc.getDynamicSizes(),
            /*symbolOperands=*/ValueRange(), /*hostShared=*/false);
        alloc.replaceAllUsesWith(gpuAlloc.getMemref());
        alloc.erase();
        allocs.push_back(gpuAlloc);
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(builder, loc, /*asyncToken=*/Type(),
                               ValueRange(), dealloc.getMemref());
        dealloc.erase();
      } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        linalg::CopyOp::create(builder, loc, copy.getSource(),
                               copy.getTarget());
        copy.erase();
      } else if (isa<memref::AllocaOp>(op)) {
        op->emitOpError("cannot lower a stack allocation for the CUDA target: "
                      "host memory that device code would access");
        return signalPassFailure();
      } else if (isa<memref::ReallocOp>(op)) {
        op->emitOpError("cannot lower a reallocation for the CUDA target");
        return signalPassFailure();
      } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        // Constant buffers live in host memory. A permute's perm is read
        // there; every other use gets a device copy, made where the
        // constant is taken and freed after its last use like any buffer.
        Value host = global.getResult();
        if (llvm::all_of(host.getUses(),
                         [](OpOperand &use) { return isHostRead(use); }))
          continue;
        auto type = cast<MemRefType>(host.getType());
        if (!type.hasStaticShape() || !type.getLayout().isIdentity()) {
          global.emitOpError("cannot copy a constant tensor of type ")
              << type << " to device memory";
          return signalPassFailure();
        }
        builder.setInsertionPointAfter(global);
        auto copy = gpu::AllocOp::create(
            builder, loc, type, /*asyncToken=*/Type(),
            /*asyncDependencies=*/ValueRange(), /*dynamicSizes=*/ValueRange(),
            /*symbolOperands=*/ValueRange(), /*hostShared=*/false);
        Value device = copy.getMemref();
        host.replaceUsesWithIf(device, [&](OpOperand &use) {
          return use.getOwner() != copy && !isHostRead(use);
        });
        gpu::MemcpyOp::create(builder, loc, /*asyncToken=*/Type(),
                              ValueRange(), device, host);
        allocs.push_back(copy);
      }
    }
    // Free what does not escape after its last use. Everything is ordered
    // by the rank's stream, so the free is enqueued after the kernels and
    // runtime calls that use the buffer.
    if (!deallocate)
      return;
    for (gpu::AllocOp alloc : allocs) {
      bool freed = llvm::any_of(alloc.getMemref().getUsers(), [](Operation *u) {
        return isa<gpu::DeallocOp>(u);
      });
      if (freed)
        continue;
      Operation *last = lastUse(alloc);
      if (!last)
        continue;
      OpBuilder builder(last->getContext());
      builder.setInsertionPointAfter(last);
      gpu::DeallocOp::create(builder, alloc.getLoc(), /*asyncToken=*/Type(),
                             ValueRange(), alloc.getMemref());
    }
  }
};

} // namespace
