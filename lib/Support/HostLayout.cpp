//===- HostLayout.cpp - layouts of tensors on a mesh, without IR ----------===//

#include "dtensor/Support/HostLayout.h"
#include "dtensor/Support/ChunkMath.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

using namespace mlir::dtensor;

using Reduce = HostPlacement::Reduce;

static constexpr Reduce kReduces[] = {Reduce::Sum, Reduce::Avg, Reduce::Product,
                                      Reduce::Min, Reduce::Max};

const char *mlir::dtensor::getReduceName(Reduce reduce) {
  switch (reduce) {
  case Reduce::Sum:
    return "sum";
  case Reduce::Avg:
    return "avg";
  case Reduce::Product:
    return "product";
  case Reduce::Min:
    return "min";
  case Reduce::Max:
    return "max";
  }
  return "";
}

//===----------------------------------------------------------------------===//
// HostPlacement
//===----------------------------------------------------------------------===//

std::string HostPlacement::str() const {
  switch (kind) {
  case Kind::Shard:
    return "S(" + std::to_string(dim) + ")";
  case Kind::Replicate:
    return "R";
  case Kind::Partial:
    return std::string("P(") + getReduceName(reduce) + ")";
  }
  return "";
}

std::optional<HostPlacement> HostPlacement::parse(const std::string &text) {
  if (text == "R")
    return replicate();
  if (text.size() < 4 || text[1] != '(' || text.back() != ')')
    return std::nullopt;
  std::string inner = text.substr(2, text.size() - 3);
  if (text[0] == 'S') {
    if (inner.empty() || inner.size() > 18 ||
        !std::all_of(inner.begin(), inner.end(),
                     [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    return shard(std::stoll(inner));
  }
  if (text[0] == 'P')
    for (Reduce reduce : kReduces)
      if (inner == getReduceName(reduce))
        return partial(reduce);
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// HostMesh
//===----------------------------------------------------------------------===//

int64_t HostMesh::size() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

int64_t HostMesh::rankAt(int64_t position) const {
  return devices.empty() ? position : devices[position];
}

std::optional<int64_t> HostMesh::positionOf(int64_t rank) const {
  int64_t position = rank;
  if (!devices.empty()) {
    auto it = std::find(devices.begin(), devices.end(), rank);
    if (it == devices.end())
      return std::nullopt;
    position = it - devices.begin();
  }
  if (position < 0 || position >= size())
    return std::nullopt;
  return position;
}

std::vector<int64_t> HostMesh::coordsAt(int64_t position) const {
  std::vector<int64_t> coords(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coords[d] = position % shape[d];
    position /= shape[d];
  }
  return coords;
}

int64_t HostMesh::positionAt(const std::vector<int64_t> &coords) const {
  int64_t position = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    position = position * shape[d] + coords[d];
  return position;
}

std::optional<std::vector<int64_t>> HostMesh::coordsOf(int64_t rank) const {
  std::optional<int64_t> position = positionOf(rank);
  if (!position)
    return std::nullopt;
  return coordsAt(*position);
}

//===----------------------------------------------------------------------===//
// HostLayout
//===----------------------------------------------------------------------===//

std::string HostLayout::str() const {
  std::string text = "[";
  for (size_t i = 0; i < placements.size(); ++i)
    text += (i ? ", " : "") + placements[i].str();
  return text + "]";
}

std::string HostLayout::verify(const HostMesh &mesh, int64_t tensorRank) const {
  if (placements.size() != mesh.shape.size())
    return "layout " + str() + " has " + std::to_string(placements.size()) +
           " placements for the " + std::to_string(mesh.shape.size()) +
           "-D mesh @" + mesh.name;
  std::optional<Reduce> partial;
  for (const HostPlacement &p : placements) {
    if (p.isShard() && (p.dim < 0 || p.dim >= tensorRank))
      return "placement " + p.str() + " is out of range for a rank-" +
             std::to_string(tensorRank) + " tensor";
    if (!p.isPartial())
      continue;
    if (partial && *partial != p.reduce)
      return "layout " + str() + " mixes Partial reductions";
    partial = p.reduce;
  }
  return "";
}

std::vector<std::vector<int64_t>>
HostLayout::shardingAxesPerDim(int64_t tensorRank) const {
  std::vector<std::vector<int64_t>> axes(tensorRank);
  for (size_t axis = 0; axis < placements.size(); ++axis) {
    const HostPlacement &p = placements[axis];
    if (p.isShard() && p.dim >= 0 && p.dim < tensorRank)
      axes[p.dim].push_back(axis);
  }
  return axes;
}

std::vector<std::vector<int64_t>>
HostLayout::splitsPerDim(const std::vector<int64_t> &meshShape,
                         int64_t tensorRank) const {
  std::vector<std::vector<int64_t>> splits;
  for (const std::vector<int64_t> &axes : shardingAxesPerDim(tensorRank)) {
    std::vector<int64_t> sizes;
    for (int64_t axis : axes)
      sizes.push_back(meshShape[axis]);
    splits.push_back(std::move(sizes));
  }
  return splits;
}

std::optional<Reduce> HostLayout::getPartialReduce() const {
  for (const HostPlacement &p : placements)
    if (p.isPartial())
      return p.reduce;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Shapes and blocks
//===----------------------------------------------------------------------===//

HostBlock mlir::dtensor::getLocalBlock(const std::vector<int64_t> &globalShape,
                                       const HostLayout &layout,
                                       const std::vector<int64_t> &meshShape,
                                       const std::vector<int64_t> &coords) {
  int64_t rank = globalShape.size();
  HostBlock block{std::vector<int64_t>(rank, 0), globalShape};
  std::vector<std::vector<int64_t>> axes = layout.shardingAxesPerDim(rank);
  for (int64_t dim = 0; dim < rank; ++dim) {
    std::vector<int64_t> splits, indices;
    for (int64_t axis : axes[dim]) {
      splits.push_back(meshShape[axis]);
      indices.push_back(coords[axis]);
    }
    Chunk chunk = nestedChunkOf(globalShape[dim], splits, indices);
    block.offsets[dim] = chunk.offset;
    block.sizes[dim] = chunk.size;
  }
  return block;
}

std::vector<int64_t>
mlir::dtensor::getUniformLocalShape(const std::vector<int64_t> &globalShape,
                                    const HostLayout &layout,
                                    const std::vector<int64_t> &meshShape) {
  std::vector<int64_t> shape(globalShape);
  std::vector<std::vector<int64_t>> splits =
      layout.splitsPerDim(meshShape, shape.size());
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    if (shape[dim] == kUnknownSize || splits[dim].empty())
      continue;
    std::optional<int64_t> uniform = uniformChunkSize(shape[dim], splits[dim]);
    shape[dim] = uniform ? *uniform : kUnknownSize;
  }
  return shape;
}

std::vector<int64_t>
mlir::dtensor::getPaddedLocalShape(const std::vector<int64_t> &globalShape,
                                   const HostLayout &layout,
                                   const std::vector<int64_t> &meshShape) {
  std::vector<int64_t> shape(globalShape);
  std::vector<std::vector<int64_t>> splits =
      layout.splitsPerDim(meshShape, shape.size());
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    if (shape[dim] == kUnknownSize)
      continue;
    for (int64_t n : splits[dim])
      shape[dim] = maxChunkSize(shape[dim], n);
  }
  return shape;
}

//===----------------------------------------------------------------------===//
// Moving data by layout
//===----------------------------------------------------------------------===//

/// The largest (or lowest) value of an element type that a double holds
/// and converts back to it: infinities for floating-point types; for
/// integers the extremes of the type, rounded towards 0 to a double.
static double extremeOf(ElementType type, bool largest) {
  // Floating-point types keep 0.5, integer types truncate it (defined for
  // every type, unlike converting an infinity to an integer).
  HostTensor probe(type, {1});
  probe.set(0, 0.5);
  if (probe.get(0) != 0)
    return largest ? std::numeric_limits<double>::infinity()
                   : -std::numeric_limits<double>::infinity();
  int bits = 8 * getByteWidth(type) - 1;
  double lowest = -std::ldexp(1.0, bits);
  // 2^bits - 1, or below it the nearest double (spacing 2^(bits - 53)).
  double highest =
      std::ldexp(1.0, bits) - std::ldexp(1.0, std::max(0, bits - 53));
  return largest ? highest : lowest;
}

double mlir::dtensor::getReduceIdentity(Reduce reduce, ElementType type) {
  switch (reduce) {
  case Reduce::Sum:
  case Reduce::Avg:
    return 0;
  case Reduce::Product:
    return 1;
  case Reduce::Min:
    return extremeOf(type, /*largest=*/true);
  case Reduce::Max:
    return extremeOf(type, /*largest=*/false);
  }
  return 0;
}

HostTensor mlir::dtensor::distribute(const HostTensor &global,
                                     const HostLayout &layout,
                                     const HostMesh &mesh,
                                     const std::vector<int64_t> &coords) {
  std::vector<int64_t> shape(global.shape.begin(), global.shape.end());
  HostBlock block = getLocalBlock(shape, layout, mesh.shape, coords);
  HostTensor local = sliceHostTensor(global, block.offsets, block.sizes);
  for (size_t axis = 0; axis < layout.placements.size(); ++axis) {
    const HostPlacement &p = layout.placements[axis];
    if (!p.isPartial() || coords[axis] == 0 ||
        (p.reduce != Reduce::Sum && p.reduce != Reduce::Product))
      continue;
    double identity = getReduceIdentity(p.reduce, global.type);
    for (int64_t i = 0, n = local.getNumElements(); i < n; ++i)
      local.set(i, identity);
  }
  return local;
}

static double combine(Reduce reduce, double acc, double value) {
  switch (reduce) {
  case Reduce::Sum:
  case Reduce::Avg:
    return acc + value;
  case Reduce::Product:
    return acc * value;
  case Reduce::Min:
    return std::min(acc, value);
  case Reduce::Max:
    return std::max(acc, value);
  }
  return acc;
}

HostReassembly
mlir::dtensor::reassemble(const std::vector<HostTensor> &locals,
                          ElementType type,
                          const std::vector<int64_t> &globalShape,
                          const HostLayout &layout, const HostMesh &mesh) {
  HostReassembly result;
  if (std::string why = layout.verify(mesh, globalShape.size()); !why.empty()) {
    result.error = why;
    return result;
  }
  if (static_cast<int64_t>(locals.size()) != mesh.size()) {
    result.error = "expected " + std::to_string(mesh.size()) +
                   " local tensors for mesh @" + mesh.name + ", got " +
                   std::to_string(locals.size());
    return result;
  }
  std::optional<Reduce> partial = layout.getPartialReduce();
  // Accumulators in doubles: reductions of narrow types do not round at
  // every step, and each element is folded from its first contribution.
  struct Accumulator {
    std::vector<int64_t> ranks;
    std::vector<double> values;
    std::vector<int64_t> count;
  };
  std::map<std::vector<int64_t>, Accumulator> replicas;
  std::vector<std::vector<int64_t>> order;
  HostTensor shapeProbe(type, globalShape);
  int64_t numElements = shapeProbe.getNumElements();
  for (int64_t position = 0; position < mesh.size(); ++position) {
    std::vector<int64_t> coords = mesh.coordsAt(position);
    std::vector<int64_t> key;
    for (size_t axis = 0; axis < layout.placements.size(); ++axis)
      if (layout.placements[axis].isReplicate())
        key.push_back(coords[axis]);
    auto [it, inserted] = replicas.try_emplace(key);
    Accumulator &acc = it->second;
    if (inserted) {
      order.push_back(key);
      acc.values.assign(numElements, 0);
      acc.count.assign(numElements, 0);
    }
    int64_t rank = mesh.rankAt(position);
    acc.ranks.push_back(rank);
    const HostTensor &local = locals[position];
    HostBlock block = getLocalBlock(globalShape, layout, mesh.shape, coords);
    if (local.type != type ||
        std::vector<int64_t>(local.shape.begin(), local.shape.end()) !=
            block.sizes) {
      std::string want, got;
      for (int64_t s : block.sizes)
        want += std::to_string(s) + "x";
      for (int64_t s : local.shape)
        got += std::to_string(s) + "x";
      result.error = "rank " + std::to_string(rank) + " holds a " + got +
                     getElementTypeName(local.type).str() +
                     " tensor, its block is " + want +
                     getElementTypeName(type).str();
      return result;
    }
    forEachInBlock(globalShape, block.offsets, block.sizes,
                   [&](int64_t g, int64_t l) {
                     double v = local.get(l);
                     if (acc.count[g]++ == 0 || !partial)
                       acc.values[g] = v;
                     else
                       acc.values[g] = combine(*partial, acc.values[g], v);
                   });
  }
  for (const std::vector<int64_t> &key : order) {
    Accumulator &acc = replicas[key];
    HostReplica replica{acc.ranks, HostTensor(type, globalShape)};
    for (int64_t i = 0; i < numElements; ++i) {
      double v = acc.values[i];
      if (partial == Reduce::Avg && acc.count[i] > 0)
        v /= acc.count[i];
      replica.value.set(i, v);
    }
    result.replicas.push_back(std::move(replica));
  }
  return result;
}
