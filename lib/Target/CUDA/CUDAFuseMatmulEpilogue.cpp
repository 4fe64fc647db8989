//===- CUDAFuseMatmulEpilogue.cpp - residual and bias adds into matmuls ---===//
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
// function argument, or read again later). Likewise `A.B + bias` (a bias
// of the output's columns, nn.Linear's) becomes the matmul accumulating
// onto `linalg.broadcast` of the bias, which the call folds into cuBLASLt's
// bias epilogue. Numerics: the sum is taken in f32 on the f32 accumulator
// and rounded once, where the add kernel rounds the product to the element
// type first.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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

/// Whether `map` reads a rank-1 operand along the last of its loops only
/// (a bias of the output's columns).
static bool isLastDimProjection(AffineMap map) {
  return map.getNumResults() == 1 && map.getNumDims() >= 2 &&
         map.getResult(0) ==
             getAffineDimExpr(map.getNumDims() - 1, map.getContext());
}

/// Whether `op` (a linalg.generic or linalg.add: autodiff accumulates
/// gradients with linalg.add) computes out = in0 + in1 elementwise, in0 and
/// in1 of the output's tensor type, or one of them a bias (rank 1, the
/// output's last dimension, read along the last loop): one init, identity
/// maps but the bias's, parallel loops, and a body `yield addf(in0, in1)` in
/// the element type or `yield truncf(addf(extf in0, extf in1))` through a
/// wider float.
static bool isAdd(linalg::LinalgOp op) {
  if (!isa<linalg::GenericOp, linalg::AddOp>(op) ||
      !op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumParallelLoops() != op.getNumLoops())
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !op.getIndexingMapsArray().back().isIdentity())
    return false;
  Type element = type.getElementType();
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    auto inputType = dyn_cast<RankedTensorType>(input->get().getType());
    bool full = map.isIdentity() && inputType == type;
    bool bias = isLastDimProjection(map) && inputType &&
                inputType.getRank() == 1 &&
                inputType.getElementType() == element &&
                inputType.getDimSize(0) == type.getShape().back();
    if (!full && !bias)
      return false;
  }
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
static linalg::LinalgOp zeroInitContraction(linalg::LinalgOp add,
                                            unsigned number) {
  Value value = add.getDpsInputs()[number];
  auto op = value.getDefiningOp<linalg::LinalgOp>();
  // In the add's block: the fused matmul takes the add's place, and must
  // not move into a loop.
  if (!op || op->getBlock() != add->getBlock() || !value.hasOneUse() ||
      !linalg::isaContractionOpInterface(op) || !op.hasPureTensorSemantics() ||
      op->getNumResults() != 1 || op.getNumDpsInits() != 1 ||
      value.getType() != add->getResult(0).getType())
    return nullptr;
  auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  if (!fill || !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
    return nullptr;
  return op;
}

/// Whether the matmul replacing `add` may accumulate onto `other` itself:
/// a value of the add's type computed by an op (not an argument, which the
/// function must not write) that nothing but the add reads, so that
/// bufferization writes its buffer in place.
static bool isAccumulable(Value other, linalg::LinalgOp add) {
  return other.getDefiningOp() && other.hasOneUse() &&
         other.getType() == add->getResult(0).getType();
}

struct CUDAFuseMatmulEpiloguePass
    : dtensor::impl::CUDAFuseMatmulEpiloguePassBase<
          CUDAFuseMatmulEpiloguePass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> adds;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isAdd(op))
        adds.push_back(op);
    });
    for (linalg::LinalgOp add : adds) {
      // The first input that is a fusable contraction (read whole); the
      // other is the residual or the bias.
      for (unsigned number = 0; number < 2; ++number) {
        linalg::LinalgOp matmul = zeroInitContraction(add, number);
        Value other = add.getDpsInputs()[1 - number];
        auto type = cast<RankedTensorType>(add->getResult(0).getType());
        bool bias =
            cast<RankedTensorType>(other.getType()).getRank() != type.getRank();
        // (A bias's broadcast is built on a tensor.empty of static shape.)
        if (!matmul || other == add.getDpsInputs()[number] ||
            !add.getIndexingMapsArray()[number].isIdentity() ||
            (bias && !type.hasStaticShape()))
          continue;
        OpBuilder builder(add);
        Location loc = add.getLoc();
        Value init;
        if (!bias && isAccumulable(other, add)) {
          // A partial sum only the add reads (another matmul's product, the
          // backward's dX = dA.A^T + dB.B^T): accumulated onto in place,
          // the second matmul reading and writing the first's buffer.
          init = other;
        } else if (!bias) {
          // The residual: a copy of it, accumulated onto.
          init = bufferization::AllocTensorOp::create(builder, loc, type,
                                                      ValueRange(), other);
        } else {
          // The bias: broadcast over the rows, accumulated onto.
          Value empty = tensor::EmptyOp::create(builder, loc, type.getShape(),
                                                type.getElementType());
          init = linalg::BroadcastOp::create(
                     builder, loc, other, empty,
                     llvm::to_vector(llvm::seq<int64_t>(0, type.getRank() - 1)))
                     ->getResult(0);
        }
        IRMapping mapping;
        mapping.map(matmul.getDpsInits()[0], init);
        Operation *fused = builder.clone(*matmul, mapping);
        add->getResult(0).replaceAllUsesWith(fused->getResult(0));
        add->erase();
        matmul.erase();
        break;
      }
    }
  }
};

} // namespace
