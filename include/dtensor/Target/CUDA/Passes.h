//===- Passes.h - passes of the CUDA target ---------------------*- C++ -*-===//

#ifndef DTENSOR_TARGET_CUDA_PASSES_H
#define DTENSOR_TARGET_CUDA_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dtensor {

#define GEN_PASS_DECL
#include "dtensor/Target/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dtensor/Target/CUDA/Passes.h.inc"

} // namespace mlir::dtensor

#endif // DTENSOR_TARGET_CUDA_PASSES_H
