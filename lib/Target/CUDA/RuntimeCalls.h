//===- RuntimeCalls.h - calls of the CUDA runtime from the passes -*- C++
//-*-===//
//
// The CUDA passes that replace ops with runtime calls (matmuls, attention)
// declare the runtime's functions once per module and fetch the runtime
// context, dtensor_rt_context(), once per function.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_TARGET_CUDA_RUNTIMECALLS_H
#define DTENSOR_LIB_TARGET_CUDA_RUNTIMECALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::dtensor::cuda {

/// The private declaration `name` of `module`, added if missing.
inline func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                           TypeRange inputs,
                                           TypeRange results) {
  if (auto func = module.lookupSymbol<func::FuncOp>(name))
    return func;
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto func = func::FuncOp::create(builder, module.getLoc(), name,
                                   builder.getFunctionType(inputs, results));
  func.setPrivate();
  return func;
}

/// dtensor_rt_context() of `func`: the call at the top of its body that
/// an earlier use made, else a new one there.
inline Value getRuntimeContext(func::FuncOp func) {
  Block &entry = func.getBody().front();
  for (auto call : entry.getOps<func::CallOp>())
    if (call.getCallee() == "dtensor_rt_context" && call.getNumResults() == 1)
      return call.getResult(0);
  auto ptr = LLVM::LLVMPointerType::get(func.getContext());
  func::FuncOp callee = declareRuntimeFunction(
      func->getParentOfType<ModuleOp>(), "dtensor_rt_context", {}, {ptr});
  OpBuilder builder = OpBuilder::atBlockBegin(&entry);
  return func::CallOp::create(builder, func.getLoc(), callee, ValueRange{})
      .getResult(0);
}

} // namespace mlir::dtensor::cuda

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIMECALLS_H
