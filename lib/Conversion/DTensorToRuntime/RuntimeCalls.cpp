//===- RuntimeCalls.cpp - the runtime ABI as the compiler sees it ---------===//

#include "dtensor/Conversion/DTensorToRuntime/RuntimeCalls.h"

#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <type_traits>

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// The MLIR operand count of a C parameter list: a pointer parameter after
/// the first is the descriptor half of a (rank, descriptor) pair, one memref
/// with its rank; a first pointer is the execution context (an llvm.ptr).
template <typename Signature> struct MLIRArity;
template <typename Result> struct MLIRArity<Result()> {
  static constexpr unsigned value = 0;
};
template <typename Result, typename First, typename... Rest>
struct MLIRArity<Result(First, Rest...)> {
  static constexpr unsigned value =
      1 + sizeof...(Rest) - (0u + ... + unsigned(std::is_pointer_v<Rest>));
};

struct CollectiveRow {
  StringLiteral name;
  /// After (ctx, input, output).
  unsigned numParams;
};

constexpr CollectiveRow kCollectives[] = {
#define DTENSOR_RT_ROW(T, ENUM, NAME, IMPL, PARAMS, ARGS)                      \
  {#NAME, MLIRArity<void PARAMS>::value},
    DTENSOR_RT_COLLECTIVES(DTENSOR_RT_ROW, )
#undef DTENSOR_RT_ROW
};

struct FunctionRow {
  StringLiteral symbol;
  unsigned numOperands;
  unsigned numResults;
};

constexpr FunctionRow kFunctions[] = {
#define DTENSOR_RT_ROW(ENUM, NAME, RESULT, PARAMS)                             \
  {"dtensor_rt_" #NAME, MLIRArity<void PARAMS>::value,                         \
   std::is_void_v<RESULT> ? 0u : 1u},
    DTENSOR_RT_FUNCTIONS(DTENSOR_RT_ROW)
#undef DTENSOR_RT_ROW
};

constexpr StringLiteral kElementSuffixes[] = {
#define DTENSOR_ELEMENT_TYPE(NAME, ENUM, BYTES) #NAME,
#include "dtensor/Runtime/ElementTypes.def"
};

/// Every symbol of the ABI, to its call's description (without the call).
const llvm::StringMap<RuntimeCall> &getSymbolTable() {
  static const llvm::StringMap<RuntimeCall> table = [] {
    llvm::StringMap<RuntimeCall> symbols;
    for (unsigned i = 0; i < std::size(kCollectives); ++i)
      for (StringRef suffix : kElementSuffixes)
        for (bool async : {false, true}) {
          RuntimeCall entry;
          entry.collective = static_cast<RuntimeCollective>(i);
          entry.async = async;
          entry.suffix = suffix;
          symbols[getRuntimeCollectiveSymbol(*entry.collective, async,
                                             suffix)] = entry;
        }
    for (unsigned i = 0; i < std::size(kFunctions); ++i) {
      RuntimeCall entry;
      entry.function = static_cast<RuntimeFunction>(i);
      symbols[kFunctions[i].symbol] = entry;
    }
    return symbols;
  }();
  return table;
}

} // namespace

StringRef mlir::dtensor::getRuntimeCollectiveName(RuntimeCollective c) {
  return kCollectives[static_cast<unsigned>(c)].name;
}

std::string mlir::dtensor::getRuntimeCollectiveSymbol(RuntimeCollective c,
                                                      bool async,
                                                      StringRef suffix) {
  return ("dtensor_rt_" + Twine(async ? "start_" : "") +
          getRuntimeCollectiveName(c) + "_" + suffix)
      .str();
}

unsigned mlir::dtensor::getRuntimeCollectiveNumOperands(RuntimeCollective c) {
  return 3 + kCollectives[static_cast<unsigned>(c)].numParams;
}

StringRef mlir::dtensor::getRuntimeFunctionSymbol(RuntimeFunction function) {
  return kFunctions[static_cast<unsigned>(function)].symbol;
}

ArrayRef<StringLiteral> mlir::dtensor::getRuntimeElementSuffixes() {
  return kElementSuffixes;
}

FailureOr<StringRef> mlir::dtensor::getRuntimeElementSuffix(Type type) {
  std::string spelled;
  llvm::raw_string_ostream(spelled) << type;
  for (StringRef suffix : kElementSuffixes)
    if (suffix == spelled)
      return suffix;
  return failure();
}

std::optional<RuntimeCall> mlir::dtensor::classifyRuntimeCall(Operation *op) {
  auto call = dyn_cast_or_null<func::CallOp>(op);
  if (!call)
    return std::nullopt;
  const llvm::StringMap<RuntimeCall> &table = getSymbolTable();
  auto it = table.find(call.getCallee());
  if (it == table.end())
    return std::nullopt;
  RuntimeCall result = it->second;
  result.call = call;
  unsigned operands, results;
  if (result.collective) {
    operands = getRuntimeCollectiveNumOperands(*result.collective);
    results = result.async ? 1 : 0;
  } else {
    const FunctionRow &row =
        kFunctions[static_cast<unsigned>(*result.function)];
    operands = row.numOperands;
    results = row.numResults;
  }
  if (call->getNumOperands() != operands || call->getNumResults() != results)
    return std::nullopt;
  return result;
}
