//===- Artifact.cpp - ahead-of-time compiled programs ---------------------===//

#include "dtensor/Compiler/Artifact.h"

#include "DTensor/DTensor.h"
#include "dtensor/Compiler/Session.h"
#include "dtensor/Sharding/Layout.h"
#include "dtensor/Support/EntryLayouts.h"
#include "dtensor/Target/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <mutex>
#include <optional>

using namespace mlir;
using namespace mlir::dtensor;

static constexpr llvm::StringLiteral kManifestFunction =
    "dtensor_artifact_manifest";

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The public function named `name`, or the only public function.
static llvm::Expected<func::FuncOp> findEntry(ModuleOp module,
                                              llvm::StringRef name) {
  func::FuncOp entry;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (!name.empty()) {
      if (func.getSymName() == name)
        return func;
      continue;
    }
    if (!func.isPublic())
      continue;
    if (entry)
      return makeError("several public functions; choose one with --entry");
    entry = func;
  }
  if (!name.empty())
    return makeError("no function @" + name);
  if (!entry)
    return makeError("no public function to compile");
  return entry;
}

/// Element types and shapes of an unsharded entry's tensors.
static llvm::Expected<llvm::json::Object> describeSignature(func::FuncOp func) {
  auto describe = [&](TypeRange types,
                      llvm::StringRef what) -> llvm::Expected<llvm::json::Array> {
    llvm::json::Array out;
    for (auto [i, type] : llvm::enumerate(types)) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      std::optional<ElementType> element =
          tensor ? getHostElementType(tensor.getElementType()) : std::nullopt;
      if (!element || !tensor.hasStaticShape())
        return makeError(what + " #" + llvm::Twine(i) + " of @" +
                         func.getSymName() +
                         " is not a static tensor of a host element type");
      out.push_back(llvm::json::Object{
          {"type", getElementTypeName(*element)},
          {"shape", llvm::json::Array(tensor.getShape())}});
    }
    return out;
  };
  auto args = describe(func.getArgumentTypes(), "argument");
  if (!args)
    return args.takeError();
  auto results = describe(func.getResultTypes(), "result");
  if (!results)
    return results.takeError();
  return llvm::json::Object{{"args", std::move(*args)},
                            {"results", std::move(*results)}};
}

/// Adds `const char *dtensor_artifact_manifest(void)` returning `json`.
static void addManifest(llvm::Module &module, llvm::StringRef json) {
  llvm::LLVMContext &context = module.getContext();
  auto *type = llvm::FunctionType::get(llvm::PointerType::get(context, 0),
                                       /*isVarArg=*/false);
  auto *function = llvm::Function::Create(
      type, llvm::GlobalValue::ExternalLinkage, kManifestFunction, module);
  llvm::IRBuilder<> builder(
      llvm::BasicBlock::Create(context, "entry", function));
  builder.CreateRet(
      builder.CreateGlobalString(json, "dtensor_artifact_manifest_json"));
}

static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createHostTargetMachine() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return makeError("no code generator for '" + triple.str() + "': " + error);
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), /*Features=*/"",
      llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return makeError("cannot create a code generator for '" + triple.str() +
                     "'");
  return machine;
}

static llvm::Error writeObject(llvm::Module &module,
                               llvm::TargetMachine &machine,
                               llvm::StringRef path) {
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError("cannot write '" + path + "': " + ec.message());
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, out.os(), nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return makeError("the code generator cannot emit object files");
  pm.run(module);
  out.os().flush();
  if (out.os().has_error())
    return makeError("cannot write '" + path + "'");
  out.keep();
  return llvm::Error::success();
}

/// Links `object` into the shared library `output` against `runtime`
/// (a library name for -l) in `runtimeDir`.
static llvm::Error linkSharedLibrary(const ArtifactOptions &options,
                                     llvm::StringRef object,
                                     llvm::StringRef runtime) {
  llvm::ErrorOr<std::string> linker =
      llvm::sys::findProgramByName(options.linker);
  if (!linker)
    return makeError("cannot find the linker '" + options.linker + "'");
  llvm::SmallString<128> log;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("dtensor-compile", "log", log))
    return makeError("cannot create a temporary file: " + ec.message());
  llvm::FileRemover removeLog(log);
  // MLIR's lowering may call its C runner utilities (memrefCopy, ...).
  llvm::StringRef runnerUtils = DTENSOR_C_RUNNER_UTILS;
  std::string libraryPath = "-L" + options.runtimeDir;
  std::string library = ("-l" + runtime).str();
  std::string rpath = ("-Wl,-rpath," + options.runtimeDir + ":" +
                       llvm::sys::path::parent_path(runnerUtils))
                          .str();
  llvm::SmallVector<llvm::StringRef> args = {
      *linker,     "-shared", object,      "-o",
      options.outputPath, libraryPath, library, runnerUtils, rpath};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(),
                                                log.str()};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*linker, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                     &message);
  if (rc == 0)
    return llvm::Error::success();
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    output = (*buffer)->getBuffer().rtrim().str();
  std::string command = llvm::join(args, " ");
  return makeError("linking '" + options.outputPath + "' failed (" +
                   (message.empty() ? "exit " + llvm::Twine(rc)
                                    : llvm::Twine(message)) +
                   "): " + command + (output.empty() ? "" : "\n" + output));
}

