//===- Pipeline.cpp - the partitioning stage's piece of the pipeline ------===//

#include "dtensor/Partitioning/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::dtensor;

void mlir::dtensor::addPartitioningStagePasses(OpPassManager &pm,
                                               PartitioningSteps steps) {
  if (steps.propagate)
    pm.addPass(createPropagateLayoutsPass());
  if (steps.plan)
    pm.addPass(createPlanRedistributionsPass());
  if (steps.partition) {
    pm.addPass(createPartitionPass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
}
