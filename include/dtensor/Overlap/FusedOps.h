//===- FusedOps.h - ring pipelines for fused comm + compute ops -*- C++ -*-===//
//
// The lowering of dtensor.all_gather_matmul and dtensor.matmul_reduce_scatter
// into per-step matmuls on chunks overlapped with asynchronous ring shifts
// (dtensor.permute in dtensor.async_start / dtensor.wait). Used by the
// dtensor-decompose-fused pass and by dtensor-lower-to-runtime, which
// decomposes fused ops before it lowers collectives. docs/fusion.md has the
// schedules.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_OVERLAP_FUSEDOPS_H
#define DTENSOR_OVERLAP_FUSEDOPS_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace mlir::dtensor {

/// Replaces `op`, a dtensor.all_gather_matmul or dtensor.matmul_reduce_scatter,
/// by its ring pipeline over the op's group (one step per group member, the
/// steps unrolled). An op that is the collective of a dtensor.async_start is
/// decomposed at the position of the async_start, and the waits of its
/// futures are replaced by the pipeline's results. Fails with a diagnostic
/// where the mesh does not resolve or the op is malformed.
LogicalResult decomposeFusedOp(Operation *op);

/// Decomposes every fused op nested in `root`.
LogicalResult decomposeFusedOps(Operation *root);

} // namespace mlir::dtensor

#endif // DTENSOR_OVERLAP_FUSEDOPS_H
