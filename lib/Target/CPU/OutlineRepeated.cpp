//===- OutlineRepeated.cpp - one function for repeated layers -------------===//
//
// An N-layer model is one function of N copies of the same ops. Upstream
// lowering passes (bufferization, loops, the LLVM conversions) work on whole
// functions, and several grow faster than linearly with the function's
// size. This pass cuts the repeated run of a function body into pieces of
// one period, outlines one piece and calls it for every identical piece, so
// that everything after it processes one layer however many there are.
//
// All of it is linear in the number of ops: fingerprints of the top-level
// ops, the period from the gaps between equal fingerprints, one lockstep
// comparison of each piece with the outlined function.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CPU/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_OUTLINEREPEATEDPASS
#include "dtensor/Target/CPU/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// Whether attribute `name` is one of the project's discardable
/// annotations (`dtensor.module = "layers.3.attn"`, layouts): notes about
/// where an op came from that differ from layer to layer and that the
/// lowering drops.
static bool isAnnotation(StringAttr name) {
  return name.getValue().starts_with("dtensor.");
}

/// The attributes that make an op what it is: inherent and discardable,
/// annotations left out.
static SmallVector<NamedAttribute> getSemanticAttrs(Operation *op) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute attr : op->getAttrs())
    if (!isAnnotation(attr.getName()))
      attrs.push_back(attr);
  return attrs;
}

/// A fingerprint of an op that ignores its operands: name, attributes
/// (annotations left out), types, and the names of the ops nested in it.
static llvm::hash_code fingerprint(Operation *op) {
  llvm::hash_code hash = OperationEquivalence::computeHash(
      op, OperationEquivalence::ignoreHashValue,
      OperationEquivalence::ignoreHashValue,
      OperationEquivalence::IgnoreLocations |
          OperationEquivalence::IgnoreDiscardableAttrs);
  for (NamedAttribute attr : op->getDiscardableAttrs())
    if (!isAnnotation(attr.getName()))
      hash = llvm::hash_combine(hash, attr.getName(), attr.getValue());
  hash = llvm::hash_combine(hash, op->getOperandTypes().size());
  for (Type type : op->getOperandTypes())
    hash = llvm::hash_combine(hash, type);
  op->walk([&](Operation *nested) {
    if (nested != op)
      hash = llvm::hash_combine(hash, nested->getName(),
                                nested->getNumOperands());
  });
  return hash;
}

/// The outlining of one function body.
class Outliner {
public:
  Outliner(func::FuncOp func, SymbolTable &symbols, int64_t minOps,
           int64_t minRepeats)
      : func(func), body(func.getBody().front()), symbols(symbols),
        minOps(std::max<int64_t>(minOps, 1)),
        minRepeats(std::max<int64_t>(minRepeats, 2)) {}

  /// Outlines the longest repeated run, if any; returns the number of
  /// pieces replaced by calls (0: nothing changed).
  int64_t run();
  /// Outlines each op with regions that occurs `minRepeats` times or more,
  /// wherever it is, into one function per kind; returns the number of
  /// ops replaced by calls.
  int64_t runSingleOps();

private:
  /// The position of the top-level op holding `op`, or -1 outside the body.
  int64_t positionOf(Operation *op) const {
    Operation *top = body.findAncestorOpInBlock(*op);
    if (!top)
      return -1;
    auto it = position.find(top);
    return it == position.end() ? -1 : static_cast<int64_t>(it->second);
  }
  /// The position of the top-level op defining `value` (or holding the
  /// block that has it as an argument), or -1.
  int64_t definedAt(Value value) const {
    if (Operation *def = value.getDefiningOp())
      return positionOf(def);
    Operation *parent = value.getParentBlock()->getParentOp();
    return parent == func ? -1 : positionOf(parent);
  }
  bool inPiece(int64_t pos, unsigned begin) const {
    return pos >= static_cast<int64_t>(begin) &&
           pos < static_cast<int64_t>(begin + period);
  }

  /// Whether `value` is made by side effect free ops from constants alone,
  /// so that a clone may stand for it.
  bool isRematerializable(Value value);
  void collectRemat(Operation *op, llvm::SetVector<Operation *> &remat);

  /// The period and the first op of the longest periodic run; false if no
  /// run has `minRepeats` pieces of at least `minOps` ops.
  bool findRun(unsigned &begin, unsigned &pieces);
  /// The first cut of a run of `span` periodic ops from `runStart`, and
  /// the number of pieces from there: no future crosses it, then as many
  /// pieces as possible, then as few values crossing it as possible.
  bool chooseCut(unsigned runStart, unsigned span, unsigned &begin,
                 unsigned &pieces);
  /// Whether a function can take or return a value of `type` (a future is
  /// consumed where it is made).
  static bool isPassable(Type type) { return !isa<FutureType>(type); }

