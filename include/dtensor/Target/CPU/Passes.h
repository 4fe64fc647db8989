//===- Passes.h - passes of the CPU target ----------------------*- C++ -*-===//
//
// Passes of the CPU target: the pass declarations and
// registerDTensorCPUPasses(), generated from Passes.td beside this file.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_TARGET_CPU_PASSES_H
#define DTENSOR_TARGET_CPU_PASSES_H

#include "dtensor/Dialect/DTensor/DTensor.h"

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

#define GEN_PASS_DECL
#include "dtensor/Target/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dtensor/Target/CPU/Passes.h.inc"

} // namespace mlir::dtensor

#endif // DTENSOR_TARGET_CPU_PASSES_H
