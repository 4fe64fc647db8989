//===- CostFiles.h - hardware descriptions and per-op cost tables -*- C++ -*-=//
//
// The two files a user can hand the cost-driven passes (docs/cost-model.md
// has the full key list and examples).
//
// A hardware description (`hardware-file=`) is a JSON object that starts
// from a preset and overrides any of its fields:
//
//   {"base": "h200", "name": "my-h200", "matmul_tflops": 700,
//    "nccl": {"channels": 8, "protocols": ["ll", "simple"]}}
//
// HardwareModel::fromJSON / fromFile (declared in CostModel.h) read it.
//
// A per-op cost table (`cost-table=`) is a JSON object from op names to
// microseconds; "default" covers every other op that is not free:
//
//   {"linalg.matmul": 120.5, "dtensor.all_reduce": 35, "default": 0.5}
//
// Values are finite numbers >= 0. The table is what createTableCostEstimator
// (CostEstimator.h) takes.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_ANALYSIS_COSTFILES_H
#define DTENSOR_ANALYSIS_COSTFILES_H

#include "dtensor/Analysis/CostModel.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

namespace mlir::dtensor {

/// Parses the text of a per-op cost table. Errors start with `sourceName`.
llvm::Expected<llvm::StringMap<double>>
parseCostTable(llvm::StringRef text, llvm::StringRef sourceName = "cost table");

/// Reads and parses a per-op cost table file.
llvm::Expected<llvm::StringMap<double>> loadCostTable(llvm::StringRef path);

/// The hardware the options of a cost-driven pass name: the description in
/// `file` when it is not empty (its "base" defaulting to `preset`), else the
/// preset `preset`. Errors name the unknown preset or the file.
llvm::Expected<HardwareModel> resolveHardware(llvm::StringRef preset,
                                              llvm::StringRef file);

/// resolveHardware for the options of a pass: a failure is emitted as an
/// error at `loc`, its message after `prefix` (the pass's own prefix of its
/// messages, if it has one).
FailureOr<HardwareModel>
resolveHardwareOrEmitError(Location loc, llvm::StringRef preset,
                           llvm::StringRef file, llvm::StringRef prefix = "");

} // namespace mlir::dtensor

#endif // DTENSOR_ANALYSIS_COSTFILES_H