  void collectOps();
  /// Outlines the piece at `starts[0]` and replaces every identical piece
  /// of `starts` by a call, if there are `minRepeats` of them.
  int64_t outlineAt(ArrayRef<unsigned> starts);
  func::FuncOp outline(unsigned begin, unsigned &numRemat);
  bool matches(unsigned begin, func::FuncOp outlined, unsigned numRemat,
               SmallVectorImpl<Value> &callArgs);
  bool equalOps(Operation *a, Operation *b, unsigned begin,
                SmallVectorImpl<Value> &callArgs);
  bool equalValues(Value a, Value b, unsigned begin,
                   SmallVectorImpl<Value> &callArgs);
  void replace(unsigned begin, func::FuncOp outlined,
               ArrayRef<Value> callArgs);

public:
  /// Functions outlined so far.
  int64_t functions = 0;

private:
  func::FuncOp func;
  Block &body;
  SymbolTable &symbols;
  int64_t minOps, minRepeats;

  SmallVector<Operation *> ops;
  DenseMap<Operation *, unsigned> position;
  unsigned period = 0;
  /// Results (offset in the piece, result number) some piece's ops outside
  /// it use.
  SmallVector<std::pair<unsigned, unsigned>> escaping;
  DenseMap<Value, bool> rematerializable;

  /// During a comparison: values of the outlined function -> the piece's.
  DenseMap<Value, Value> valueMap;
  /// Remat clones of the outlined function -> the piece's ops found equal.
  DenseSet<std::pair<Operation *, Operation *>> equalRemat;
  /// The remat clones of the outlined function.
  DenseSet<Operation *> rematClones;
  Block *entry = nullptr;
};

bool Outliner::isRematerializable(Value value) {
  auto it = rematerializable.find(value);
  if (it != rematerializable.end())
    return it->second;
  Operation *def = value.getDefiningOp();
  bool ok = def && def->getNumSuccessors() == 0 && isMemoryEffectFree(def) &&
            !isa<func::CallOp>(def);
  // Nested ops use only what is defined in `def` (a linalg.fill body).
  if (ok)
    def->walk([&](Operation *nested) {
      if (nested == def)
        return;
      for (Value operand : nested->getOperands()) {
        Operation *owner = operand.getDefiningOp()
                               ? operand.getDefiningOp()
                               : operand.getParentBlock()->getParentOp();
        if (!def->isAncestor(owner))
          ok = false;
      }
    });
  rematerializable[value] = ok; // Break cycles (graph regions) as false.
  if (ok)
    for (Value operand : def->getOperands())
      if (!isRematerializable(operand)) {
        ok = false;
        break;
      }
  rematerializable[value] = ok;
  return ok;
}

void Outliner::collectRemat(Operation *op,
                            llvm::SetVector<Operation *> &remat) {
  if (remat.contains(op))
    return;
  for (Value operand : op->getOperands())
    collectRemat(operand.getDefiningOp(), remat);
  remat.insert(op);
}

