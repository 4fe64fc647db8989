//===- Overlap.h - the communication/compute overlap passes -----*- C++ -*-===//
//
// The scheduling passes by the names the dtensor-overlap pipeline lists them
// under, and what they share when they run as one pipeline. The passes
// themselves are declared in Passes.td; docs/scheduling.md describes them.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_OVERLAP_OVERLAP_H
#define DTENSOR_OVERLAP_OVERLAP_H

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir::dtensor {

/// The options of the scheduling passes; each pass reads those it has.
struct OverlapOptions {
  /// Pass names in order, without the `dtensor-` prefix (see
  /// getOverlapPassNames); "default" stands for getDefaultOverlapPasses().
  /// Empty: no scheduling.
  std::vector<std::string> passes = {"default"};
  /// Allowed growth of the peak live memory over the unscheduled program,
  /// as a fraction (0.2: 20%); negative: no limit.
  double memoryBudget = 0.2;
  /// Emit a remark per function with the peak before and after each pass.
  bool reportMemory = false;
  /// Largest bucket of bucket-collectives, in bytes.
  int64_t bucketCapBytes = 25 * 1024 * 1024;
};

/// Comm-compute fusion (dtensor-fuse-collective-matmul).
struct FuseOptions {
  bool enabled = false;
  /// Fuse every legal candidate, whatever the cost model says.
  bool force = false;
  /// Fuse where the product has at least this many rows (0: cost model).
  int64_t minRows = 0;
  /// Speedup a fusion must show in the cost model.
  double threshold = 1.0;
};

/// Every name the pipeline accepts: split-matmul-all-reduce,
/// async-collectives, bucket-collectives, reorder-compute-for-overlap,
/// sink-waits, raise-comms.
llvm::ArrayRef<llvm::StringRef> getOverlapPassNames();

/// The default order: split-matmul-all-reduce, async-collectives,
/// reorder-compute-for-overlap, sink-waits, raise-comms.
llvm::ArrayRef<llvm::StringRef> getDefaultOverlapPasses();

/// The scheduling pass called `name` (with or without the `dtensor-`
/// prefix), configured by `options`; null for an unknown name. Hardware
/// facts come from the module's target; the memory budget's baseline from
/// each function's `dtensor.memory_baseline` (written by the first
/// scheduling pass that runs on it).
std::unique_ptr<Pass> createOverlapPass(llvm::StringRef name,
                                        const OverlapOptions &options);

/// Adds the passes `options.passes` names to `pm` (a module pass manager).
/// Fails with a message in `error` for an unknown name.
LogicalResult addOverlapPasses(OpPassManager &pm, const OverlapOptions &options,
                               std::string *error = nullptr);

/// This stage's piece of the pipeline, per-rank -> scheduled: fusion (where
/// `fuse.enabled`), the forced split of matmul + all_reduce into
/// `splitAllReduce` row chunks (0: none), then the scheduling passes.
LogicalResult addOverlapStagePasses(OpPassManager &pm, const FuseOptions &fuse,
                                    int64_t splitAllReduce,
                                    const OverlapOptions &overlap,
                                    std::string *error = nullptr);

} // namespace mlir::dtensor

#endif // DTENSOR_OVERLAP_OVERLAP_H
