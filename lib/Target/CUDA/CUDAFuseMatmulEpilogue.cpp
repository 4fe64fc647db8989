//===- CUDAFuseMatmulEpilogue.cpp - residual adds into the matmul ---------===//
//
// Runs on tensors, before elementwise fusion: `r + A.B` (a residual add of
// a matmul's result) becomes the matmul accumulating onto a copy of r,
//
//   %c = bufferization.alloc_tensor() copy(%r)
//   %d = linalg.matmul ins(%a, %b) outs(%c)
//
// which bufferizes to an allocation, a memref.copy and a matmul with
// accumulate, and `dtensor-cuda-matmul-to-runtime` folds the copy into the
// cuBLASLt call: D = A.B + R with R read in the GEMM's epilogue (beta = 1),
// no add kernel and no copy. r itself is never written (it may be a
// function argument, or read again later). Numerics: the sum is taken in
// f32 on the f32 accumulator and rounded once, where the add kernel rounds
// the product to the element type first.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_CUDAFUSEMATMULEPILOGUEPASS
#include "dtensor/Target/CUDA/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// Whether `value` is block argument `arg` of the body, or `extf` of it
/// from the element type `element` when `extended` is set.
static bool isInput(Value value, BlockArgument arg, bool extended,
                    Type element) {
  if (!extended)
    return value == arg;
  auto ext = value.getDefiningOp<arith::ExtFOp>();
  return ext && ext.getIn() == arg && arg.getType() == element;
}

/// Whether `op` computes out = in0 + in1 elementwise: two inputs and one
/// init of one tensor type, identity maps, parallel loops, and a body
/// `yield addf(in0, in1)` in the element type or
/// `yield truncf(addf(extf in0, extf in1))` through a wider float.
static bool isElementwiseAdd(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Type type = op.getResult(0).getType();
  if (!isa<RankedTensorType>(type) || op.getDpsInputs()[0].getType() != type ||
      op.getDpsInputs()[1].getType() != type)
    return false;
  Type element = getElementTypeOrSelf(type);
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  if (yield.getNumOperands() != 1)
    return false;
  Value sum = yield.getOperand(0);
  bool extended = false;
  if (auto trunc = sum.getDefiningOp<arith::TruncFOp>()) {
    if (trunc.getType() != element)
      return false;
    sum = trunc.getIn();
    extended = true;
  }
  auto add = sum.getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != body ||
      (!extended && add.getType() != element))
    return false;
  BlockArgument in0 = body->getArgument(0), in1 = body->getArgument(1);
  Value lhs = add.getLhs(), rhs = add.getRhs();
  return (isInput(lhs, in0, extended, element) &&
          isInput(rhs, in1, extended, element)) ||
         (isInput(lhs, in1, extended, element) &&
          isInput(rhs, in0, extended, element));
}

/// The contraction whose only use is operand `number` of `add`, in the same
/// block, computed from zero (its init a zero fill) into `add`'s type.
static linalg::LinalgOp zeroInitContraction(linalg::GenericOp add,
                                            unsigned number) {
  Value value = add.getDpsInputs()[number];
  auto op = value.getDefiningOp<linalg::LinalgOp>();
  // In the add's block: the fused matmul takes the add's place, and must
  // not move into a loop.
  if (!op || op->getBlock() != add->getBlock() || !value.hasOneUse() ||
      !linalg::isaContractionOpInterface(op) ||
      !op.hasPureTensorSemantics() || op->getNumResults() != 1 ||
      op.getNumDpsInits() != 1 || value.getType() != add.getResult(0).getType())
    return nullptr;
  auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  if (!fill || !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
    return nullptr;
  return op;
}

struct CUDAFuseMatmulEpiloguePass
    : dtensor::impl::CUDAFuseMatmulEpiloguePassBase<
          CUDAFuseMatmulEpiloguePass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> adds;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isElementwiseAdd(op))
        adds.push_back(op);
    });
    for (linalg::GenericOp add : adds) {
      // The first input that is a fusable contraction; the other is r.
      for (unsigned number = 0; number < 2; ++number) {
        linalg::LinalgOp matmul = zeroInitContraction(add, number);
        Value residual = add.getDpsInputs()[1 - number];
        if (!matmul || residual == add.getDpsInputs()[number])
          continue;
        OpBuilder builder(add);
        auto init = bufferization::AllocTensorOp::create(
            builder, add.getLoc(), cast<RankedTensorType>(residual.getType()),
            ValueRange(), residual);
        IRMapping mapping;
        mapping.map(matmul.getDpsInits()[0], init.getResult());
        Operation *fused = builder.clone(*matmul, mapping);
        add.getResult(0).replaceAllUsesWith(fused->getResult(0));
        add.erase();
        matmul.erase();
        break;
      }
    }
  }
};

} // namespace
