//===- SpecializeRank.cpp - the program of one process --------------------===//
//
// The `dtensor-specialize-rank` pass: every dtensor.coord becomes the
// constant that the process of the given world rank gets at run time.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Partitioning/Passes.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_SPECIALIZERANKPASS
#include "dtensor/Partitioning/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

struct SpecializeRankPass
    : dtensor::impl::SpecializeRankPassBase<SpecializeRankPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (rank < 0) {
      module.emitError("dtensor-specialize-rank needs rank=N, the world rank "
                       "of the process (N >= 0)");
      return signalPassFailure();
    }
    SymbolTableCollection symbols;
    SmallVector<CoordOp> coords;
    module.walk([&](CoordOp op) { coords.push_back(op); });
    for (CoordOp op : coords) {
      MeshOp mesh =
          lookupMesh(op, op.getMeshAttr(), /*diagnose=*/true, &symbols);
      if (!mesh)
        return signalPassFailure();
      ArrayRef<int64_t> shape = mesh.getShape();
      int64_t size = mesh.getGroupSize(llvm::to_vector(
          llvm::seq<int64_t>(0, static_cast<int64_t>(shape.size()))));
      if (rank >= size) {
        op.emitError() << "rank " << static_cast<int64_t>(rank)
                       << " is not a process of mesh @" << mesh.getSymName()
                       << " (" << size << " processes)";
        return signalPassFailure();
      }
      // The process's coordinates: `rank` unravelled row-major.
      SmallVector<int64_t> position(shape.size());
      int64_t rest = rank;
      for (int64_t axis = shape.size() - 1; axis >= 0; --axis) {
        position[axis] = rest % shape[axis];
        rest /= shape[axis];
      }
      int64_t index = 0;
      for (int64_t axis : op.getAxes())
        index = index * shape[axis] + position[axis];
      OpBuilder builder(op);
      op.getResult().replaceAllUsesWith(
          arith::ConstantIndexOp::create(builder, op.getLoc(), index));
      op.erase();
    }
  }
};

} // namespace
