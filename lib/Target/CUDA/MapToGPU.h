//===- MapToGPU.h - the kernels of dtensor-cuda-map-to-gpu -----*- C++ -*-===//
//
// The kernels dtensor-cuda-map-to-gpu (CUDAMapToGPU.cpp) builds for a linalg
// op on device buffers other than its generic loop nest, each as a flat
// scf.parallel loop that the pass then tiles and maps to the grid:
//
// - vectorized elementwise kernels (VectorizeElementwise.cpp): one thread
//   per chunk of `vector-bytes`, vector loads and stores, the body applied
//   to vectors;
// - row reductions on a warp (WarpReductions.cpp): one warp per row, lanes
//   combined with shuffles, and the elementwise op consuming the rows right
//   after (an RMSNorm's scaling) fused into the same kernel.
//
// docs/cuda-target.md ("Kernels") describes both.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_TARGET_CUDA_MAPTOGPU_H
#define DTENSOR_LIB_TARGET_CUDA_MAPTOGPU_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace mlir::dtensor::cuda {

//===----------------------------------------------------------------------===//
// Vectorized elementwise kernels (VectorizeElementwise.cpp)
//===----------------------------------------------------------------------===//

/// How a vectorized op reads a buffer operand, by its indexing map over the
/// (flattened) loop space: all of it (identity map: a vector at the flat
/// index), its trailing loop dims (a bias: a vector at flat % divisor), or
/// its leading loop dims (a per-row value: one scalar at flat / divisor,
/// broadcast). `divisor` is the product of the loop sizes the operand does
/// not see at the front (trailing) or at the back (leading).
struct Access {
  enum Kind { Full, Trailing, Leading } kind = Full;
  int64_t divisor = 1;
};

/// How `map` reads an operand of an op over static `loops`, if it is one of
/// the accesses above.
std::optional<Access> classifyAccess(AffineMap map, ArrayRef<int64_t> loops);

/// Lanes per thread such that the widest element type moves `vectorBytes`
/// per access, if `op` is an elementwise op that can use vector accesses:
/// all loops parallel and static, every buffer of identity layout (so its
/// base is the start of an allocation, which is 16-byte aligned) read as
/// `classifyAccess` allows with the chunks of `lanes` elements never crossing a
/// row of a trailing or leading operand, the outputs written whole, scalar
/// operands otherwise, a body of elementwise-mappable ops and constants, and
/// a total size divisible by the lane count.
std::optional<int64_t> vectorLanes(linalg::LinalgOp op, int64_t vectorBytes);

/// `op`'s buffer operands viewed as 1-D (collapse_shape before the
/// insertion point), its scalar operands as they are.
SmallVector<Value> flatOperands(IRRewriter &rewriter, linalg::LinalgOp op);

/// The chunk of `lanes` elements of `op`'s loop space that starts at flat
/// index `index`, at the insertion point: vector.load / vector.store of the
/// 1-D views `flat` (flatOperands) aligned to the access size, the body
/// applied to vectors. `given` may supply an input operand's value (a
/// scalar, broadcast to the chunk, or the chunk's vector) instead of a
/// load.
void emitVectorChunk(IRRewriter &rewriter, linalg::LinalgOp op, int64_t lanes,
                     ArrayRef<Value> flat, Value index,
                     function_ref<Value(OpOperand &)> given = nullptr);

/// `op` as a parallel loop over chunks of `lanes` elements of its loop
/// space (emitVectorChunk).
void vectorizeElementwise(IRRewriter &rewriter, linalg::LinalgOp op,
                          int64_t lanes);

//===----------------------------------------------------------------------===//
// Row reductions on a warp (WarpReductions.cpp)
//===----------------------------------------------------------------------===//

/// The combiner of a row reduction that one warp can compute, if `op` is
/// one: a single output on buffers indexed by the leading (parallel) loops
/// in order, all reduction loops trailing, static sizes with at least a
/// warp's worth of elements per row, every buffer input read along the
/// innermost loop having it as its last, unit-stride index (coalesced lanes),
/// and a body `yield combiner(acc, f(ins))` whose accumulator (32 bits, a
/// shuffle's width) is used by the combiner only, the combiner an
/// associative and commutative arith op.
Operation *warpReducible(linalg::LinalgOp op, int64_t blockSize);

/// How many consecutive elements a lane of a warp reduction loads at once
/// (`vectorBytes` of the widest input), or 1: every buffer input either
/// reads along the innermost loop (its last index exactly that loop, no
/// other index using it; identity layout and static shape, so a chunk is
/// aligned) or does not see it (one scalar for the chunk), and the
/// innermost loop is a multiple of the chunk.
int64_t reductionLanes(linalg::LinalgOp op, int64_t vectorBytes);

/// The elementwise op that can run in `op`'s kernel, each warp applying it
/// to its row right after reducing the row (RMSNorm's scaling after its sum
/// of squares): the next op after `op` that touches memory (only
/// allocations, views and constants in between), parallel over exactly
/// `op`'s loops (the rows, then `op`'s one reduced dim), vectorizable
/// (`lanes` elements per chunk, a chunk within a row), reading `op`'s result
/// by row (taken from registers) and writing no buffer that a warp of
/// another row reads: its outputs are not `op`'s result nor any buffer
/// either op reads other than element by element.
linalg::LinalgOp rowConsumer(linalg::LinalgOp op, int64_t vectorBytes,
                             int64_t &lanes);

/// `op` as a flat parallel loop over rows x 32 lanes: lane l of a row folds
/// the row's elements l, l + 32, ... (consecutive lanes read consecutive
/// elements: coalesced), the warp combines its lanes with shuffles, and
/// lane 0 folds the result into the output element (into `start` instead of
/// the element's old value when given: a folded fill). Rows never straddle a
/// warp (blocks are whole warps), so every shuffle sees its 32 lanes.
void warpReduce(IRRewriter &rewriter, linalg::LinalgOp op, Operation *combiner,
                int64_t lanes, Value start, linalg::LinalgOp consumer = nullptr,
                int64_t consumerLanes = 0);

} // namespace mlir::dtensor::cuda

#endif // DTENSOR_LIB_TARGET_CUDA_MAPTOGPU_H
