//===- Autodiff.cpp - reverse-mode differentiation on the global view -----===//
//
// The `dtensor-autodiff` pass. For a global-view function @f it writes
// @f_grad: @f's body (the forward), then the backward in the same
// global-view ops, returning @f's results and the gradients of the
// differentiable arguments. Propagation, planning and partitioning then run
// on the joint function unchanged, so the backward's communication is
// whatever its layouts need. See docs/autodiff.md.
//
// This file is the pass: which functions and arguments, the layouts of the
// forward alone, the checkpointed ops. The backward itself is written by
// the reverse sweep (ReverseSweep.cpp) from the gradient rules
// (GradientRules.cpp, ScalarDerivatives.cpp); Autodiff.h joins them.
//
//===----------------------------------------------------------------------===//

#include "Autodiff.h"

#include "dtensor/Frontend/Passes.h"
#include "dtensor/Partitioning/PropagateLayouts.h"
#include "dtensor/Sharding/Layout.h"
#include "dtensor/Target/Target.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "dtensor/Frontend/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;
using namespace mlir::dtensor::autodiff;

namespace {
struct AutodiffPass : dtensor::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  /// The layouts propagation gives `func`'s values when the forward is
  /// compiled alone: a copy of the module holding only this function (and
  /// what is not a function: meshes, the target) is propagated, and its
  /// layouts read back, keyed by `func`'s values. Ops propagation replaces
  /// (annotations) are left out.
  FailureOr<DenseMap<Value, LayoutAttr>>
  probeForwardLayouts(func::FuncOp func) {
    DenseMap<Value, LayoutAttr> layouts;
    ModuleOp module = getOperation();
    if (module.getOps<MeshOp>().empty())
      return layouts;
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (op->getParentOp() == func)
        ops.push_back(op);
    });
    IRMapping mapping;
    OwningOpRef<ModuleOp> copy =
        cast<ModuleOp>(module->cloneWithoutRegions(mapping));
    copy->getBodyRegion().push_back(new Block);
    OpBuilder b = OpBuilder::atBlockEnd(copy->getBody());
    for (Operation &op : *module.getBody())
      if (!isa<func::FuncOp>(op) || &op == func.getOperation())
        b.clone(op, mapping);
    for (auto [i, op] : llvm::enumerate(ops))
      mapping.lookup(op)->setAttr(kAutodiffIdAttrName, b.getI64IntegerAttr(i));
    auto copyFunc = cast<func::FuncOp>(mapping.lookup(func.getOperation()));
    FailureOr<HardwareModel> hw = getTargetHardware(*copy);
    if (failed(hw) || failed(propagateLayouts(copyFunc, *hw)))
      return func.emitError("autodiff: propagating the forward's layouts "
                            "failed"),
             failure();
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto layout =
              copyFunc.getArgAttrOfType<LayoutAttr>(i, kLayoutAttrName))
        layouts[func.getArgument(i)] = layout;
    copyFunc.walk([&](Operation *op) {
      auto id = op->getAttrOfType<IntegerAttr>(kAutodiffIdAttrName);
      if (!id)
        return;
      Operation *original = ops[id.getInt()];
      for (auto [r, result] : llvm::enumerate(op->getResults()))
        if (LayoutAttr layout = getLayoutOf(result))
          layouts[original->getResult(r)] = layout;
    });
    return layouts;
  }

  /// The arguments to differentiate with respect to.
  FailureOr<SmallVector<unsigned>> getWrt(func::FuncOp func) {
    SmallVector<unsigned> result;
    unsigned numArgs = func.getNumArguments();
    if (!wrt.empty()) {
      for (int64_t index : wrt) {
        if (index < 0 || index >= numArgs)
          return func.emitError("autodiff: argument ")
                     << index << " is out of range (@" << func.getSymName()
                     << " has " << numArgs << " arguments)",
                 failure();
        if (!isFloatTensor(func.getArgument(index).getType()))
          return func.emitError("autodiff: argument ")
                     << index << " is not a floating-point tensor",
                 failure();
        if (!cast<RankedTensorType>(func.getArgument(index).getType())
                 .hasStaticShape())
          return func.emitError("autodiff: dynamic shapes are not supported"),
                 failure();
        if (!llvm::is_contained(result, index))
          result.push_back(index);
      }
      return result;
    }
    for (unsigned i = 0; i < numArgs; ++i)
      if (func.getArgAttr(i, kParamAttrName) ||
          func.getArgAttr(i, kRequiresGradAttrName)) {
        if (!isFloatTensor(func.getArgument(i).getType()))
          return func.emitError("autodiff: argument ")
                     << i
                     << " is marked differentiable but is not a "
                        "floating-point tensor",
                 failure();
        result.push_back(i);
      }
    if (result.empty())
      for (unsigned i = 0; i < numArgs; ++i)
        if (isFloatTensor(func.getArgument(i).getType()))
          result.push_back(i);
    for (unsigned i : result)
      if (!cast<RankedTensorType>(func.getArgument(i).getType())
               .hasStaticShape())
        return func.emitError("autodiff: dynamic shapes are not supported"),
               failure();
    return result;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (gradLayouts != "argument" && gradLayouts != "free") {
      module.emitError("autodiff: unknown grad-layouts '")
          << gradLayouts << "' (expected argument or free)";
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> targets;
    if (functions.empty()) {
      for (auto func : module.getOps<func::FuncOp>())
        if (!func.isExternal())
          targets.push_back(func);
    } else {
      for (const std::string &name : functions) {
        auto func = symbols.lookup<func::FuncOp>(name);
        if (!func || func.isExternal()) {
          module.emitError("autodiff: no function @") << name << " with a body";
          return signalPassFailure();
        }
        targets.push_back(func);
      }
    }
    for (func::FuncOp func : targets) {
      std::string name = (func.getSymName() + suffix).str();
      if (symbols.lookup(name)) {
        func.emitError("autodiff: @") << name << " already exists";
        return signalPassFailure();
      }
      WalkResult propagated = func.walk([](Operation *op) {
        return op->hasAttr(kLayoutsAttrName) ? WalkResult::interrupt()
                                             : WalkResult::advance();
      });
      if (propagated.wasInterrupted()) {
        func.emitError("autodiff: @")
            << func.getSymName()
            << " has propagated layouts: differentiate the global view "
               "before dtensor-propagate-layouts";
        return signalPassFailure();
      }
      if (!func.getBody().hasOneBlock()) {
        func.emitError("autodiff: functions with more than one block are not "
                       "supported");
        return signalPassFailure();
      }
      FailureOr<SmallVector<unsigned>> args = getWrt(func);
      if (failed(args))
        return signalPassFailure();
      FailureOr<DenseMap<Value, LayoutAttr>> probed = probeForwardLayouts(func);
      if (failed(probed))
        return signalPassFailure();
      IRMapping mapping;
      auto joint = cast<func::FuncOp>(func->clone(mapping));
      joint.setSymName(name);
      symbols.insert(joint, std::next(Block::iterator(func)));
      DenseMap<Value, LayoutAttr> forwardLayouts;
      for (auto [value, layout] : *probed)
        forwardLayouts[mapping.lookup(value)] = layout;
      auto checkpointed = [&](Operation *op) {
        if (op->hasAttr(kCheckpointAttrName))
          return true;
        auto module = op->getAttrOfType<StringAttr>(kModuleAttrName);
        if (!module)
          return false;
        return llvm::any_of(checkpoint, [&](const std::string &name) {
          StringRef rest = module.getValue();
          return rest.consume_front(name) &&
                 (rest.empty() || rest.starts_with("."));
        });
      };
      if (failed(differentiateFunction(joint, *args, std::move(forwardLayouts),
                                       checkpointed,
                                       gradLayouts == "argument"))) {
        // The diagnostics point into the joint function; drop it.
        symbols.erase(joint);
        return signalPassFailure();
      }
    }
  }
};
} // namespace
