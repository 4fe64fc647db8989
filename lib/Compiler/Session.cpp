//===- Session.cpp - the embedded C++ API of the compiler -----------------===//

#include "dtensor/Compiler/Session.h"

#include "DTensor/DTensor.h"
#include "dtensor/Compiler/Pipelines.h"
#include "dtensor/Compiler/Registration.h"
#include "dtensor/Sharding/Layout.h"
#include "dtensor/Transforms/Passes.h"
#include "dtensor/Transforms/Screen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace mlir;
using namespace mlir::dtensor;

static constexpr llvm::StringLiteral kSignaturesAttrName = "dtensor.signatures";

struct Session::Impl {
  Impl() : context(makeRegistry()) { context.loadAllAvailableDialects(); }

  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    registerDialects(registry);
    return registry;
  }

  MLIRContext context;
  DiagnosticCallback callback;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
};

Session::Session() : impl(std::make_unique<Impl>()) {
  static std::once_flag once;
  std::call_once(once, [] { registerPasses(); });
}

Session::~Session() = default;

MLIRContext &Session::getContext() { return impl->context; }

void Session::setDiagnosticCallback(DiagnosticCallback callback) {
  impl->callback = std::move(callback);
  impl->handler = std::make_unique<ScopedDiagnosticHandler>(
      &impl->context, [this](mlir::Diagnostic &diag) {
        dtensor::Diagnostic out;
        switch (diag.getSeverity()) {
        case DiagnosticSeverity::Error:
          out.severity = dtensor::Diagnostic::Severity::Error;
          break;
        case DiagnosticSeverity::Warning:
          out.severity = dtensor::Diagnostic::Severity::Warning;
          break;
        case DiagnosticSeverity::Note:
          out.severity = dtensor::Diagnostic::Severity::Note;
          break;
        case DiagnosticSeverity::Remark:
          out.severity = dtensor::Diagnostic::Severity::Remark;
          break;
        }
        if (auto loc = dyn_cast<FileLineColLoc>(diag.getLocation()))
          out.location =
              (loc.getFilename().getValue() + ":" + llvm::Twine(loc.getLine()) +
               ":" + llvm::Twine(loc.getColumn()))
                  .str();
        out.message = diag.str();
        impl->callback(out);
        for (mlir::Diagnostic &note : diag.getNotes()) {
          dtensor::Diagnostic n{dtensor::Diagnostic::Severity::Note, "",
                                note.str()};
          impl->callback(n);
        }
        return success();
      });
}

FailureOr<OwningOpRef<ModuleOp>> Session::parse(llvm::StringRef source,
                                                llvm::StringRef name) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, name), llvm::SMLoc());
  std::unique_ptr<SourceMgrDiagnosticHandler> printer;
  if (!impl->callback)
    printer =
        std::make_unique<SourceMgrDiagnosticHandler>(sourceMgr, &impl->context);
  OwningOpRef<ModuleOp> module =
      parseAndScreen(sourceMgr, &impl->context);
  if (!module)
    return failure();
  return module;
}

FailureOr<OwningOpRef<ModuleOp>> Session::parseFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (!buffer) {
    emitError(UnknownLoc::get(&impl->context))
        << "cannot read '" << path << "': " << buffer.getError().message();
    return failure();
  }
  return parse((*buffer)->getBuffer(), path);
}

/// Records the tensor signature of each public function, which the LLVM
/// stage no longer shows, for Executable::invoke.
static void recordSignatures(ModuleOp module) {
  SmallVector<NamedAttribute> entries;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      entries.emplace_back(func.getSymNameAttr(),
                           TypeAttr::get(func.getFunctionType()));
  module->setAttr(kSignaturesAttrName,
                  DictionaryAttr::get(module.getContext(), entries));
}

LogicalResult Session::lower(ModuleOp module, Stage to,
                             const PipelineOptions &options, Stage from) {
  // Signatures are read at the scheduled stage, before lowering erases them.
  Stage first = to == Stage::LLVM && from < Stage::LLVM ? Stage::Scheduled : to;
  auto run = [&](Stage begin, Stage end) {
    PassManager pm(&impl->context);
    std::string error;
    if (failed(buildPipeline(pm, begin, end, options, &error)))
      return LogicalResult(emitError(module.getLoc()) << error);
    return pm.run(module);
  };
  if (failed(run(from, first)))
    return failure();
  if (first == to)
    return success();
  recordSignatures(module);
  return run(Stage::Scheduled, Stage::LLVM);
}

