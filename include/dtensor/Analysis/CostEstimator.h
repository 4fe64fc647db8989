//===- CostEstimator.h - modelled time of the ops of a program --*- C++ -*-===//
//
// The one place the scheduling passes, the timeline export and the fusion
// gate ask "how long does this op take". The default estimator combines the
// collective model and the roofline of CostModel.h; a per-op cost table or a
// client's own estimator (through the C++ API) can replace it.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_ANALYSIS_COSTESTIMATOR_H
#define DTENSOR_ANALYSIS_COSTESTIMATOR_H

#include "dtensor/Analysis/CostModel.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringMap.h"

#include <memory>

namespace mlir::dtensor {

/// Which resource an op occupies on a rank.
enum class OpResource {
  /// Runs on the compute stream (linalg, arith, tensor ops, ...).
  Compute,
  /// A collective (sync, or the start of an async one): a comm stream.
  Communication,
  /// dtensor.wait: blocks compute until its collective is done; free itself.
  Wait,
  /// Costs nothing (constants, coordinates, casts, views).
  Free,
};

class CostEstimator {
public:
  virtual ~CostEstimator();
  /// Modelled time of `op` in microseconds. For dtensor.async_start it is
  /// the time of the wrapped collective; for waits 0.
  virtual double estimateUs(Operation *op) = 0;
  /// The resource `op` occupies.
  virtual OpResource classify(Operation *op);
};

/// Roofline for compute (flops of linalg ops, bytes moved), the collective
/// model for collectives (group sizes from the dtensor.mesh symbols).
std::unique_ptr<CostEstimator>
createDefaultCostEstimator(const HardwareModel &hw);

/// Fixed costs by op name ("dtensor.all_reduce", "linalg.matmul", ...),
/// with "default" for every other op that is not Free; waits cost 0 unless
/// listed. Falls back to `fallback` for names it lacks when given.
std::unique_ptr<CostEstimator>
createTableCostEstimator(llvm::StringMap<double> table,
                         std::unique_ptr<CostEstimator> fallback = nullptr);

} // namespace mlir::dtensor

#endif // DTENSOR_ANALYSIS_COSTESTIMATOR_H
