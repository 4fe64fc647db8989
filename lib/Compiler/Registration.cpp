//===- Registration.cpp - dialects and passes of the compiler -------------===//

#include "dtensor/Compiler/Registration.h"
#include "dtensor/Compiler/Pipelines.h"

#include "DTensor/DTensor.h"
#include "dtensor/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::dtensor::registerDialects(DialectRegistry &registry) {
  registry.insert<DTensorDialect, arith::ArithDialect, func::FuncDialect,
                  linalg::LinalgDialect, math::MathDialect,
                  tensor::TensorDialect>();
}

void mlir::dtensor::registerPasses() {
  registerDTensorPasses();
  registerPipelines();
  registerCanonicalizerPass();
  registerCSEPass();
  registerSymbolDCEPass();
}
