//===- HostLayout.h - layouts of tensors on a mesh, without IR --*- C++ -*-===//
//
// The layout model the compiler and the launchers share: a mesh (shape and
// optional device list), one placement per mesh dimension (S(d), R, P(op)),
// the block of a global tensor each mesh position holds (torch.chunk
// semantics, nested in mesh-dimension order where several mesh dimensions
// shard one tensor dimension), and the host-side movement of data by layout:
// distributing a global HostTensor to a position, reassembling a global
// tensor from every position's local part.
//
// It uses no MLIR and only standard types in its interface, so that per-rank
// launchers can use it on machines without the compiler. The compiler's
// Sharding/Layout.h converts #dtensor.layout attributes to it and takes its
// local-shape arithmetic from here.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SUPPORT_HOSTLAYOUT_H
#define DTENSOR_SUPPORT_HOSTLAYOUT_H

#include "dtensor/Support/HostTensor.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dtensor {

/// A size not known statically; equal to mlir::ShapedType::kDynamic.
constexpr int64_t kUnknownSize = std::numeric_limits<int64_t>::min();

/// How one mesh dimension places a tensor.
struct HostPlacement {
  enum class Kind { Shard, Replicate, Partial };
  enum class Reduce { Sum, Avg, Product, Min, Max };

  Kind kind = Kind::Replicate;
  /// The tensor dimension split (Shard only).
  int64_t dim = 0;
  /// The pending reduction (Partial only).
  Reduce reduce = Reduce::Sum;

  static HostPlacement shard(int64_t dim) { return {Kind::Shard, dim}; }
  static HostPlacement replicate() { return {}; }
  static HostPlacement partial(Reduce reduce) {
    return {Kind::Partial, 0, reduce};
  }
  bool isShard() const { return kind == Kind::Shard; }
  bool isReplicate() const { return kind == Kind::Replicate; }
  bool isPartial() const { return kind == Kind::Partial; }

  /// "S(0)", "R", "P(sum)" (as in #dtensor.layout).
  std::string str() const;
  /// Parses what str() prints.
  static std::optional<HostPlacement> parse(const std::string &text);

  bool operator==(const HostPlacement &other) const {
    return kind == other.kind && (kind != Kind::Shard || dim == other.dim) &&
           (kind != Kind::Partial || reduce == other.reduce);
  }
  bool operator!=(const HostPlacement &other) const {
    return !(*this == other);
  }
};

/// "sum", "avg", "product", "min", "max".
const char *getReduceName(HostPlacement::Reduce reduce);

/// A mesh of processes: row-major positions over `shape`; position p is
/// world rank `devices[p]`, or p where `devices` is empty.
struct HostMesh {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<int64_t> devices;

  /// The number of positions (the product of `shape`).
  int64_t size() const;
  /// The world rank at position `position`.
  int64_t rankAt(int64_t position) const;
  /// The position of world rank `rank`, or none if it is not in the mesh.
  std::optional<int64_t> positionOf(int64_t rank) const;
  /// Coordinates of a position, and back.
  std::vector<int64_t> coordsAt(int64_t position) const;
  int64_t positionAt(const std::vector<int64_t> &coords) const;
  /// Coordinates of world rank `rank`, or none if it is not in the mesh.
  std::optional<std::vector<int64_t>> coordsOf(int64_t rank) const;
};

/// The placements of a tensor, one per mesh dimension.
struct HostLayout {
  std::vector<HostPlacement> placements;

  /// "[S(0), R]".
  std::string str() const;
  /// Why this layout cannot place a rank-`tensorRank` tensor on `mesh`
  /// (LAYOUT2: one placement per mesh dimension, LAYOUT3: shard dimensions
  /// in range, LAYOUT4: one Partial op); empty if it can.
  std::string verify(const HostMesh &mesh, int64_t tensorRank) const;
  /// The mesh dimensions that shard each of `tensorRank` tensor dimensions,
  /// in split order (ascending mesh dimension).
  std::vector<std::vector<int64_t>>
  shardingAxesPerDim(int64_t tensorRank) const;
  /// The sizes of those mesh dimensions.
  std::vector<std::vector<int64_t>>
  splitsPerDim(const std::vector<int64_t> &meshShape, int64_t tensorRank) const;
  /// The reduction of the Partial placements, if there are any.
  std::optional<HostPlacement::Reduce> getPartialReduce() const;

  bool operator==(const HostLayout &other) const {
    return placements == other.placements;
  }
};

/// A block of a global tensor: per dimension [offsets[d], offsets[d] +
/// sizes[d]).
struct HostBlock {
  std::vector<int64_t> offsets, sizes;
  bool operator==(const HostBlock &other) const {
    return offsets == other.offsets && sizes == other.sizes;
  }
};

/// The block of a `globalShape` tensor that the mesh position at `coords`
/// holds under `layout`. Requires static sizes.
HostBlock getLocalBlock(const std::vector<int64_t> &globalShape,
                        const HostLayout &layout,
                        const std::vector<int64_t> &meshShape,
                        const std::vector<int64_t> &coords);

/// The local shape every position holds: per dimension the chunk size where
/// all positions agree, kUnknownSize where shards are uneven. kUnknownSize
/// global sizes stay unknown.
std::vector<int64_t>
getUniformLocalShape(const std::vector<int64_t> &globalShape,
                     const HostLayout &layout,
                     const std::vector<int64_t> &meshShape);

/// The largest local shape any position holds (ceil at every split): the
/// buffer size collectives pad to. kUnknownSize global sizes stay unknown.
std::vector<int64_t>
getPaddedLocalShape(const std::vector<int64_t> &globalShape,
                    const HostLayout &layout,
                    const std::vector<int64_t> &meshShape);

/// The value that leaves an element unchanged under `reduce` for `type`
/// (sum, avg: 0; product: 1; min: +inf or the type's largest value; max:
/// -inf or its lowest), as get/set of HostTensor carry it.
double getReduceIdentity(HostPlacement::Reduce reduce, ElementType type);

/// The local tensor of the mesh position at `coords`: its block of
/// `global`. Along Partial dimensions the global value is split so that
/// the reduction gives it back: for sum and product coordinate 0 holds it
/// and the others the identity; for avg, min and max every position holds
/// it.
HostTensor distribute(const HostTensor &global, const HostLayout &layout,
                      const HostMesh &mesh, const std::vector<int64_t> &coords);

/// One global tensor reassembled from the positions that share the
/// coordinates of the Replicate mesh dimensions.
struct HostReplica {
  /// The world ranks that contributed, ascending by position.
  std::vector<int64_t> ranks;
  HostTensor value;
};

struct HostReassembly {
  /// Empty on success; otherwise what was wrong with the locals.
  std::string error;
  /// One per combination of Replicate coordinates, first the one at
  /// coordinate 0 on every Replicate dimension.
  std::vector<HostReplica> replicas;
};

/// Reassembles a `type` tensor of `globalShape` laid out as `layout` from
/// `locals[p]`, the local tensor of mesh position p (mesh.size() of them):
/// blocks are placed by getLocalBlock, Partial dimensions reduced (folding
/// the contributions in position order, so no identity value is involved),
/// and every replica along Replicate dimensions reassembled on its own so
/// that the caller can check each.
HostReassembly reassemble(const std::vector<HostTensor> &locals,
                          ElementType type,
                          const std::vector<int64_t> &globalShape,
                          const HostLayout &layout, const HostMesh &mesh);

} // namespace mlir::dtensor

#endif // DTENSOR_SUPPORT_HOSTLAYOUT_H
