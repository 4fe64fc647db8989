//===- Passes.h - passes of partitioning ------------------------*- C++ -*-===//
//
// Placements propagated, redistributions planned, the per-rank program: the pass declarations and
// registerPartitioningPasses(), generated from Passes.td beside this file.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_PARTITIONING_PASSES_H
#define DTENSOR_PARTITIONING_PASSES_H

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
#include "dtensor/Partitioning/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dtensor/Partitioning/Passes.h.inc"

/// The steps of this stage a pipeline takes, in order.
struct PartitioningSteps {
  /// global -> propagated: dtensor-propagate-layouts.
  bool propagate = true;
  /// -> planned: dtensor-plan-redistributions.
  bool plan = true;
  /// -> per-rank: dtensor-partition, then canonicalize and cse.
  bool partition = true;
};

/// This stage's piece of the pipeline: the passes of `steps`.
void addPartitioningStagePasses(OpPassManager &pm, PartitioningSteps steps);

} // namespace mlir::dtensor

#endif // DTENSOR_PARTITIONING_PASSES_H