llvm::Error mlir::dtensor::compileArtifact(Session &session, ModuleOp module,
                                           const ArtifactOptions &options) {
  MLIRContext *context = module.getContext();
  // The target and the runtime library of its backend.
  if (!options.pipeline.target.empty()) {
    std::string error;
    FailureOr<TargetAttr> target =
        parseTargetSpec(context, options.pipeline.target, error);
    if (failed(target))
      return makeError(error);
    setTarget(module, *target);
  }
  TargetAttr target = getTarget(module);
  const TargetBackend *backend = lookupTargetBackend(target.getBackend());
  if (!backend)
    return makeError("the target backend '" + target.getBackend() +
                     "' is not built into this compiler");
  std::string targetName =
      (target.getBackend() + ":" + target.getHardware()).str();

  llvm::Expected<func::FuncOp> entry = findEntry(module, options.entry);
  if (!entry)
    return entry.takeError();
  std::string entryName = entry->getSymName().str();

  // Lower, recording what the entry takes and returns on the way.
  llvm::json::Object manifest{{"target", targetName},
                              {"entry", entryName},
                              {"unsharded", options.unsharded}};
  if (options.unsharded) {
    Session::stripPlacements(module);
    llvm::Expected<llvm::json::Object> signature = describeSignature(*entry);
    if (!signature)
      return signature.takeError();
    manifest["signature"] = std::move(*signature);
    if (failed(session.lower(module, Stage::LLVM, options.pipeline)))
      return makeError("lowering the unsharded program failed");
  } else {
    if (failed(session.lower(module, Stage::PerRank, options.pipeline)))
      return makeError("compiling the sharded program failed");
    auto perRank = module.lookupSymbol<func::FuncOp>(entryName);
    FailureOr<EntryLayouts> layouts = failure();
    if (perRank)
      layouts = getEntryLayouts(perRank);
    if (failed(layouts))
      return makeError("the per-rank entry @" + entryName +
                       " does not say how its tensors are laid out");
    llvm::Expected<llvm::json::Value> json =
        llvm::json::parse(layouts->toJSON());
    if (!json)
      return json.takeError();
    manifest["layouts"] = std::move(*json);
    if (failed(session.lower(module, Stage::LLVM, options.pipeline,
                             Stage::PerRank)))
      return makeError("lowering the sharded program failed");
  }
  // Only Executable::invoke reads the recorded signatures.
  module->removeAttr("dtensor.signatures");

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, entryName);
  if (!llvmModule)
    return makeError("translating the lowered program to LLVM IR failed");
  std::string manifestText;
  llvm::raw_string_ostream(manifestText)
      << llvm::json::Value(std::move(manifest));
  addManifest(*llvmModule, manifestText);

  auto machine = createHostTargetMachine();
  if (!machine)
    return machine.takeError();
  llvmModule->setTargetTriple((*machine)->getTargetTriple());
  llvmModule->setDataLayout((*machine)->createDataLayout());
  if (llvm::Error error = makeOptimizingTransformer(
          /*optLevel=*/3, /*sizeLevel=*/0, machine->get())(llvmModule.get()))
    return error;

  switch (options.emit) {
  case ArtifactOptions::Emit::LLVMIR: {
    std::error_code ec;
    llvm::ToolOutputFile out(options.outputPath, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return makeError("cannot write '" + options.outputPath +
                       "': " + ec.message());
    llvmModule->print(out.os(), nullptr);
    out.keep();
    return llvm::Error::success();
  }
  case ArtifactOptions::Emit::Object:
    return writeObject(*llvmModule, **machine, options.outputPath);
  case ArtifactOptions::Emit::SharedLibrary:
    break;
  }
  llvm::SmallString<128> object;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("dtensor-compile", "o", object))
    return makeError("cannot create a temporary file: " + ec.message());
  llvm::FileRemover removeObject(object);
  if (llvm::Error error = writeObject(*llvmModule, **machine, object))
    return error;
  return linkSharedLibrary(options, object, backend->getRuntimeLibrary());
}
