//===- RuntimeCallsTest.cpp - the runtime ABI table in the compiler -------===//
//
// classifyRuntimeCall recognises exactly the symbols of RuntimeABI.def with
// their operand counts, and nothing that merely resembles one.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Conversion/DTensorToRuntime/RuntimeCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::dtensor;

namespace {

class RuntimeCallsTest : public ::testing::Test {
protected:
  RuntimeCallsTest() {
    context.loadDialect<arith::ArithDialect, func::FuncDialect>();
    module = ModuleOp::create(UnknownLoc::get(&context));
    func = func::FuncOp::create(UnknownLoc::get(&context), "f",
                                FunctionType::get(&context, {}, {}));
    module->push_back(func);
    builder.setInsertionPointToEnd(func.addEntryBlock());
  }

  /// A call of `name` with `operands` i64 operands and `results` i64 results
  /// (classification looks at the callee's name and the counts only).
  func::CallOp makeCall(StringRef name, unsigned operands, unsigned results) {
    SmallVector<Value> args;
    for (unsigned i = 0; i < operands; ++i)
      args.push_back(arith::ConstantOp::create(builder, builder.getUnknownLoc(),
                                               builder.getI64IntegerAttr(i)));
    SmallVector<Type> types(results, builder.getI64Type());
    return func::CallOp::create(builder, builder.getUnknownLoc(), name, types,
                                args);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  OpBuilder builder{&context};
};

} // namespace

TEST_F(RuntimeCallsTest, EveryCollectiveRoundTrips) {
  const RuntimeCollective all[] = {
      RuntimeCollective::AllReduce,     RuntimeCollective::AllGather,
      RuntimeCollective::ReduceScatter, RuntimeCollective::AllToAll,
      RuntimeCollective::AllToAllV,     RuntimeCollective::Permute,
      RuntimeCollective::Broadcast};
  for (RuntimeCollective kind : all)
    for (StringRef suffix : getRuntimeElementSuffixes())
      for (bool async : {false, true}) {
        std::string name = getRuntimeCollectiveSymbol(kind, async, suffix);
        unsigned operands = getRuntimeCollectiveNumOperands(kind);
        std::optional<RuntimeCall> call =
            classifyRuntimeCall(makeCall(name, operands, async ? 1 : 0));
        ASSERT_TRUE(call.has_value()) << name;
        EXPECT_TRUE(call->is(kind)) << name;
        EXPECT_EQ(call->async, async) << name;
        EXPECT_EQ(call->suffix, suffix) << name;
        // The wrong arity or result count is not the ABI's call.
        EXPECT_FALSE(
            classifyRuntimeCall(makeCall(name, operands + 1, async ? 1 : 0)))
            << name;
        EXPECT_FALSE(
            classifyRuntimeCall(makeCall(name, operands, async ? 0 : 1)))
            << name;
      }
}

TEST_F(RuntimeCallsTest, OperandCountsFollowTheTable) {
  // (ctx, in, out) + the parameters, a (rank, descriptor) pair counting once.
  EXPECT_EQ(getRuntimeCollectiveNumOperands(RuntimeCollective::AllReduce), 6u);
  EXPECT_EQ(getRuntimeCollectiveNumOperands(RuntimeCollective::ReduceScatter),
            7u);
  EXPECT_EQ(getRuntimeCollectiveNumOperands(RuntimeCollective::AllToAllV), 7u);
  EXPECT_EQ(getRuntimeCollectiveNumOperands(RuntimeCollective::Permute), 6u);
  EXPECT_EQ(getRuntimeCollectiveName(RuntimeCollective::AllToAllV),
            "all_to_all_v");
}

TEST_F(RuntimeCallsTest, TheOtherFunctions) {
  struct Case {
    RuntimeFunction function;
    StringRef symbol;
    unsigned operands, results;
  } cases[] = {{RuntimeFunction::Context, "dtensor_rt_context", 0, 1},
               {RuntimeFunction::Coord, "dtensor_rt_coord", 2, 1},
               {RuntimeFunction::TotalSize, "dtensor_rt_total_size", 2, 1},
               {RuntimeFunction::Wait, "dtensor_rt_wait", 2, 0}};
  for (const Case &c : cases) {
    EXPECT_EQ(getRuntimeFunctionSymbol(c.function), c.symbol);
    std::optional<RuntimeCall> call =
        classifyRuntimeCall(makeCall(c.symbol, c.operands, c.results));
    ASSERT_TRUE(call.has_value()) << c.symbol.str();
    EXPECT_TRUE(call->is(c.function));
    EXPECT_FALSE(call->isCollective());
  }
}

TEST_F(RuntimeCallsTest, LookalikesAreNotRuntimeCalls) {
  // Names that contain or extend an ABI symbol, or miss its type.
  for (StringRef name : {"dtensor_rt_permute", "my_dtensor_rt_permute_f32",
                         "dtensor_rt_permute_f32_copy",
                         "dtensor_rt_all_reduce_f8", "dtensor_rt_start_wait",
                         "dtensor_rt_all_to_all_v_v_f32", "permute_helper"})
    EXPECT_FALSE(classifyRuntimeCall(makeCall(name, 6, 0))) << name.str();
  EXPECT_FALSE(classifyRuntimeCall(nullptr));
}