bool Outliner::findRun(unsigned &begin, unsigned &pieces) {
  unsigned n = ops.size();
  SmallVector<llvm::hash_code> hashes;
  hashes.reserve(n);
  for (Operation *op : ops)
    hashes.push_back(fingerprint(op));

  // Candidate periods: gaps between consecutive equal fingerprints. A
  // layer's period is the gap of nearly every kind of op in it, a period
  // inside a layer (three projections in a row) that of a few kinds seen
  // often: rank gaps both by how many kinds have them and by how often they
  // occur, and try the first of each (a fixed number, so linear in all).
  DenseMap<size_t, unsigned> last;
  DenseMap<unsigned, unsigned> gapCount, gapKinds;
  DenseSet<std::pair<size_t, unsigned>> seenKindGap;
  for (unsigned i = 0; i < n; ++i) {
    size_t hash = static_cast<size_t>(hashes[i]);
    auto [it, inserted] = last.try_emplace(hash, i);
    if (!inserted) {
      unsigned gap = i - it->second;
      if (gap >= static_cast<unsigned>(minOps)) {
        ++gapCount[gap];
        if (seenKindGap.insert({hash, gap}).second)
          ++gapKinds[gap];
      }
      it->second = i;
    }
  }
  auto top = [](const DenseMap<unsigned, unsigned> &counts, size_t limit) {
    SmallVector<std::pair<unsigned, unsigned>> ranked; // (count, gap)
    for (auto [gap, count] : counts)
      ranked.emplace_back(count, gap);
    llvm::sort(ranked, [](auto a, auto b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    if (ranked.size() > limit)
      ranked.resize(limit);
    return ranked;
  };
  llvm::SetVector<unsigned> candidates;
  for (auto [count, gap] : top(gapKinds, 16))
    candidates.insert(gap);
  for (auto [count, gap] : top(gapCount, 16))
    candidates.insert(gap);

  // The period whose longest run saves the most ops.
  uint64_t bestSaved = 0;
  for (unsigned p : candidates) {
    unsigned runStart = 0, runLength = 0, start = 0, length = 0;
    for (unsigned i = 0; i + p < n; ++i) {
      if (hashes[i] != hashes[i + p]) {
        length = 0;
        continue;
      }
      if (length++ == 0)
        start = i;
      if (length > runLength) {
        runLength = length;
        runStart = start;
      }
    }
    if ((runLength + p) / p < static_cast<unsigned>(minRepeats))
      continue;
    unsigned previous = period, cut = 0, k = 0;
    period = p;
    bool found = chooseCut(runStart, runLength + p, cut, k);
    uint64_t saved = found ? uint64_t(k - 1) * p : 0;
    if (found && (saved > bestSaved || (saved == bestSaved && p < previous))) {
      bestSaved = saved;
      pieces = k;
      begin = cut;
    } else {
      period = previous;
    }
  }
  return bestSaved > 0;
}

bool Outliner::chooseCut(unsigned runStart, unsigned span, unsigned &begin,
                         unsigned &pieces) {
  // For each cut c in [runStart, runStart + period): the values defined
  // before c and used at or after it, and how many of them are futures (a
  // collective in flight across the cut: not passable to a function).
  unsigned lo = runStart, hi = runStart + std::min(period, span) - 1;
  SmallVector<int64_t> delta(hi - lo + 2, 0), futureDelta(hi - lo + 2, 0);
  for (unsigned d = 0; d < hi && d < ops.size(); ++d) {
    for (Value result : ops[d]->getResults()) {
      if (isRematerializable(result))
        continue;
      int64_t lastUse = -1;
      for (Operation *user : result.getUsers())
        lastUse = std::max(lastUse, positionOf(user));
      // Crosses cuts c with d < c <= lastUse.
      int64_t from = std::max<int64_t>(d + 1, lo);
      int64_t to = std::min<int64_t>(lastUse, hi);
      if (from > to)
        continue;
      delta[from - lo] += 1;
      delta[to - lo + 1] -= 1;
      if (!isPassable(result.getType())) {
        futureDelta[from - lo] += 1;
        futureDelta[to - lo + 1] -= 1;
      }
    }
  }
  bool found = false;
  int64_t bestCount = 0, running = 0, futures = 0;
  for (unsigned c = lo; c <= hi; ++c) {
    running += delta[c - lo];
    futures += futureDelta[c - lo];
    unsigned k = (span - (c - lo)) / period;
    if (futures || k < static_cast<unsigned>(minRepeats))
      continue;
    // Most pieces first, then fewest values crossing.
    if (!found || k > pieces || (k == pieces && running < bestCount)) {
      found = true;
      begin = c;
      pieces = k;
      bestCount = running;
    }
  }
  return found;
}

func::FuncOp Outliner::outline(unsigned begin, unsigned &numRemat) {
  llvm::SetVector<Value> args;
  llvm::SetVector<Operation *> remat;
  for (unsigned t = 0; t < period; ++t)
    ops[begin + t]->walk<WalkOrder::PreOrder>([&](Operation *op) {
      for (Value operand : op->getOperands()) {
        if (inPiece(definedAt(operand), begin))
          continue;
        if (isRematerializable(operand))
          collectRemat(operand.getDefiningOp(), remat);
        else
          args.insert(operand);
      }
    });
  SmallVector<Type> argTypes, resultTypes;
  for (Value arg : args)
    argTypes.push_back(arg.getType());
  if (!llvm::all_of(argTypes, isPassable))
    return nullptr;
  for (auto [t, r] : escaping)
    resultTypes.push_back(ops[begin + t]->getResult(r).getType());

  OpBuilder builder(func);
  auto outlined = func::FuncOp::create(
      builder, ops[begin]->getLoc(), (func.getSymName() + "_repeated").str(),
      builder.getFunctionType(argTypes, resultTypes));
  outlined.setPrivate();
  symbols.insert(outlined, Block::iterator(func));
  entry = outlined.addEntryBlock();
  IRMapping mapping;
  for (auto [arg, value] : llvm::zip(entry->getArguments(), args))
    mapping.map(value, arg);
  builder.setInsertionPointToStart(entry);
  rematClones.clear();
  for (Operation *op : remat)
    rematClones.insert(builder.clone(*op, mapping));
  numRemat = remat.size();
  for (unsigned t = 0; t < period; ++t)
    builder.clone(*ops[begin + t], mapping);
  // The function stands for every piece: the first one's annotations would
  // be wrong for the others.
  entry->walk([](Operation *op) {
    for (NamedAttribute attr : llvm::to_vector(op->getDiscardableAttrs()))
      if (isAnnotation(attr.getName()))
        op->removeDiscardableAttr(attr.getName());
  });
  SmallVector<Value> results;
  for (auto [t, r] : escaping)
    results.push_back(mapping.lookup(ops[begin + t]->getResult(r)));
  func::ReturnOp::create(builder, func.getLoc(), results);
  return outlined;
}

bool Outliner::equalValues(Value a, Value b, unsigned begin,
                           SmallVectorImpl<Value> &callArgs) {
  // A call argument of another type (two embeddings of different tables
  // in otherwise equal pieces) is not the same value.
  if (a.getType() != b.getType())
    return false;
  auto it = valueMap.find(a);
  if (it != valueMap.end())
    return it->second == b;
  bool bInside = inPiece(definedAt(b), begin);
  if (auto arg = dyn_cast<BlockArgument>(a); arg && arg.getOwner() == entry) {
    if (bInside)
      return false;
    Value &slot = callArgs[arg.getArgNumber()];
    if (!slot)
      slot = b;
    return slot == b;
  }
  Operation *clone = a.getDefiningOp();
  if (!clone || !rematClones.contains(clone) || bInside ||
      !isRematerializable(b))
    return false;
  Operation *def = b.getDefiningOp();
  if (cast<OpResult>(a).getResultNumber() != cast<OpResult>(b).getResultNumber())
    return false;
  if (equalRemat.contains({clone, def}))
    return true;
  // Remat ops are compared by structure; their values are not mapped (two
  // equal constants of a piece may share one clone).
  DenseMap<Value, Value> saved;
  std::swap(saved, valueMap);
  bool equal = equalOps(clone, def, begin, callArgs);
  std::swap(saved, valueMap);
  if (equal)
    equalRemat.insert({clone, def});
  return equal;
}

bool Outliner::equalOps(Operation *a, Operation *b, unsigned begin,
                        SmallVectorImpl<Value> &callArgs) {
  if (a->getName() != b->getName() ||
      a->getNumOperands() != b->getNumOperands() ||
      a->getNumResults() != b->getNumResults() ||
      a->getNumRegions() != b->getNumRegions() || a->getNumSuccessors() ||
      b->getNumSuccessors() || a->getResultTypes() != b->getResultTypes() ||
      getSemanticAttrs(a) != getSemanticAttrs(b))
    return false;
  for (auto [x, y] : llvm::zip(a->getOperands(), b->getOperands()))
    if (!equalValues(x, y, begin, callArgs))
      return false;
  for (auto [ra, rb] : llvm::zip(a->getRegions(), b->getRegions())) {
    if (ra.getBlocks().size() != rb.getBlocks().size())
      return false;
    for (auto [ba, bb] : llvm::zip(ra, rb)) {
      if (ba.getNumArguments() != bb.getNumArguments() ||
          ba.getOperations().size() != bb.getOperations().size())
        return false;
      for (auto [x, y] : llvm::zip(ba.getArguments(), bb.getArguments())) {
        if (x.getType() != y.getType())
          return false;
        valueMap[x] = y;
      }
      for (auto [x, y] : llvm::zip(ba, bb))
        if (!equalOps(&x, &y, begin, callArgs))
          return false;
    }
  }
  for (auto [x, y] : llvm::zip(a->getResults(), b->getResults()))
    valueMap[x] = y;
  return true;
}

bool Outliner::matches(unsigned begin, func::FuncOp outlined,
                       unsigned numRemat, SmallVectorImpl<Value> &callArgs) {
  valueMap.clear();
  callArgs.assign(outlined.getNumArguments(), Value());
  auto it = std::next(entry->begin(), numRemat);
  for (unsigned t = 0; t < period; ++t, ++it)
    if (!equalOps(&*it, ops[begin + t], begin, callArgs))
      return false;
  // An argument no op uses (impossible by construction) would stay null.
  return llvm::all_of(callArgs, [](Value v) { return static_cast<bool>(v); });
}

void Outliner::replace(unsigned begin, func::FuncOp outlined,
                       ArrayRef<Value> callArgs) {
  OpBuilder builder(ops[begin]);
  auto call =
      func::CallOp::create(builder, ops[begin]->getLoc(), outlined, callArgs);
  for (auto [i, entry] : llvm::enumerate(escaping)) {
    Value old = ops[begin + entry.first]->getResult(entry.second);
    old.replaceUsesWithIf(call.getResult(i), [&](OpOperand &use) {
      return !inPiece(positionOf(use.getOwner()), begin);
    });
  }
  for (unsigned t = period; t-- > 0;) {
    position.erase(ops[begin + t]);
    ops[begin + t]->erase();
    ops[begin + t] = nullptr;
  }
  // The caches are keyed by values and ops that may have just been erased
  // (and whose storage a new op may reuse).
  rematerializable.clear();
  equalRemat.clear();
}

void Outliner::collectOps() {
  ops.clear();
  position.clear();
  for (Operation &op : body.without_terminator()) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
}

int64_t Outliner::run() {
  collectOps();
  unsigned begin = 0, pieces = 0;
  if (ops.size() < 2 * static_cast<size_t>(minOps) || !findRun(begin, pieces))
    return 0;
  SmallVector<unsigned> starts;
  for (unsigned k = 0; k < pieces; ++k)
    starts.push_back(begin + k * period);
  return outlineAt(starts);
}

int64_t Outliner::runSingleOps() {
  collectOps();
  period = 1;
  // Ops with regions (loop nests after lowering) by fingerprint, in order.
  llvm::MapVector<size_t, SmallVector<unsigned>> groups;
  for (auto [i, op] : llvm::enumerate(ops))
    if (op->getNumRegions() && !isa<func::CallOp>(op) &&
        !isa<DTensorDialect>(op->getDialect()))
      groups[static_cast<size_t>(fingerprint(op))].push_back(i);
  int64_t calls = 0;
  for (auto &[hash, starts] : groups)
    if (starts.size() >= static_cast<size_t>(minRepeats))
      calls += outlineAt(starts);
  return calls;
}

int64_t Outliner::outlineAt(ArrayRef<unsigned> starts) {
  // Results used outside their piece, in any piece.
  llvm::SetVector<std::pair<unsigned, unsigned>> escapes;
  for (unsigned start : starts)
    for (unsigned t = 0; t < period; ++t)
      for (OpResult result : ops[start + t]->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !inPiece(positionOf(user), start);
            }))
          escapes.insert({t, result.getResultNumber()});
  escaping.assign(escapes.begin(), escapes.end());
  llvm::sort(escaping);

  for (auto [t, r] : escaping)
    if (!isPassable(ops[starts.front() + t]->getResult(r).getType()))
      return 0;
  unsigned numRemat = 0;
  func::FuncOp outlined = outline(starts.front(), numRemat);
  if (!outlined)
    return 0;
  // Count the identical pieces first: fewer than `minRepeats` are not worth
  // a function.
  SmallVector<Value> callArgs;
  int64_t identical = llvm::count_if(starts, [&](unsigned start) {
    return matches(start, outlined, numRemat, callArgs);
  });
  if (identical < minRepeats) {
    symbols.erase(outlined);
    return 0;
  }
  ++functions;
  int64_t calls = 0;
  for (unsigned start : starts) {
    // Earlier replacements changed the values this piece uses: compare
    // again for its call's arguments.
    if (!matches(start, outlined, numRemat, callArgs))
      continue;
    replace(start, outlined, callArgs);
    ++calls;
  }
  return calls;
}

struct OutlineRepeatedPass
    : dtensor::impl::OutlineRepeatedPassBase<OutlineRepeatedPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      // What is left after one run may hold another repeated run (the
      // first layers, which the scheduler gave extra work, or a second kind
      // of layer): a few more runs, each linear.
      for (int round = 0; round < 4; ++round) {
        Outliner outliner(func, symbols, minOps, minRepeats);
        int64_t calls = outliner.run();
        numOutlined += outliner.functions;
        numCalls += calls;
        if (!calls)
          break;
      }
      // Single ops that still repeat where no run of them does (work the
      // scheduler spread over the first layers, a model's odd layers): one
      // function per kind of op.
      Outliner outliner(func, symbols, minOps, minRepeats);
      numCalls += outliner.runSingleOps();
      numOutlined += outliner.functions;
    }
  }
};

} // namespace
