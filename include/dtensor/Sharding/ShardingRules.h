//===- ShardingRules.h - how ops may be sharded -----------------*- C++ -*-===//
//
// Each supported op is described by its loops ("factors"): which loop
// indexes which dimension of which tensor operand and result, and whether
// the loop is parallel, a reduction with a known combiner, or not shardable.
// From that description alone the propagation pass enumerates strategies
// (which operand and result layouts go together), for linalg structured ops
// straight from their indexing maps, and for tensor/arith/math ops from
// per-op rules.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SHARDING_SHARDINGRULES_H
#define DTENSOR_SHARDING_SHARDINGRULES_H

#include "dtensor/Dialect/DTensor/DTensor.h"

#include <string>

namespace mlir::dtensor {

struct ShardingLoop {
  enum class Kind {
    /// Splitting the loop splits every tensor it indexes; no communication.
    Parallel,
    /// Splitting the loop leaves each result Partial(combiner).
    Reduction,
    /// The loop must not be split (a softmax axis, a sliced or padded dim).
    Opaque,
  };
  Kind kind = Kind::Parallel;
  ReduceKind combiner = ReduceKind::Sum;
  /// The loop may be split only into chunks of one size: the outer dim of
  /// a reshape group whose other dims stay whole (5x4 -> 20: 5 rows over 4
  /// processes are chunks 2, 1, 1, 1 of 4 elements each, not the chunks
  /// 5, 5, 5, 5 of the 20), as DTensor's view rules require.
  bool evenOnly = false;
};

/// The loop structure of one op as far as sharding is concerned.
struct ShardingSpec {
  SmallVector<ShardingLoop> loops;
  /// For each operand: for each tensor dimension the loop indexing it, or
  /// -1 for an unsharded dimension. Non-tensor operands have no entries and
  /// `operandIsTensor` false.
  SmallVector<SmallVector<int64_t>> operandDims;
  SmallVector<bool> operandIsTensor;
  /// For each result: for each dimension the loop indexing it, or -1.
  SmallVector<SmallVector<int64_t>> resultDims;
  /// Operands that initialize the results (linalg outs): under a split
  /// reduction they must be Partial like the results.
  SmallVector<bool> operandIsInit;
  /// Operands in which every result is linear (x * c, x / c, -x, a
  /// contraction; not x + c): a P(sum) or P(avg) operand with all other
  /// operands Replicate gives P(sum) or P(avg) results.
  SmallVector<bool> operandIsLinear;
  /// The op is a sum of its operands (add, sub): all-P(sum) gives P(sum),
  /// all-P(avg) P(avg).
  bool isAdditive = false;
  /// The op is the max (or min) of its operands and of replicated values:
  /// any of its tensor operands P(max) (P(min)), the others Replicate,
  /// gives P(max) (P(min)) results.
  std::optional<ReduceKind> selects;
  /// The op only moves elements (tensor.concat): every tensor operand
  /// P(op) gives a P(op) result, for each reduction `op` (an elementwise
  /// reduction commutes with moving elements).
  bool movesElements = false;
  /// The op creates its result from nothing but scalars (tensor.empty,
  /// a splat constant, a fill of a constant): any layout is free, Partial
  /// only where the fill value is the reduction's identity.
  bool isCreation = false;
  /// Groups of loops one mesh axis may split together (each loop of a
  /// group shards the dims it indexes), besides splitting single loops:
  /// a routed matmul's tokens and experts (expert parallelism).
  SmallVector<SmallVector<int64_t>> jointSplits;
};

/// The spec of `op`, or failure with `why` set when the op is not supported.
FailureOr<ShardingSpec> getShardingSpec(Operation *op, std::string *why);

/// One way to shard an op: a layout for each tensor operand (null for
/// non-tensor operands) and each result.
struct ShardingStrategy {
  SmallVector<LayoutAttr> operands;
  SmallVector<LayoutAttr> results;
  /// Product of the mesh sizes that split the op's loops: the work each
  /// process does is 1/splitFactor of the whole.
  int64_t splitFactor = 1;
};

/// Every strategy of `spec` on `mesh`: each mesh axis splits one loop, or
/// none, or (where the op allows it) passes a Partial through: P(sum) or
/// P(avg) through a linear operand or every operand of an additive op,
/// P(max) (P(min)) through one or every operand of a max (min), any P(op)
/// through every operand of an op that only moves elements. Loops marked
/// `evenOnly` are enumerated like the others: the caller, which knows the
/// shapes, drops their uneven splits (see `splitsEvenOnlyLoopUnevenly`).
SmallVector<ShardingStrategy> enumerateStrategies(const ShardingSpec &spec,
                                                  MeshOp mesh);

/// True if `strategy` splits a dim that an `evenOnly` loop of `spec`
/// indexes into chunks of different sizes, on `op`'s operand or result
/// shapes (dynamic sizes count as uneven).
bool splitsEvenOnlyLoopUnevenly(Operation *op, const ShardingSpec &spec,
                                const ShardingStrategy &strategy,
                                MeshOp mesh);

/// True if a value that `op` creates from scalars (spec.isCreation) may be
/// given `layout` without communication: Partial needs every process to
/// hold the reduction's identity (0 for sum, 1 for product), or any value
/// for avg, min and max.
bool creationAllowsLayout(Operation *op, LayoutAttr layout);

} // namespace mlir::dtensor

#endif // DTENSOR_SHARDING_SHARDINGRULES_H
