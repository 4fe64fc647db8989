//===- TPPlan.h - PyTorch tensor-parallel plans as data ---------*- C++ -*-===//
//
// A parallelize_module plan as the user writes it (docs/tp-plans.md): the
// JSON document, its entries (module path -> style with layouts) and their
// placements, parsed and checked without a program. dtensor-apply-tp-plan
// applies the entries to a global-view program.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_FRONTEND_TPPLAN_H
#define DTENSOR_FRONTEND_TPPLAN_H

#include "dtensor/Dialect/DTensor/DTensor.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::dtensor {

/// A placement as a plan writes it: shard dims may be negative (counted from
/// the last dim) until the placement is applied to a tensor.
struct PlanPlacement {
  PlacementKind kind = PlacementKind::Replicate;
  int64_t dim = 0;
  ReduceKind reduce = ReduceKind::Sum;
};

/// One placement per mesh dimension; std::nullopt is JSON null (Python None).
using PlanLayout = std::optional<llvm::SmallVector<PlanPlacement>>;

/// PyTorch's ParallelStyles.
enum class PlanStyle {
  Colwise,
  Rowwise,
  Sequence,
  PrepareInput,
  PrepareOutput
};

/// ColwiseParallel, RowwiseParallel, ...
llvm::StringRef getPlanStyleName(PlanStyle style);

/// One style of one plan key.
struct PlanEntry {
  /// The plan key (a module path, segments may be glob patterns).
  std::string key;
  /// Position among the entries of the same key.
  unsigned index = 0;
  PlanStyle style = PlanStyle::Colwise;
  /// Absent lists keep the style's defaults.
  std::optional<llvm::SmallVector<PlanLayout>> inputLayouts,
      desiredInputLayouts, outputLayouts, desiredOutputLayouts;
  int64_t sequenceDim = 1;
  /// The mesh axis the style parallelizes over (n-D meshes).
  std::optional<int64_t> meshDim;
};

/// The top level of a plan document: {"mesh": ..., "mesh_dim": ...,
/// "plan": {...}}. The entries are parsed once the mesh is known
/// (parsePlanEntries), since a layout has one placement per mesh dimension.
struct PlanDocument {
  std::optional<std::string> mesh;
  std::optional<int64_t> meshDim;
  llvm::json::Object plan;
};

/// Parses `S(d)`, `R`, `P`, `P(op)` and PyTorch's spellings `Shard(d)`,
/// `Replicate()`, `Partial()`, `Partial(op)`.
FailureOr<PlanPlacement> parsePlanPlacement(llvm::StringRef text);

/// Parses the JSON text of a plan; the error says what is wrong.
llvm::Expected<PlanDocument> parsePlanDocument(llvm::StringRef text);

/// The entries of `plan` (module path -> a style object or a list of them),
/// sorted by key, for a mesh of rank `meshRank`; the error names the entry.
llvm::Expected<std::vector<PlanEntry>>
parsePlanEntries(const llvm::json::Object &plan, int64_t meshRank);

} // namespace mlir::dtensor

#endif // DTENSOR_FRONTEND_TPPLAN_H
