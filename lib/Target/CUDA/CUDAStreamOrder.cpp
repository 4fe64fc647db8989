//===- CUDAStreamOrder.cpp - GPU ops on the rank's stream -----------------===//
//
// Upstream gpu-async-region chains GPU ops by tokens but puts a blocking
// gpu.wait before every host op with side effects (our runtime calls) and
// before returns. On the CUDA target everything, the runtime's matmuls and
// collectives included, is enqueued on the rank's one compute stream, so
// stream order is the only order needed and the host never waits: each GPU
// op is made asynchronous on a `gpu.wait async` of its own, which
// gpu-to-llvm lowers to mgpuStreamCreate() -- the CUDA runtime's
// mgpuStreamCreate returns the persistent stream of the rank.
//
// As the first pass over host code after the conversion to kernels, it also
// refuses what would run on the host against device memory: a parallel loop
// that the conversion left behind.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_CUDASTREAMORDERPASS
#include "dtensor/Target/CUDA/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

struct CUDAStreamOrderPass
    : dtensor::impl::CUDAStreamOrderPassBase<CUDAStreamOrderPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<gpu::AsyncOpInterface> ops;
    WalkResult result = func.walk([&](Operation *op) {
      if (isa<gpu::GPUModuleOp, gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (isa<scf::ParallelOp>(op)) {
        op->emitOpError("a parallel loop is left on the host after the "
                        "mapping to GPU kernels; on the CUDA target every "
                        "buffer is device memory, so the host must not run "
                        "it");
        return WalkResult::interrupt();
      }
      if (auto wait = dyn_cast<gpu::WaitOp>(op)) {
        if (!wait.getAsyncToken()) {
          wait.emitOpError("a blocking gpu.wait synchronises the host inside "
                           "a program; the CUDA target orders work by the "
                           "rank's stream only");
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      }
      if (auto async = dyn_cast<gpu::AsyncOpInterface>(op))
        if (!async.getAsyncToken())
          ops.push_back(async);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();

    Type tokenType = gpu::AsyncTokenType::get(func.getContext());
    for (gpu::AsyncOpInterface async : ops) {
      Operation *op = async.getOperation();
      if (!isa<gpu::AllocOp, gpu::DeallocOp, gpu::MemcpyOp, gpu::MemsetOp,
               gpu::LaunchFuncOp>(op)) {
        op->emitOpError("no stream-ordered lowering of this GPU op for the "
                        "CUDA target");
        return signalPassFailure();
      }
      OpBuilder builder(op);
      Value stream =
          gpu::WaitOp::create(builder, op->getLoc(), tokenType, ValueRange())
              .getAsyncToken();
      async.addAsyncDependency(stream);
      // The token result: an op with an optional token result gets one by
      // being rebuilt with it.
      OperationState state(op->getLoc(), op->getName());
      state.addOperands(op->getOperands());
      state.addAttributes(op->getAttrs());
      SmallVector<Type> types(op->getResultTypes());
      // The token is the last result of alloc, the only one otherwise.
      types.push_back(tokenType);
      state.addTypes(types);
      state.propertiesAttr = op->getPropertiesAsAttribute();
      Operation *replacement = builder.create(state);
      for (auto [from, to] :
           llvm::zip(op->getResults(), replacement->getResults()))
        from.replaceAllUsesWith(to);
      op->erase();
    }
  }
};

} // namespace
