//===- CommAnalysis.h - static communication report ------------*- C++ -*-===//
//
// Counts the collectives of per-rank programs: for each function and each
// collective kind, how many there are, how many bytes each rank puts into
// them and how long the cost model says they take. The static equivalent of
// PyTorch's CommDebugMode; the `dtensor-comm-report` pass prints it.
//
// Units follow CostModel.h: bytes and microseconds.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_ANALYSIS_COMMANALYSIS_H
#define DTENSOR_ANALYSIS_COMMANALYSIS_H

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Analysis/CostModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <map>
#include <string>

namespace mlir::dtensor {

/// The communication of one collective op, as the report counts it.
struct CollectiveTraffic {
  /// The op mnemonic without the dialect prefix, e.g. "all_gather".
  std::string kind;
  /// The algorithm the cost model times the op with. Fused ops are timed as
  /// their collective part (all_gather for all_gather_matmul, reduce_scatter
  /// for matmul_reduce_scatter); coalesced ops as one collective over the
  /// concatenation of their buffers.
  CollectiveKind modelKind = CollectiveKind::AllReduce;
  /// Bytes this rank contributes: the local operand tensors going into the
  /// collective (A for all_gather_matmul, the product A @ B for
  /// matmul_reduce_scatter).
  int64_t bytesPerRank = 0;
  /// The full-buffer size collectiveTimeUs expects (see CostModel.h).
  int64_t fullBufferBytes = 0;
  /// Product of the mesh sizes of the op's mesh axes.
  int64_t groupSize = 1;
  /// Whether some tensor had dynamic dims; their sizes are not counted.
  bool hasDynamic = false;
  /// Whether the op is the body of a dtensor.async_start.
  bool isAsync = false;
};

/// Totals over the collectives of one kind (or of all kinds).
struct CollectiveStats {
  /// Number of collective ops.
  int64_t count = 0;
  /// How many of them are wrapped in dtensor.async_start.
  int64_t asyncCount = 0;
  /// Sum of the bytes each rank contributes.
  int64_t bytesPerRank = 0;
  /// Sum of the modelled times, in microseconds.
  double timeUs = 0;
  /// Whether some tensor had dynamic dims: the bytes and times count the
  /// static dims only.
  bool hasDynamic = false;

  /// Adds one collective with modelled time `timeUs`.
  void add(const CollectiveTraffic &traffic, double timeUs);
};

/// Collectives per kind and in total.
struct CommCounts {
  /// Per collective kind (op mnemonic); kinds that do not occur are absent.
  std::map<std::string, CollectiveStats> collectives;
  /// All kinds together.
  CollectiveStats total;
};

/// The collectives of one function.
struct FunctionCommReport {
  /// The function's symbol name.
  std::string name;
  /// Per collective kind (op mnemonic); kinds that do not occur are absent.
  std::map<std::string, CollectiveStats> collectives;
  /// All kinds together.
  CollectiveStats total;
  /// For a function marked `dtensor.forward_results = N`: the collectives
  /// its first N results depend on (the forward) and all others (the
  /// backward). A collective counts where the top-level op holding it (an
  /// async_start, or the collective itself) lies.
  /// Keys "forward" and "backward"; empty for other functions.
  std::map<std::string, CommCounts> phases;
};

/// Size in bytes of a ranked tensor type, counting its static dims only
/// (sets `hasDynamic` if it has dynamic dims). Sub-byte elements are
/// rounded up to whole bytes. Returns std::nullopt for types the report
/// cannot size: unranked tensors, non-tensors, and element types other than
/// integers, floats, index and complex numbers.
std::optional<int64_t> getStaticTensorBytes(Type type, bool &hasDynamic);

/// The traffic of one collective. Resolves the op's mesh through
/// `symbolTable`; emits a diagnostic on the op and fails if the mesh symbol
/// does not name a dtensor.mesh, the mesh axes do not fit it, or a tensor
/// cannot be sized.
FailureOr<CollectiveTraffic>
getCollectiveTraffic(CollectiveOpInterface op,
                     SymbolTableCollection &symbolTable);

/// The report of one function: every collective in its body, at any
/// nesting depth, counted once. Fails after diagnostics if a collective
/// cannot be analysed.
FailureOr<FunctionCommReport>
computeFunctionCommReport(FunctionOpInterface func, const HardwareModel &hw,
                          SymbolTableCollection &symbolTable);

/// The reports of the module's top-level functions with a body, in program
/// order. Fails after diagnostics if a collective cannot be analysed.
FailureOr<SmallVector<FunctionCommReport>>
computeCommReport(ModuleOp module, const HardwareModel &hw);

} // namespace mlir::dtensor

#endif // DTENSOR_ANALYSIS_COMMANALYSIS_H