LogicalResult Session::runPipeline(ModuleOp module, llvm::StringRef pipeline) {
  PassManager pm(&impl->context, ModuleOp::getOperationName());
  std::string error;
  llvm::raw_string_ostream os(error);
  // `builtin.module(...)` names the passes of the module itself (as in
  // mlir-opt's --pass-pipeline). Parsed into a module pass manager as is,
  // it would become a pipeline of the modules nested in this one.
  StringRef text = pipeline.trim();
  if (text.starts_with(ModuleOp::getOperationName())) {
    FailureOr<OpPassManager> anchored = parsePassPipeline(text, os);
    if (failed(anchored))
      return emitError(module.getLoc()) << "invalid pipeline: " << error;
    if (anchored->getOpAnchorName() != ModuleOp::getOperationName())
      return emitError(module.getLoc())
             << "invalid pipeline: anchored on '" << anchored->getOpAnchorName()
             << "', expected '" << ModuleOp::getOperationName() << "'";
    static_cast<OpPassManager &>(pm) = std::move(*anchored);
  } else if (failed(parsePassPipeline(text, pm, os))) {
    return emitError(module.getLoc()) << "invalid pipeline: " << error;
  }
  return pm.run(module);
}

void Session::stripPlacements(ModuleOp module) {
  // Layout ops, and the layouts propagation (or a test's input) recorded on
  // other ops: with any left, propagation would start from them and
  // partition the "unsharded" program.
  module.walk([](Operation *op) {
    if (auto annotate = dyn_cast<AnnotateOp>(op)) {
      annotate.getResult().replaceAllUsesWith(annotate.getInput());
      annotate.erase();
    } else if (auto redistribute = dyn_cast<RedistributeOp>(op)) {
      redistribute.getResult().replaceAllUsesWith(redistribute.getInput());
      redistribute.erase();
    } else {
      op->removeAttr(kLayoutsAttrName);
      op->removeAttr(kLayoutAttrName);
    }
  });
  for (auto func : module.getOps<func::FuncOp>()) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      func.removeArgAttr(i, kLayoutAttrName);
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      func.removeResultAttr(
          i, StringAttr::get(module.getContext(), kLayoutAttrName));
  }
}

std::string Session::print(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}


FailureOr<std::unique_ptr<Executable>> Session::compile(ModuleOp module) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto executable = std::unique_ptr<Executable>(new Executable());
  if (auto signatures =
          module->getAttrOfType<DictionaryAttr>(kSignaturesAttrName)) {
    for (NamedAttribute entry : signatures) {
      auto type =
          cast<FunctionType>(cast<TypeAttr>(entry.getValue()).getValue());
      Executable::Signature signature;
      auto convert = [&](TypeRange types, auto &out) -> LogicalResult {
        for (Type t : types) {
          auto tensor = dyn_cast<RankedTensorType>(t);
          std::optional<ElementType> element =
              tensor ? getHostElementType(tensor.getElementType()) : std::nullopt;
          if (!element)
            return emitError(module.getLoc())
                   << "function '" << entry.getName().getValue()
                   << "' has a parameter of type " << t
                   << " that hosts cannot pass (ranked f32/f64/i32/i64 "
                      "tensors only)";
          out.emplace_back(*element, tensor.getRank());
        }
        return success();
      };
      if (failed(convert(type.getInputs(), signature.args)) ||
          failed(convert(type.getResults(), signature.results)))
        return failure();
      executable->signatures[entry.getName().getValue()] = signature;
    }
    module->removeAttr(kSignaturesAttrName);
  }
  ExecutionEngineOptions options;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  SmallVector<StringRef, 1> libraries = {DTENSOR_C_RUNNER_UTILS};
  options.sharedLibPaths = libraries;
  auto engine = ExecutionEngine::create(module, options);
  if (!engine) {
    std::string message = llvm::toString(engine.takeError());
    return emitError(module.getLoc()) << "JIT compilation failed: " << message;
  }
  executable->engine = std::move(*engine);
  return executable;
}

Executable::~Executable() = default;

namespace {
/// An MLIR ranked memref descriptor of any rank, laid out as the C
/// interface expects: {allocated, aligned, offset, sizes[rank],
/// strides[rank]}.
struct Descriptor {
  explicit Descriptor(int64_t rank) : words(3 + 2 * rank, 0) {}
  std::vector<int64_t> words;
  void *data() { return words.data(); }
};
} // namespace

