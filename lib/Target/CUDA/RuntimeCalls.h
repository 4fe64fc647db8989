//===- RuntimeCalls.h - CUDA runtime calls from the passes -----*- C++ -*-===//
//
// The CUDA passes that replace ops with runtime calls (matmuls, attention)
// name them from the one list below (the entries of CUDARuntime.h that
// compiled code calls), declare them once per module and fetch the runtime
// context, dtensor_rt_context(), once per function. Later passes recognise
// the calls by exact name (isRuntimeCall), as RuntimeCalls.h of
// DTensorToRuntime does for the collectives.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_TARGET_CUDA_RUNTIMECALLS_H
#define DTENSOR_LIB_TARGET_CUDA_RUNTIMECALLS_H

#include "dtensor/Conversion/DTensorToRuntime/RuntimeCalls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringSet.h"

namespace mlir::dtensor::cuda {

/// The CUDA runtime's entries that compiled code calls (CUDARuntime.h): each
/// is dtensor_rt_<name>_<T> for the element types T of its row.
enum class RuntimeEntry {
  Matmul,
  MatmulAdd,
  MatmulBias,
  MatmulAct,
  Attention,
  AttentionStats,
  AttentionBackward
};

struct RuntimeEntryRow {
  llvm::StringLiteral name;
  llvm::ArrayRef<llvm::StringLiteral> suffixes;
};

inline constexpr llvm::StringLiteral kMatmulSuffixes[] = {"bf16", "f16", "f32"};
inline constexpr llvm::StringLiteral kAttentionSuffixes[] = {"bf16", "f16"};
inline constexpr RuntimeEntryRow kRuntimeEntries[] = {
    {"matmul", kMatmulSuffixes},
    {"matmul_add", kMatmulSuffixes},
    {"matmul_bias", kMatmulSuffixes},
    {"matmul_act", kMatmulSuffixes},
    {"attention", kAttentionSuffixes},
    {"attention_stats", kAttentionSuffixes},
    {"attention_backward", kAttentionSuffixes}};

/// dtensor_rt_<name>_<suffix> of `entry`.
inline std::string getRuntimeSymbol(RuntimeEntry entry, StringRef suffix) {
  return ("dtensor_rt_" + kRuntimeEntries[static_cast<unsigned>(entry)].name +
          "_" + suffix)
      .str();
}

/// Whether `call` calls one of the CUDA runtime's entries above, or a
/// function of the common runtime ABI (RuntimeABI.def): host code that only
/// hands its buffers on.
inline bool isRuntimeCall(func::CallOp call) {
  static const llvm::StringSet<> symbols = [] {
    llvm::StringSet<> names;
    for (unsigned i = 0; i < std::size(kRuntimeEntries); ++i)
      for (StringRef suffix : kRuntimeEntries[i].suffixes)
        names.insert(getRuntimeSymbol(static_cast<RuntimeEntry>(i), suffix));
    return names;
  }();
  return symbols.contains(call.getCallee()) ||
         classifyRuntimeCall(call).has_value();
}

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
    if (std::optional<RuntimeCall> runtimeCall = classifyRuntimeCall(call);
        runtimeCall && runtimeCall->is(RuntimeFunction::Context))
      return call.getResult(0);
  auto ptr = LLVM::LLVMPointerType::get(func.getContext());
  func::FuncOp callee = declareRuntimeFunction(
      func->getParentOfType<ModuleOp>(),
      getRuntimeFunctionSymbol(RuntimeFunction::Context), {}, {ptr});
  OpBuilder builder = OpBuilder::atBlockBegin(&entry);
  return func::CallOp::create(builder, func.getLoc(), callee, ValueRange{})
      .getResult(0);
}

} // namespace mlir::dtensor::cuda

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIMECALLS_H
