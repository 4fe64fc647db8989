//===- TrainSteps.cpp - K training steps of a joint function --------------===//
//
// The `dtensor-train-steps` pass: from a joint forward + backward function of
// dtensor-autodiff, a training function that runs K steps of forward,
// backward and optimizer update (SGD with or without momentum, Adam, AdamW,
// as torch.optim) in one loop or in straight-line global-view code.
//
//===----------------------------------------------------------------------===//

#include "Autodiff.h"

#include "dtensor/Analysis/CommAnalysis.h"
#include "dtensor/Sharding/Layout.h"
#include "dtensor/Frontend/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>

namespace mlir::dtensor {
#define GEN_PASS_DEF_TRAINSTEPSPASS
#include "dtensor/Frontend/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;
using mlir::dtensor::autodiff::convertFloat;

/// An elementwise generic over same-shaped tensors `inputs` whose body
/// `body(builder, loc, elements)` returns the result element, of type
/// `element`; `scalars` (rank-0 tensors, read at every element) follow
/// `inputs` in the body's arguments.
static Value createElementwise(
    OpBuilder &b, Location loc, Type element, ValueRange inputs,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body,
    ValueRange scalars = {}) {
  auto type = cast<RankedTensorType>(inputs.front().getType());
  int64_t rank = type.getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  SmallVector<AffineMap> maps(inputs.size(), id);
  maps.append(scalars.size(), AffineMap::get(rank, 0, b.getContext()));
  maps.push_back(id);
  SmallVector<Value> operands(inputs);
  llvm::append_range(operands, scalars);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), element);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type.clone(element)}, operands,
             ValueRange{empty}, maps, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc,
                                       ValueRange{body(nb, nloc,
                                                       args.drop_back())});
             })
      .getResult(0);
}

namespace {
/// The update rule (the `optimizer` option).
enum class Optimizer { Sgd, Adam, AdamW };

/// An optimizer's state of one argument, in the state type: the momentum
/// buffer (SGD with momentum) or the two moments (Adam, AdamW), and the
/// f32 master copy of a narrower weight (master-weights=f32).
struct OptimizerState {
  SmallVector<Value, 2> slots;
  Value master;
};

/// torch.optim's names of the state slots, for dtensor.optimizer_state.
static constexpr StringLiteral kAdamSlotNames[] = {"exp_avg", "exp_avg_sq"};
static constexpr StringLiteral kMomentumSlotName = "momentum_buffer";

struct TrainStepsPass : dtensor::impl::TrainStepsPassBase<TrainStepsPass> {
  using Base::Base;

