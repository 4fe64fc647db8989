//===- Layout.h - layouts applied to tensors and meshes ---------*- C++ -*-===//

#ifndef DTENSOR_SHARDING_LAYOUT_H
#define DTENSOR_SHARDING_LAYOUT_H

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Support/EntryLayouts.h"
#include "dtensor/Support/HostLayout.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::dtensor {

/// The IR-free forms of layouts and meshes (dtensor/Support/HostLayout.h),
/// where the shard arithmetic lives.
HostPlacement toHostPlacement(PlacementAttr placement);
HostLayout toHostLayout(LayoutAttr layout);
HostMesh toHostMesh(MeshOp mesh);
/// The host element type of an MLIR element type, if hosts can hold it.
std::optional<ElementType> getHostElementType(Type elementType);

/// The layouts of `func`'s arguments and results after partitioning (each
/// with `dtensor.layout` and `dtensor.global_type`), with every mesh of its
/// module in order. Emits an error on `func` and fails where one lacks them
/// or has an element type hosts cannot hold.
FailureOr<EntryLayouts> getEntryLayouts(FunctionOpInterface func);

/// The layout with every placement Replicate on `mesh`.
LayoutAttr getReplicatedLayout(MeshOp mesh);

/// The layout equal to `layout` except placement `axis` set to `placement`.
LayoutAttr withPlacement(LayoutAttr layout, int64_t axis,
                         PlacementAttr placement);

/// True if `placements` mix Partial placements of different reductions,
/// which no layout may (LAYOUT4).
bool mixesPartialReductions(ArrayRef<PlacementAttr> placements);

/// Sizes of the mesh axes that shard each tensor dimension, in split order.
SmallVector<SmallVector<int64_t>> splitsPerDim(LayoutAttr layout, MeshOp mesh,
                                               int64_t rank);

/// The local shape every process holds of a tensor of `globalShape` laid
/// out as `layout`: the chunk size where all processes agree, dynamic where
/// shards are uneven. Dynamic global sizes stay dynamic.
SmallVector<int64_t> getLocalShape(ArrayRef<int64_t> globalShape,
                                   LayoutAttr layout, MeshOp mesh);

/// The largest local shape any process holds (ceil at every split): the
/// buffer size collectives pad to.
SmallVector<int64_t> getPaddedLocalShape(ArrayRef<int64_t> globalShape,
                                         LayoutAttr layout, MeshOp mesh);

RankedTensorType getLocalType(RankedTensorType globalType, LayoutAttr layout,
                              MeshOp mesh);

/// Bytes of one element of `type`'s element type (at least 1).
int64_t getElementBytes(Type elementType);

/// The layouts recorded on `op`'s results by propagation (empty if none).
SmallVector<LayoutAttr> getResultLayouts(Operation *op);
void setResultLayouts(Operation *op, ArrayRef<LayoutAttr> layouts);

/// The layout of `value` after propagation: from its defining op (the `to`
/// of a redistribute, the layout of an annotate or from_local, else the
/// op's `dtensor.layouts`) or its function argument's `dtensor.layout`.
LayoutAttr getLayoutOf(Value value);

/// Checks the layouts `func` carries as discardable attributes: each
/// argument's and result's `dtensor.layout` and each op's `dtensor.layouts`
/// (one entry per result) is a layout that LAYOUT1-LAYOUT3 accept for its
/// tensor. Emits a diagnostic and fails otherwise.
LogicalResult verifyLayoutAttrs(FunctionOpInterface func);

/// Rewrites the local-tensor boundaries of `func` into the global view, as
/// a program that builds DTensors with `DTensor.from_local` and hands
/// local tensors back with `to_local` means them:
///  - an argument read only by `from_local` ops of one layout becomes an
///    argument of the global type laid out so (`dtensor.layout`): each
///    rank's local part is what it passed;
///  - a `to_local` whose one use is the function's return becomes a result
///    of the global type laid out so: each rank returns its local part;
///  - a `from_local`/`to_local` whose layout replicates on every mesh
///    dimension (local and global types equal) is a `dtensor.annotate`.
/// Other `from_local`/`to_local` ops (a sharded or partial local value in
/// the middle of a function) are errors. Both propagation and the
/// unsharded reference (Session::stripPlacements) call this, so that they
/// agree on the global signature.
LogicalResult globalizeLocalBoundaries(FunctionOpInterface func);

} // namespace mlir::dtensor

#endif // DTENSOR_SHARDING_LAYOUT_H
