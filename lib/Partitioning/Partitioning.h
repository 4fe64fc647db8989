//===- Partitioning.h - shared machinery of dtensor-partition ---*- C++ -*-===//
//
// What the files of the partition pass share (private to lib/Partitioning):
//
// - PerRankBuilder: builds per-rank code on one mesh: this process's mesh
//   coordinates, the index arithmetic of its chunk of a dimension (torch.chunk
//   semantics), and padding and slicing along one tensor dimension
//   (PerRankBuilder.cpp);
// - the lowering of one redistribution step to its dtensor collective or
//   local step (RedistributeToCollectives.cpp);
// - the expert-parallel partitioning of dtensor.routed_matmul
//   (PartitionMoE.cpp).
//
// The pass itself and the partitioning of every other op are in
// Partition.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_PARTITIONING_PARTITIONING_H
#define DTENSOR_LIB_PARTITIONING_PARTITIONING_H

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Sharding/Layout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <utility>

namespace mlir::dtensor {

/// Builds per-rank code on `mesh` at the insertion point of `builder`, at
/// the location set by setLoc. Index arithmetic works on OpFoldResults and
/// folds constants as it goes, so static shapes stay static.
class PerRankBuilder {
public:
  /// `coordLoc` is the location of the dtensor.coord ops, which are built
  /// once per mesh axis at the start of the block set by setEntry.
  PerRankBuilder(OpBuilder &builder, MeshOp mesh, Location coordLoc)
      : builder(builder), mesh(mesh), coordLoc(coordLoc), currentLoc(coordLoc) {
  }

  OpBuilder &getBuilder() { return builder; }
  MeshOp getMesh() { return mesh; }
  Location getLoc() const { return currentLoc; }
  void setLoc(Location loc) { currentLoc = loc; }
  /// The block whose start holds the coordinates (the function's entry).
  void setEntry(Block *block) { entry = block; }

  /// The layout of global `value` (replicated if it has none).
  LayoutAttr layoutOf(Value global);
  /// The type this process holds of global `value`.
  RankedTensorType localType(Value global);

  // Index arithmetic.
  /// This process's coordinate along mesh `axis`.
  Value coord(int64_t axis);
  OpFoldResult constant(int64_t v) { return builder.getIndexAttr(v); }
  OpFoldResult add(OpFoldResult a, OpFoldResult b);
  OpFoldResult sub(OpFoldResult a, OpFoldResult b);
  OpFoldResult mul(OpFoldResult a, int64_t b);
  OpFoldResult min(OpFoldResult a, OpFoldResult b);
  OpFoldResult ceilDiv(OpFoldResult a, int64_t b);
  /// This process's chunk [offset, offset + size) of a dim of `length`
  /// split over mesh `axis`.
  std::pair<OpFoldResult, OpFoldResult> chunk(OpFoldResult length,
                                              int64_t axis);
  /// Offset and size of this process's part of `dim` under `layout`,
  /// considering only the first `numAxes` axes that shard it.
  std::pair<OpFoldResult, OpFoldResult>
  localExtent(RankedTensorType global, LayoutAttr layout, int64_t dim,
              std::optional<size_t> numAxes = std::nullopt);

  // Tensor helpers.
  Value zeroOf(Type elementType);
  /// `value` padded with zeros along `dim` to `to` elements.
  Value padAlong(Value value, int64_t dim, OpFoldResult to);
  /// Elements [offset, offset + size) of `value` along `dim`.
  Value sliceAlong(Value value, int64_t dim, OpFoldResult offset,
                   OpFoldResult size);
  /// For padAlong and sliceAlong: if `value` has a static dim of size 0,
  /// a tensor.empty of its sizes with `dim` resized to `size` (it has no
  /// elements either); null otherwise. Upstream's slice verifiers reject
  /// every static offset into a static dim of size 0, even for a size-0
  /// slice, and bufferizing a pad slices its result.
  Value emptyAlong(Value value, int64_t dim, OpFoldResult size);
  /// `value` as `type` (a tensor.cast where the types differ).
  Value castTo(Value value, Type type);

private:
  OpBuilder &builder;
  MeshOp mesh;
  Location coordLoc;
  Location currentLoc;
  Block *entry = nullptr;
  DenseMap<int64_t, Value> coords;
};

/// Lowers `op`, a redistribution that changes the placement of at most one
/// mesh axis with more than one process (one step of a planned chain), to
/// per-rank code: the step's dtensor collective, with uneven shards padded
/// to ceil(L/n) around it and trimmed after, or its local step (a chunk, a
/// rescale). `input` is this process's part of op's input. Returns this
/// process's part of the result, of the local type of `op.getTo()`; emits an
/// error on `op` and fails where the redistribution is not one step.
FailureOr<Value> lowerRedistributionStep(PerRankBuilder &pb, RedistributeOp op,
                                         Value input);

/// True if the experts (w dim 0) of `op` are sharded: partitionRoutedMatmul
/// partitions it; otherwise it partitions as any other op.
bool hasShardedExperts(RoutedMatmulOp op);

/// The expert-parallel routed matmul (experts sharded along one mesh axis,
/// tokens along the same axis): dispatch of each token's rows to the ranks
/// holding its experts (all_to_all_v), the local experts, and the combine
/// back. `x`, `ids` and `w` are this process's parts of op's operands.
/// Returns this process's part of the result; emits an error on `op` and
/// fails where expert parallelism does not apply.
FailureOr<Value> partitionRoutedMatmul(PerRankBuilder &pb, RoutedMatmulOp op,
                                       Value x, Value ids, Value w);

} // namespace mlir::dtensor

#endif // DTENSOR_LIB_PARTITIONING_PARTITIONING_H
