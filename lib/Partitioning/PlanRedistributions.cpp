//===- PlanRedistributions.cpp - split redistributions into steps ---------===//

#include "dtensor/Target/Target.h"
#include "dtensor/Partitioning/Passes.h"

#include "dtensor/Sharding/Redistribute.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_PLANREDISTRIBUTIONSPASS
#include "dtensor/Partitioning/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

struct PlanRedistributionsPass
    : dtensor::impl::PlanRedistributionsPassBase<PlanRedistributionsPass> {
  using Base::Base;

  /// Where PyTorch's plan for the same redistribution communicates less
  /// (fewer collectives, or no more of them sending at least 5% fewer
  /// bytes: below that, padding of uneven shards decides), says so with
  /// both costs: the planner keeps the plan its cost model finds cheaper
  /// (issue 26).
  void comparePyTorch(MeshOp mesh, RedistributeOp op,
                      const RedistributePlan &plan, const HardwareModel &hw) {
    FailureOr<RedistributePlan> torch = planRedistributionLikePyTorch(
        mesh, op.getInput().getType(), *op.getFrom(), op.getTo(), hw, nullptr);
    if (failed(torch))
      return;
    unsigned ourCount = plan.getNumCollectives(),
             theirCount = torch->getNumCollectives();
    bool fewerBytes =
        torch->getSentBytes() < 0.95 * static_cast<double>(plan.getSentBytes());
    if (theirCount > ourCount || (theirCount == ourCount && !fewerBytes))
      return;
    auto costs = [](const RedistributePlan &p) {
      return llvm::formatv("{0} collective(s), {1} bytes sent per rank, "
                           "{2:F2} us by the cost model",
                           p.getNumCollectives(), p.getSentBytes(), p.costUs)
          .str();
    };
    op.emitRemark() << "planned " << plan.describe() << " (" << costs(plan)
                    << "); PyTorch's plan " << torch->describe()
                    << " communicates less (" << costs(*torch)
                    << "), but the cost model finds it slower";
  }

  void runOnOperation() override {
    FailureOr<HardwareModel> hw = getTargetHardware(getOperation());
    if (failed(hw))
      return signalPassFailure();
    SymbolTableCollection symbols;
    SmallVector<RedistributeOp> ops;
    getOperation().walk([&](RedistributeOp op) { ops.push_back(op); });
    for (RedistributeOp op : ops) {
      std::optional<LayoutAttr> from = op.getFrom();
      if (!from) {
        op.emitError("redistribution without a source layout; run "
                     "--dtensor-propagate-layouts first");
        return signalPassFailure();
      }
      MeshOp mesh = lookupMesh(op, from->getMesh(), /*diagnose=*/true,
                               &symbols);
      if (!mesh)
        return signalPassFailure();
      std::string why;
      FailureOr<RedistributePlan> plan = planRedistribution(
          mesh, op.getInput().getType(), *from, op.getTo(), *hw, &why);
      if (failed(plan)) {
        op.emitError("cannot plan the redistribution: ") << why;
        return signalPassFailure();
      }
      comparePyTorch(mesh, op, *plan, *hw);
      if (plan->steps.size() == 1)
        continue;
      if (plan->steps.empty()) {
        // The identity moves nothing: its uses take the operand. Where only
        // one-process axes change, nothing moves either, but the users were
        // given the `to` layout: the op stays (erasing it would hand them
        // the `from` layout, which no strategy of theirs may accept, e.g.
        // [S(1), S(1)] for [S(1), R] on a 2x1 mesh) and partitions to no
        // communication.
        if (*from == op.getTo()) {
          op.getResult().replaceAllUsesWith(op.getInput());
          op.erase();
        }
        continue;
      }
      OpBuilder builder(op);
      Value value = op.getInput();
      for (const RedistributeStep &step : plan->steps)
        value = RedistributeOp::create(builder, op.getLoc(), value.getType(),
                                       value, step.from, step.to);
      op.getResult().replaceAllUsesWith(value);
      op.erase();
    }
  }
};

} // namespace
