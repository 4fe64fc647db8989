//===- Passes.h - lowering to the runtime ABI -------------------*- C++ -*-===//
//
// Per-rank collectives lowered to calls of the runtime ABI: the pass declarations and
// registerDTensorToRuntimePasses(), generated from Passes.td beside this file.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_CONVERSION_DTENSORTORUNTIME_PASSES_H
#define DTENSOR_CONVERSION_DTENSORTORUNTIME_PASSES_H

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
#include "dtensor/Conversion/DTensorToRuntime/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dtensor/Conversion/DTensorToRuntime/Passes.h.inc"

} // namespace mlir::dtensor

#endif // DTENSOR_CONVERSION_DTENSORTORUNTIME_PASSES_H
