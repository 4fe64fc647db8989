//===- DTensorAttrNames.h - discardable dtensor.* attributes -*- C++ -*-===//
//
// Every discardable `dtensor.*` attribute that passes write on upstream ops,
// functions and modules, declared once: the pass that writes it and the
// passes that read it use these names. (The module's `dtensor.target` is
// DTensorDialect::kTargetAttrName, which the dialect verifies.)
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_DIALECT_DTENSORATTRNAMES_H
#define DTENSOR_DIALECT_DTENSORATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace mlir::dtensor {

//===----------------------------------------------------------------------===//
// Placements (written by propagation, read by partitioning and reports)
//===----------------------------------------------------------------------===//

/// A #dtensor.layout on a function argument or result.
constexpr llvm::StringLiteral kLayoutAttrName = "dtensor.layout";
/// The layouts of an op's results, an array of #dtensor.layout.
constexpr llvm::StringLiteral kLayoutsAttrName = "dtensor.layouts";
/// The global type of a per-rank function's argument or result.
constexpr llvm::StringLiteral kGlobalTypeAttrName = "dtensor.global_type";
/// Marks a function argument as a model parameter (a string naming it);
/// propagation prefers strategies that leave parameters in place.
constexpr llvm::StringLiteral kParamAttrName = "dtensor.param";
/// Marks a dtensor.annotate as a module boundary (written by
/// dtensor-apply-tp-plan): its layout is materialized even where the next
/// redistribution could skip it.
constexpr llvm::StringLiteral kBoundaryAttrName = "dtensor.boundary";

//===----------------------------------------------------------------------===//
// Frontend: TP plans, autodiff, training steps (docs/autodiff.md)
//===----------------------------------------------------------------------===//

/// The fully qualified module name of an op that a TP plan placed.
constexpr llvm::StringLiteral kModuleAttrName = "dtensor.module";
/// On an argument: whether dtensor-autodiff differentiates with respect to
/// it.
constexpr llvm::StringLiteral kRequiresGradAttrName = "dtensor.requires_grad";
/// Marks an op whose forward the backward recomputes (activation
/// checkpointing), and the recomputed copy.
constexpr llvm::StringLiteral kCheckpointAttrName = "dtensor.checkpoint";
constexpr llvm::StringLiteral kRecomputedAttrName = "dtensor.recomputed";
/// On a dtensor.to_local: the layout of its gradient (PyTorch's
/// `to_local(grad_placements=...)`).
constexpr llvm::StringLiteral kGradLayoutAttrName = "dtensor.grad_layout";
/// Numbers the ops of a copy of the forward that autodiff propagates
/// layouts on, to find each op's layouts (never left in the output).
constexpr llvm::StringLiteral kAutodiffIdAttrName = "dtensor.autodiff_id";
/// On a joint function's argument, the index of the forward result it is
/// the cotangent of; on a result, the index of the argument it is the
/// gradient of.
constexpr llvm::StringLiteral kCotangentAttrName = "dtensor.cotangent";
constexpr llvm::StringLiteral kGradOfAttrName = "dtensor.grad_of";
/// On a joint forward + backward function: its first N results are the
/// forward's.
constexpr llvm::StringLiteral kForwardResultsAttrName =
    "dtensor.forward_results";
/// On a training function's argument or result that is optimizer state
/// (dtensor-train-steps state=arguments): what it is, torch.optim's name and
/// the index of the argument it belongs to ("exp_avg:2", "exp_avg_sq:2",
/// "momentum_buffer:2", "master:2"), or "step" for the steps taken.
constexpr llvm::StringLiteral kOptimizerStateAttrName =
    "dtensor.optimizer_state";

//===----------------------------------------------------------------------===//
// Compiler and targets
//===----------------------------------------------------------------------===//

/// On the module: the signatures of its public entries, which a Session
/// records before lowering.
constexpr llvm::StringLiteral kSignaturesAttrName = "dtensor.signatures";
/// On a function: the peak live memory (bytes) before the first scheduling
/// pass ran, the base of the scheduling passes' memory budget.
constexpr llvm::StringLiteral kMemoryBaselineAttrName =
    "dtensor.memory_baseline";
/// On a parallel loop of the CUDA target: a smaller block size than the
/// pass option's.
constexpr llvm::StringLiteral kBlockSizeAttrName = "dtensor.block_size";

} // namespace mlir::dtensor

#endif // DTENSOR_DIALECT_DTENSORATTRNAMES_H