llvm::Expected<std::vector<HostTensor>>
Executable::invoke(llvm::StringRef name,
                   llvm::ArrayRef<const HostTensor *> args) {
  auto fail = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "calling '" + name + "': " + message);
  };
  auto it = signatures.find(name);
  if (it == signatures.end())
    return fail("no such public function");
  const Signature &signature = it->second;
  if (args.size() != signature.args.size())
    return fail("expected " + llvm::Twine(signature.args.size()) +
                " arguments, got " + llvm::Twine(args.size()));
  // Compiled code may write into its argument buffers (bufferization
  // treats function arguments as writable): give it copies, so that the
  // caller's tensors stay unchanged and repeated calls see the same inputs.
  std::vector<std::vector<char>> copies;
  for (const HostTensor *arg : args)
    copies.push_back(arg->data);
  std::vector<Descriptor> inputs;
  for (auto [i, arg] : llvm::enumerate(args)) {
    auto [type, rank] = signature.args[i];
    if (arg->type != type || static_cast<int64_t>(arg->shape.size()) != rank)
      return fail("argument #" + llvm::Twine(i) + " must be a rank-" +
                  llvm::Twine(rank) + " " + getElementTypeName(type) +
                  " tensor, got rank " + llvm::Twine(arg->shape.size()) + " " +
                  getElementTypeName(arg->type));
    Descriptor d(rank);
    auto data = reinterpret_cast<intptr_t>(copies[i].data());
    d.words[0] = data;
    d.words[1] = data;
    int64_t stride = 1;
    for (int64_t dim = rank - 1; dim >= 0; --dim) {
      d.words[3 + dim] = arg->shape[dim];
      d.words[3 + rank + dim] = stride;
      stride *= arg->shape[dim];
    }
    inputs.push_back(std::move(d));
  }
  // Results: one descriptor, or a struct of descriptors (all 8-byte words).
  size_t resultWords = 0;
  for (auto [type, rank] : signature.results)
    resultWords += 3 + 2 * rank;
  std::vector<int64_t> resultStorage(std::max<size_t>(resultWords, 1), 0);
  void *resultPointer = resultStorage.data();
  SmallVector<void *> inputPointers;
  for (Descriptor &d : inputs)
    inputPointers.push_back(d.data());
  SmallVector<void *> packed;
  if (!signature.results.empty())
    packed.push_back(&resultPointer);
  for (void *&p : inputPointers)
    packed.push_back(&p);
  if (llvm::Error error =
          engine->invokePacked(("_mlir_ciface_" + name).str(), packed))
    return std::move(error);

  std::vector<HostTensor> results;
  size_t at = 0;
  for (auto [type, rank] : signature.results) {
    int64_t *words = resultStorage.data() + at;
    at += 3 + 2 * rank;
    SmallVector<int64_t> shape(words + 3, words + 3 + rank);
    HostTensor result(type, shape);
    int64_t width = getByteWidth(type);
    auto *base = reinterpret_cast<const char *>(words[1]) + words[2] * width;
    // Copy honouring the result's strides.
    SmallVector<int64_t> index(rank, 0);
    for (int64_t i = 0, n = result.getNumElements(); i < n; ++i) {
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d)
        offset += index[d] * words[3 + rank + d];
      std::memcpy(result.data.data() + i * width, base + offset * width, width);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[d] < shape[d])
          break;
        index[d] = 0;
      }
    }
    results.push_back(std::move(result));
  }
  // Free the buffers the call allocated, once each and after every result
  // is copied: results may share one (a tensor returned twice, views of one
  // allocation). Views of the arguments are the caller's copies, and
  // constants live in memref.globals, whose descriptors carry 0xdeadbeef
  // as the allocated pointer (MLIR's memref-to-LLVM lowering).
  constexpr uintptr_t kGlobalAllocated = 0xdeadbeef;
  llvm::SmallPtrSet<void *, 4> freed;
  at = 0;
  for (auto [type, rank] : signature.results) {
    int64_t *words = resultStorage.data() + at;
    at += 3 + 2 * rank;
    void *allocated = reinterpret_cast<void *>(words[0]);
    bool isArgument = llvm::any_of(inputs, [&](Descriptor &d) {
      return reinterpret_cast<void *>(d.words[0]) == allocated;
    });
    if (!allocated || isArgument ||
        reinterpret_cast<uintptr_t>(allocated) == kGlobalAllocated)
      continue;
    if (freed.insert(allocated).second)
      std::free(allocated);
  }
  return results;
}
