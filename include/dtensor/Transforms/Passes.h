//===- Passes.h - dtensor compiler passes -----------------------*- C++ -*-===//

#ifndef DTENSOR_TRANSFORMS_PASSES_H
#define DTENSOR_TRANSFORMS_PASSES_H

#include "DTensor/DTensor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dtensor {

/// Attributes dtensor-autodiff writes and dtensor-train-steps reads: on a
/// joint function's argument, the index of the forward result it is the
/// cotangent of; on a result, the index of the argument it is the gradient
/// of (docs/autodiff.md).
constexpr llvm::StringLiteral kCotangentAttrName = "dtensor.cotangent";
constexpr llvm::StringLiteral kGradOfAttrName = "dtensor.grad_of";

#define GEN_PASS_DECL
#include "dtensor/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dtensor/Transforms/Passes.h.inc"

} // namespace mlir::dtensor

#endif // DTENSOR_TRANSFORMS_PASSES_H
