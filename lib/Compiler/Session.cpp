//===- Session.cpp - the embedded C++ API of the compiler -----------------===//

#include "dtensor/Compiler/Session.h"

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Compiler/Pipelines.h"
#include "dtensor/Compiler/Registration.h"
#include "dtensor/Sharding/Layout.h"
#include "dtensor/Frontend/Screen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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
  // partition the "unsharded" program. Local boundaries become global
  // arguments and results first, as propagation makes them (their errors
  // are the sharded program's to report).
  for (auto func : module.getOps<func::FuncOp>())
    (void)globalizeLocalBoundaries(func);
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

llvm::Expected<std::vector<HostTensor>>
Executable::invoke(llvm::StringRef name,
                   llvm::ArrayRef<const HostTensor *> args) {
  auto it = signatures.find(name);
  if (it == signatures.end())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "calling '" + name +
                                       "': no such public function");
  std::string symbol = ("_mlir_ciface_" + name).str();
  return callPacked(name, it->second, args, BufferSpace::host(),
                    [&](void **packed) {
                      // invokePacked takes the packed pointers as a list.
                      size_t count = it->second.args.size() +
                                     (it->second.results.empty() ? 0 : 1);
                      return engine->invokePacked(
                          symbol, llvm::MutableArrayRef<void *>(packed, count));
                    });
}

llvm::Expected<func::FuncOp> Session::selectEntry(ModuleOp module,
                                                  llvm::StringRef name) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  func::FuncOp entry;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (name.empty() ? func.isPublic() : func.getSymName() == name) {
      if (entry && name.empty())
        return error("several public functions; choose one with --entry");
      entry = func;
    }
  }
  if (!entry)
    return error(name.empty() ? llvm::Twine("no public function to run")
                              : "no function @" + name);
  for (auto func : module.getOps<func::FuncOp>())
    func.setVisibility(func == entry ? SymbolTable::Visibility::Public
                                     : SymbolTable::Visibility::Private);
  bool erased = true;
  while (erased) {
    erased = false;
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (func != entry && SymbolTable::symbolKnownUseEmpty(func, module)) {
        func.erase();
        erased = true;
      }
  }
  return entry;
}

std::vector<bool> Session::getUndefinedResults(func::FuncOp entry) {
  auto isUndefined = [](Value value) {
    while (Operation *op = value.getDefiningOp()) {
      if (isa<tensor::EmptyOp>(op))
        return true;
      if (!isa<AnnotateOp, RedistributeOp, tensor::CastOp>(op))
        return false;
      value = op->getOperand(0);
    }
    return false;
  };
  std::vector<bool> undefined;
  for (Value result : entry.getBody().back().getTerminator()->getOperands())
    undefined.push_back(isUndefined(result));
  return undefined;
}

int64_t Session::getIntegerInputBound(func::FuncOp entry, unsigned argIndex) {
  int64_t bound = 16;
  entry.walk([&](tensor::GatherOp gather) {
    Value indices = gather.getIndices();
    while (auto annotate = indices.getDefiningOp<AnnotateOp>())
      indices = annotate.getInput();
    auto arg = dyn_cast<BlockArgument>(indices);
    if (arg && arg.getArgNumber() == argIndex)
      bound =
          std::min(bound == 16 ? gather.getSourceType().getDimSize(0) : bound,
                   gather.getSourceType().getDimSize(0));
  });
  return bound;
}