  LogicalResult train(func::FuncOp joint, SymbolTable &symbols) {
    auto forwardResults =
        joint->getAttrOfType<IntegerAttr>(kForwardResultsAttrName);
    if (!forwardResults)
      return joint.emitError("train steps: @")
             << joint.getSymName()
             << " is not a joint forward + backward function (no '"
             << kForwardResultsAttrName << "'; run dtensor-autodiff first)";
    if (!joint.getBody().hasOneBlock())
      return joint.emitError("train steps: functions with more than one block "
                             "are not supported");
    unsigned numForward = forwardResults.getInt();
    FunctionType type = joint.getFunctionType();
    if (numForward > type.getNumResults())
      return joint.emitError("train steps: '")
             << kForwardResultsAttrName << "' is larger than the number of "
             << "results";

    // The forward's arguments come first, the seeds after them.
    unsigned numArgs = 0;
    for (unsigned i = 0; i < type.getNumInputs(); ++i) {
      bool isSeed = static_cast<bool>(joint.getArgAttr(i, kCotangentAttrName));
      if (isSeed)
        continue;
      if (numArgs != i)
        return joint.emitError("train steps: argument ")
               << i << " follows a seed cotangent";
      ++numArgs;
    }
    // Which argument each gradient result updates.
    SmallVector<std::pair<unsigned, unsigned>> updates; // (result, argument)
    for (unsigned r = numForward; r < type.getNumResults(); ++r) {
      auto of = joint.getResultAttrOfType<IntegerAttr>(r, kGradOfAttrName);
      if (!of || of.getInt() < 0 || of.getInt() >= numArgs ||
          type.getInput(of.getInt()) != type.getResult(r))
        return joint.emitError("train steps: result ")
               << r << " is not the gradient of an argument of the same type";
      updates.emplace_back(r, of.getInt());
    }

    StringRef base = joint.getSymName();
    std::string name =
        (base.consume_back("_grad") ? base : joint.getSymName()).str() +
        "_train";
    if (symbols.lookup(name))
      return joint.emitError("train steps: @") << name << " already exists";

    MLIRContext *ctx = joint.getContext();
    Location loc = joint.getLoc();
    SmallVector<Type> argTypes(type.getInputs().take_front(numArgs));
    SmallVector<Type> resultTypes;
    SmallVector<DictionaryAttr> argAttrs, resultAttrs, jointResultAttrs;
    joint.getAllResultAttrs(jointResultAttrs);
    for (unsigned i = 0; i < numArgs; ++i)
      argAttrs.push_back(joint.getArgAttrDict(i)
                             ? joint.getArgAttrDict(i)
                             : DictionaryAttr::get(ctx));
    // Unrolled: the forward results of every step; as a loop: the last
    // step's (carried through the loop).
    int64_t reported = unroll ? static_cast<int64_t>(steps) : 1;
    for (int64_t step = 0; step < reported; ++step)
      for (unsigned r = 0; r < numForward; ++r) {
        resultTypes.push_back(type.getResult(r));
        resultAttrs.push_back(jointResultAttrs[r]);
      }
    for (auto [r, arg] : updates) {
      resultTypes.push_back(type.getResult(r));
      resultAttrs.push_back(jointResultAttrs[r]);
    }

    Optimizer rule = getOptimizer();
    bool adam = rule != Optimizer::Sgd;
    // Slots of state per argument: Adam's two moments, SGD's momentum
    // buffer where momentum is used.
    unsigned numSlots = adam ? 2 : (momentum != 0.0 ? 1 : 0);
    bool stateArgs = state == "arguments";
    // The state and the update's arithmetic are at least f32 (bf16 and
    // f16 weights keep f32 moments, as mixed-precision training does); the
    // weight is stored in its own type.
    auto getStateType = [&](Type type) -> Type {
      Type element = cast<RankedTensorType>(type).getElementType();
      return cast<FloatType>(element).getWidth() < 32
                 ? Type(Float32Type::get(ctx))
                 : element;
    };
    auto keepsMaster = [&](unsigned arg) {
      return masterWeights == "f32" &&
             getStateType(type.getInput(arg)) !=
                 cast<RankedTensorType>(type.getInput(arg)).getElementType();
    };
    // With state=arguments: per update, its master and slots, then the
    // step count, as arguments and (after the updated arguments) results.
    auto stateAttrs = [&](unsigned r, std::string what) {
      NamedAttrList attrs;
      attrs.set(kOptimizerStateAttrName, StringAttr::get(ctx, what));
      if (auto layout =
              joint.getResultAttrOfType<LayoutAttr>(r, kLayoutAttrName))
        attrs.set(kLayoutAttrName, layout);
      return attrs.getDictionary(ctx);
    };
    auto stepType = RankedTensorType::get({}, Float32Type::get(ctx));
    if (stateArgs) {
      SmallVector<std::pair<Type, DictionaryAttr>> stateSlots;
      for (auto [r, arg] : updates) {
        auto argType = cast<RankedTensorType>(type.getInput(arg));
        Type stateType = argType.clone(getStateType(argType));
        std::string of = ":" + std::to_string(arg);
        if (keepsMaster(arg))
          stateSlots.emplace_back(stateType, stateAttrs(r, "master" + of));
        for (unsigned slot = 0; slot < numSlots; ++slot)
          stateSlots.emplace_back(
              stateType,
              stateAttrs(r, (adam ? kAdamSlotNames[slot] : kMomentumSlotName)
                                    .str() +
                                of));
      }
      NamedAttrList stepAttrs;
      stepAttrs.set(kOptimizerStateAttrName, StringAttr::get(ctx, "step"));
      stateSlots.emplace_back(stepType, stepAttrs.getDictionary(ctx));
      for (auto [slotType, attrs] : stateSlots) {
        argTypes.push_back(slotType);
        argAttrs.push_back(attrs);
        resultTypes.push_back(slotType);
        resultAttrs.push_back(attrs);
      }
    }

    OpBuilder b(ctx);
    b.setInsertionPointAfter(joint);
    auto trainFunc = func::FuncOp::create(
        b, loc, name, FunctionType::get(ctx, argTypes, resultTypes));
    symbols.insert(trainFunc);
    // An updated argument is laid out as its gradient is (the argument's
    // own layout, dtensor-autodiff's request): the weights stay in that
    // layout across steps instead of being replicated by propagation.
    for (auto [r, arg] : updates)
      if (auto layout =
              joint.getResultAttrOfType<LayoutAttr>(r, kLayoutAttrName))
        if (!argAttrs[arg].get(kLayoutAttrName)) {
          NamedAttrList attrs(argAttrs[arg]);
          attrs.set(kLayoutAttrName, layout);
          argAttrs[arg] = attrs.getDictionary(ctx);
        }
    trainFunc.setAllArgAttrs(argAttrs);
    trainFunc.setAllResultAttrs(resultAttrs);
    Block *entry = trainFunc.addEntryBlock();
    b.setInsertionPointToStart(entry);

    SmallVector<Value> current(entry->getArguments().take_front(numArgs));
    double decay = getWeightDecay();
    DenseMap<unsigned, OptimizerState> states;
    auto requestLayout = [&](Value value, unsigned r) {
      auto layout = joint.getResultAttrOfType<LayoutAttr>(r, kLayoutAttrName);
      auto annotate = value.getDefiningOp<AnnotateOp>();
      if (!layout || (annotate && annotate.getLayout() == layout))
        return value;
      return Value(AnnotateOp::create(b, loc, value.getType(), value, layout));
    };
    auto zerosLike = [&](Type type, Type element) {
      auto tensorType = cast<RankedTensorType>(type);
      Value empty =
          tensor::EmptyOp::create(b, loc, tensorType.getShape(), element);
      Value zero =
          arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
      return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
    };
    // The state: the caller's (state=arguments), or fresh: zero slots and
    // masters copied from the weights; laid out as their arguments.
    Value stepIn;
    unsigned nextStateArg = numArgs;
    for (auto [r, arg] : updates) {
      OptimizerState &slots = states[arg];
      Type stateType = getStateType(type.getInput(arg));
      if (keepsMaster(arg))
        slots.master =
            stateArgs
                ? entry->getArgument(nextStateArg++)
                : requestLayout(
                      createElementwise(
                          b, loc, stateType, ValueRange{current[arg]},
                          [&](OpBuilder &nb, Location nloc, ValueRange x) {
                            return convertFloat(nb, nloc, x[0], stateType);
                          }),
                      r);
      for (unsigned slot = 0; slot < numSlots; ++slot)
        slots.slots.push_back(
            stateArgs ? Value(entry->getArgument(nextStateArg++))
                      : requestLayout(
                            zerosLike(type.getInput(arg), stateType), r));
    }
    if (stateArgs)
      stepIn = entry->getArgument(nextStateArg++);
    Block &jointBody = joint.getBody().front();
    SmallVector<Value> results;

    // One step: the joint body on `current` with seeds of ones, then the
    // update; `stepNumber` (1-based) is Adam's t, a constant when unrolled,
    // from the loop's induction variable (a scalar f64) in a loop.
    auto emitStep = [&](std::optional<int64_t> constantStep,
                        Value stepNumber) -> SmallVector<Value> {
      IRMapping mapping;
      for (unsigned i = 0; i < type.getNumInputs(); ++i) {
        BlockArgument arg = jointBody.getArgument(i);
        if (i < numArgs) {
          mapping.map(arg, current[i]);
          continue;
        }
        // A seed of ones, in the seed's layout.
        auto seedType = cast<RankedTensorType>(arg.getType());
        Value empty = tensor::EmptyOp::create(b, loc, seedType.getShape(),
                                              seedType.getElementType());
        Value one = arith::ConstantOp::create(
            b, loc, b.getFloatAttr(seedType.getElementType(), 1.0));
        Value ones = linalg::FillOp::create(b, loc, one, empty).getResult(0);
        if (auto layout = joint.getArgAttrOfType<LayoutAttr>(i, kLayoutAttrName))
          ones = AnnotateOp::create(b, loc, seedType, ones, layout);
        mapping.map(arg, ones);
      }
      for (Operation &op : jointBody.without_terminator())
        b.clone(op, mapping);
      Operation *ret = jointBody.getTerminator();
      SmallVector<Value> forward;
      for (unsigned r = 0; r < numForward; ++r)
        forward.push_back(mapping.lookup(ret->getOperand(r)));
      for (auto [r, arg] : updates) {
        // The gradient as the joint function returns it (in its requested
        // layout), so that propagation plans the backward as the joint's.
        Value grad = requestLayout(mapping.lookup(ret->getOperand(r)), r);
        Type element = cast<RankedTensorType>(grad.getType()).getElementType();
        Type stateType = getStateType(grad.getType());
        auto constant = [&](OpBuilder &nb, Location nloc, double value) {
          return arith::ConstantOp::create(
              nb, nloc, nb.getFloatAttr(stateType, value));
        };
        // The gradient in the state type, with L2 weight decay (SGD, Adam:
        // g + wd * w; AdamW decays the weight itself below). A body that
        // reads it takes `gradInputs` last: the weight only where L2 decay
        // needs it, then the gradient.
        bool l2 = decay != 0.0 && rule != Optimizer::AdamW;
        OptimizerState &state = states[arg];
        // The weight the update reads and writes: the f32 master where one
        // is kept (then the stored weight is the master rounded), else the
        // weight itself, updated in the state type and stored in its own.
        Value weight = state.master ? state.master : current[arg];
        Type storedType = state.master ? stateType : element;
        auto store = [&, r = r, arg = arg](Value updated) {
          updated = requestLayout(updated, r);
          if (!states[arg].master) {
            current[arg] = updated;
            return;
          }
          states[arg].master = updated;
          current[arg] = requestLayout(
              createElementwise(
                  b, loc, element, ValueRange{updated},
                  [&](OpBuilder &nb, Location nloc, ValueRange x) {
                    return convertFloat(nb, nloc, x[0], element);
                  }),
              r);
        };
        SmallVector<Value> gradInputs;
        if (l2)
          gradInputs.push_back(weight);
        gradInputs.push_back(grad);
        auto decayedGrad = [&](OpBuilder &nb, Location nloc,
                               ValueRange x) -> Value {
          Value g = convertFloat(nb, nloc, x.back(), stateType);
          if (!l2)
            return g;
          Value wide = convertFloat(nb, nloc, x[x.size() - 2], stateType);
          return arith::AddFOp::create(
              nb, nloc, g,
              arith::MulFOp::create(nb, nloc, constant(nb, nloc, decay),
                                    wide));
        };
        if (!adam) {
          // torch.optim.SGD: b = momentum * b + g (b = g at the first
          // step: b starts at zero), w -= lr * b; without momentum
          // w -= lr * g.
          Value direction;
          if (numSlots) {
            SmallVector<Value> inputs{state.slots[0]};
            llvm::append_range(inputs, gradInputs);
            state.slots[0] = requestLayout(
                createElementwise(
                    b, loc, stateType, inputs,
                    [&](OpBuilder &nb, Location nloc, ValueRange x) {
                      Value kept = arith::MulFOp::create(
                          nb, nloc, constant(nb, nloc, momentum), x[0]);
                      return arith::AddFOp::create(
                                 nb, nloc, kept,
                                 decayedGrad(nb, nloc, x.drop_front()))
                          .getResult();
                    }),
                r);
            direction = state.slots[0];
          }
          SmallVector<Value> inputs{weight};
          if (direction)
            inputs.push_back(direction);
          else
            inputs.push_back(grad);
          store(createElementwise(
              b, loc, storedType, inputs,
              [&](OpBuilder &nb, Location nloc, ValueRange x) -> Value {
                Value d = direction ? x[1]
                                    : decayedGrad(nb, nloc, x.take_front(2));
                Value w = convertFloat(nb, nloc, x[0], stateType);
                Value stepped = arith::SubFOp::create(
                    nb, nloc, w,
                    arith::MulFOp::create(
                        nb, nloc, constant(nb, nloc, learningRate), d));
                return convertFloat(nb, nloc, stepped, storedType);
              }));
          continue;
        }
        // torch.optim.Adam / AdamW: m = b1 m + (1 - b1) g,
        // v = b2 v + (1 - b2) g^2, w -= lr * (m / (1 - b1^t)) /
        // (sqrt(v / (1 - b2^t)) + eps); AdamW first w *= 1 - lr * wd.
        // 1 - beta^t, in the body of a generic.
        // `taken` (stepIn's element) is the number of steps before the
        // call, where the caller holds the state.
        auto correction = [&](OpBuilder &nb, Location nloc, double beta,
                              Value taken) -> Value {
          if (constantStep && !taken)
            return constant(nb, nloc,
                            1.0 - std::pow(beta, static_cast<double>(
                                                     *constantStep)));
          Value t = constantStep
                        ? constant(nb, nloc,
                                   static_cast<double>(*constantStep))
                        : convertFloat(nb, nloc, stepNumber, stateType);
          if (taken)
            t = arith::AddFOp::create(
                nb, nloc, t, convertFloat(nb, nloc, taken, stateType));
          Value power = math::PowFOp::create(nb, nloc,
                                             constant(nb, nloc, beta), t);
          return arith::SubFOp::create(nb, nloc, constant(nb, nloc, 1.0),
                                       power);
        };
        auto inputs = [&](Value previous) {
          SmallVector<Value> values{previous};
          llvm::append_range(values, gradInputs);
          return values;
        };
        auto moment = [&](Value previous, double beta, bool square) {
          return requestLayout(
              createElementwise(
                  b, loc, stateType, inputs(previous),
                  [&](OpBuilder &nb, Location nloc, ValueRange x) -> Value {
                    Value g = decayedGrad(nb, nloc, x.drop_front());
                    if (square)
                      g = arith::MulFOp::create(nb, nloc, g, g);
                    Value kept = arith::MulFOp::create(
                        nb, nloc, constant(nb, nloc, beta), x[0]);
                    Value added = arith::MulFOp::create(
                        nb, nloc, constant(nb, nloc, 1.0 - beta), g);
                    return arith::AddFOp::create(nb, nloc, kept, added);
                  }),
              r);
        };
        state.slots[0] = moment(state.slots[0], beta1, /*square=*/false);
        state.slots[1] = moment(state.slots[1], beta2, /*square=*/true);
        SmallVector<Value> scalars;
        if (stepIn)
          scalars.push_back(stepIn);
        store(createElementwise(
                b, loc, storedType,
                ValueRange{weight, state.slots[0], state.slots[1]},
                [&](OpBuilder &nb, Location nloc, ValueRange x) -> Value {
                  Value taken = stepIn ? x[3] : Value();
                  Value w = convertFloat(nb, nloc, x[0], stateType);
                  if (rule == Optimizer::AdamW && decay != 0.0)
                    w = arith::MulFOp::create(
                        nb, nloc, w,
                        constant(nb, nloc, 1.0 - learningRate * decay));
                  Value mHat = arith::DivFOp::create(
                      nb, nloc, x[1], correction(nb, nloc, beta1, taken));
                  Value vHat = arith::DivFOp::create(
                      nb, nloc, x[2], correction(nb, nloc, beta2, taken));
                  Value denom = arith::AddFOp::create(
                      nb, nloc, math::SqrtOp::create(nb, nloc, vHat),
                      constant(nb, nloc, epsilon));
                  Value stepSize = arith::MulFOp::create(
                      nb, nloc, constant(nb, nloc, learningRate),
                      arith::DivFOp::create(nb, nloc, mHat, denom));
                  Value stepped = arith::SubFOp::create(nb, nloc, w, stepSize);
                  return convertFloat(nb, nloc, stepped, storedType);
                },
                scalars));
      }
      return forward;
    };

    if (unroll) {
      for (int64_t step = 0; step < steps; ++step)
        llvm::append_range(results, emitStep(step + 1, Value()));
    } else {
      // One scf.for over the steps. Carried: the updated arguments (and
      // the optimizer's state), laid out as the arguments, and the forward
      // results of the step (zeros before the first; propagation gives
      // them the layout the step yields).
      // The carried state in loop order: updated arguments, then the
      // optimizer's state; `setCarried` rebinds it to the loop's values.
      auto carried = [&]() {
        SmallVector<Value> values;
        for (auto [r, arg] : updates)
          values.push_back(current[arg]);
        for (auto [r, arg] : updates) {
          if (states[arg].master)
            values.push_back(states[arg].master);
          llvm::append_range(values, states[arg].slots);
        }
        return values;
      };
      auto setCarried = [&](ValueRange values) {
        unsigned i = 0;
        for (auto [r, arg] : updates)
          current[arg] = values[i++];
        for (auto [r, arg] : updates) {
          if (states[arg].master)
            states[arg].master = values[i++];
          for (Value &slot : states[arg].slots)
            slot = values[i++];
        }
      };
      SmallVector<Value> inits = carried();
      for (unsigned r = 0; r < numForward; ++r)
          inits.push_back(zerosLike(
            type.getResult(r),
            cast<RankedTensorType>(type.getResult(r)).getElementType()));
      Value lower = arith::ConstantIndexOp::create(b, loc, 0);
      Value upper = arith::ConstantIndexOp::create(b, loc, steps);
      Value stride = arith::ConstantIndexOp::create(b, loc, 1);
      auto loop = scf::ForOp::create(b, loc, lower, upper, stride, inits);
      Block *body = loop.getBody();
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(body);
      setCarried(loop.getRegionIterArgs());
      // t = iv + 1 as a float, for Adam's bias corrections.
      Value stepNumber;
      if (adam) {
        Value next = arith::AddIOp::create(b, loc, loop.getInductionVar(),
                                           stride);
        Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), next);
        stepNumber = arith::SIToFPOp::create(b, loc, b.getF64Type(), asInt);
      }
      SmallVector<Value> forward = emitStep(std::nullopt, stepNumber);
      SmallVector<Value> yielded = carried();
      unsigned numCarried = yielded.size();
      // The step's forward results as the joint function returns them
      // (where it requests a layout), so that propagation plans the step as
      // it plans the joint function.
      for (auto [r, value] : llvm::enumerate(forward))
        yielded.push_back(requestLayout(value, r));
      scf::YieldOp::create(b, loc, yielded);
      b.setInsertionPointAfter(loop);
      llvm::append_range(results,
                         loop.getResults().drop_front(numCarried));
      setCarried(loop.getResults());
    }
    for (auto [r, arg] : updates)
      results.push_back(current[arg]);
    if (stateArgs) {
      for (auto [r, arg] : updates) {
        if (states[arg].master)
          results.push_back(states[arg].master);
        llvm::append_range(results, states[arg].slots);
      }
      // The steps taken after the call's.
      results.push_back(createElementwise(
          b, loc, stepType.getElementType(), ValueRange{stepIn},
          [&](OpBuilder &nb, Location nloc, ValueRange x) -> Value {
            return arith::AddFOp::create(
                nb, nloc, x[0],
                arith::ConstantOp::create(
                    nb, nloc,
                    nb.getF32FloatAttr(static_cast<float>(steps))));
          }));
    }
    func::ReturnOp::create(b, loc, results);
    return success();
  }

  Optimizer getOptimizer() const {
    if (optimizer == "adam")
      return Optimizer::Adam;
    if (optimizer == "adamw")
      return Optimizer::AdamW;
    return Optimizer::Sgd;
  }

  /// The weight decay: as given, else torch.optim's default (0.01 for
  /// AdamW, 0 otherwise).
  double getWeightDecay() const {
    if (weightDecay != -1.0)
      return weightDecay;
    return getOptimizer() == Optimizer::AdamW ? 0.01 : 0.0;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw") {
      module.emitError("train steps: unknown optimizer '")
          << optimizer << "' (expected sgd, adam or adamw)";
      return signalPassFailure();
    }
    if (momentum != 0.0 && optimizer != "sgd") {
      module.emitError("train steps: momentum is an option of sgd (Adam's "
                       "is beta1)");
      return signalPassFailure();
    }
    // weight-decay's default is the sentinel -1 (the optimizer's own).
    if (!(momentum >= 0.0) ||
        !(weightDecay >= 0.0 || weightDecay == -1.0)) {
      module.emitError("train steps: momentum and weight-decay must be "
                       ">= 0");
      return signalPassFailure();
    }
    if (state != "fresh" && state != "arguments") {
      module.emitError("train steps: unknown state '")
          << state << "' (expected fresh or arguments)";
      return signalPassFailure();
    }
    if (masterWeights != "none" && masterWeights != "f32") {
      module.emitError("train steps: unknown master-weights '")
          << masterWeights << "' (expected none or f32)";
      return signalPassFailure();
    }
    if (steps < 1) {
      module.emitError("train steps: steps must be at least 1, got ")
          << static_cast<int64_t>(steps);
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> joints;
    if (functions.empty()) {
      for (auto func : module.getOps<func::FuncOp>())
        if (func->hasAttr(kForwardResultsAttrName))
          joints.push_back(func);
      if (joints.empty()) {
        module.emitError("train steps: no joint forward + backward function "
                         "(run dtensor-autodiff first)");
        return signalPassFailure();
      }
    } else {
      for (const std::string &name : functions) {
        auto func = symbols.lookup<func::FuncOp>(name);
        if (!func || func.isExternal()) {
          module.emitError("train steps: no function @") << name
                                                       << " with a body";
          return signalPassFailure();
        }
        joints.push_back(func);
      }
    }
    for (func::FuncOp joint : joints)
      if (failed(train(joint, symbols)))
        return signalPassFailure();
  }
};
} // namespace
