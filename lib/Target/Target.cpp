//===- Target.cpp - what a module is compiled for -------------------------===//

#include "dtensor/Target/Target.h"

#include "dtensor/Analysis/CostFiles.h"
#include "dtensor/Target/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"

#include <mutex>

using namespace mlir;
using namespace mlir::dtensor;

TargetAttr mlir::dtensor::getDefaultTarget(MLIRContext *context) {
  return TargetAttr::get(context, kDefaultBackend, kDefaultHardware,
                         StringRef(), StringRef(), StringRef());
}

TargetAttr mlir::dtensor::getTarget(Operation *op) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    module = op->getParentOfType<ModuleOp>();
  if (module)
    if (auto target = module->getAttrOfType<TargetAttr>(
            DTensorDialect::kTargetAttrName))
      return target;
  return getDefaultTarget(op->getContext());
}

void mlir::dtensor::setTarget(ModuleOp module, TargetAttr target) {
  module->setAttr(DTensorDialect::kTargetAttrName, target);
}

FailureOr<TargetAttr> mlir::dtensor::parseTargetSpec(MLIRContext *context,
                                                     StringRef spec,
                                                     std::string &error) {
  auto [backend, hardware] = spec.trim().split(':');
  if (hardware.empty())
    hardware = kDefaultHardware;
  // The attribute's verifier explains what is wrong; keep its message.
  std::string message;
  ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  TargetAttr target = TargetAttr::getChecked(
      [&] { return emitError(UnknownLoc::get(context)); }, context, backend,
      hardware, StringRef(), StringRef(), StringRef());
  if (!target) {
    error = ("invalid target '" + spec + "': " + message +
             "; expected <backend>[:<hardware>]")
                .str();
    return failure();
  }
  return target;
}

FailureOr<HardwareModel> mlir::dtensor::getTargetHardware(Operation *op,
                                                          StringRef prefix) {
  TargetAttr target = getTarget(op);
  return resolveHardwareOrEmitError(op->getLoc(), target.getHardware(),
                                    target.getHardwareFile(), prefix);
}

FailureOr<std::unique_ptr<CostEstimator>>
mlir::dtensor::getTargetCostEstimator(Operation *op, StringRef prefix) {
  FailureOr<HardwareModel> hw = getTargetHardware(op, prefix);
  if (failed(hw))
    return failure();
  std::unique_ptr<CostEstimator> estimator = createDefaultCostEstimator(*hw);
  StringRef costTable = getTarget(op).getCostTable();
  if (costTable.empty())
    return estimator;
  llvm::Expected<llvm::StringMap<double>> table = loadCostTable(costTable);
  if (!table)
    return op->emitError(prefix + llvm::toString(table.takeError()));
  return createTableCostEstimator(std::move(*table), std::move(estimator));
}

void mlir::dtensor::addBufferizationPasses(OpPassManager &pm) {
  pm.addPass(createFoldEmptyTensorsPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
}

//===----------------------------------------------------------------------===//
// Backend registry
//===----------------------------------------------------------------------===//

TargetBackend::~TargetBackend() = default;

namespace {
struct Registry {
  std::mutex mutex;
  llvm::StringMap<std::unique_ptr<TargetBackend>> backends;
};
} // namespace

static Registry &getRegistry() {
  static Registry registry;
  return registry;
}

void mlir::dtensor::registerTargetBackend(
    std::unique_ptr<TargetBackend> backend) {
  Registry &registry = getRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::string name = backend->getName().str();
  registry.backends.try_emplace(name, std::move(backend));
}

const TargetBackend *mlir::dtensor::lookupTargetBackend(StringRef name) {
  Registry &registry = getRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto it = registry.backends.find(name);
  return it == registry.backends.end() ? nullptr : it->second.get();
}

std::vector<std::string> mlir::dtensor::getTargetBackendNames() {
  Registry &registry = getRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::vector<std::string> names;
  for (const auto &entry : registry.backends)
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  return names;
}
