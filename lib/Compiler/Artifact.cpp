//===- Artifact.cpp - ahead-of-time compiled programs ---------------------===//

#include "dtensor/Compiler/Artifact.h"

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Compiler/Session.h"
#include "dtensor/Support/ArtifactManifest.h"
#include "dtensor/Support/Errors.h"
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

/// Element types and shapes of an unsharded entry's tensors.
static llvm::Error describeSignature(func::FuncOp func,
                                     ArtifactManifest &manifest) {
  auto describe = [&](TypeRange types, llvm::StringRef what,
                      std::vector<TensorSignature> &out) -> llvm::Error {
    for (auto [i, type] : llvm::enumerate(types)) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      std::optional<ElementType> element =
          tensor ? getHostElementType(tensor.getElementType()) : std::nullopt;
      if (!element || !tensor.hasStaticShape())
        return makeError(what + " #" + llvm::Twine(i) + " of @" +
                         func.getSymName() +
                         " is not a static tensor of a host element type");
      out.push_back({*element, tensor.getShape().vec()});
    }
    return llvm::Error::success();
  };
  if (llvm::Error error =
          describe(func.getArgumentTypes(), "argument", manifest.args))
    return error;
  return describe(func.getResultTypes(), "result", manifest.results);
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

/// Adds
///   int dtensor_artifact_init(int *argc, char ***argv)
/// which initialises the runtime (dtensor_rt_init with the library's
/// default backend: it bootstraps from the launcher's environment) and
/// registers every mesh of `meshes` in order, skipping those larger than
/// the world as every process does alike; returns non-zero on failure, and
///   void dtensor_artifact_finalize(void).
static void addInit(llvm::Module &module, llvm::ArrayRef<HostMesh> meshes) {
  llvm::LLVMContext &context = module.getContext();
  auto *ptr = llvm::PointerType::get(context, 0);
  auto *i32 = llvm::Type::getInt32Ty(context);
  auto *i64 = llvm::Type::getInt64Ty(context);
  auto *voidType = llvm::Type::getVoidTy(context);
  llvm::FunctionCallee rtInit = module.getOrInsertFunction(
      "dtensor_rt_init", llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false));
  llvm::FunctionCallee worldSize = module.getOrInsertFunction(
      "dtensor_rt_world_size", llvm::FunctionType::get(i64, false));
  llvm::FunctionCallee registerMesh = module.getOrInsertFunction(
      "dtensor_rt_register_mesh",
      llvm::FunctionType::get(i32, {i64, i64, ptr, ptr}, false));
  llvm::FunctionCallee rtFinalize = module.getOrInsertFunction(
      "dtensor_rt_finalize", llvm::FunctionType::get(voidType, false));

  auto *init = llvm::Function::Create(
      llvm::FunctionType::get(i32, {ptr, ptr}, false),
      llvm::GlobalValue::ExternalLinkage, "dtensor_artifact_init", module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", init));
  llvm::BasicBlock *failed = llvm::BasicBlock::Create(context, "failed", init);
  llvm::Value *rc = builder.CreateCall(
      rtInit, {llvm::ConstantPointerNull::get(ptr), init->getArg(0),
               init->getArg(1)});
  auto continueUnless = [&](llvm::Value *failure, const llvm::Twine &name) {
    llvm::BasicBlock *next = llvm::BasicBlock::Create(context, name, init);
    builder.CreateCondBr(failure, failed, next);
    builder.SetInsertPoint(next);
  };
  continueUnless(builder.CreateICmpNE(rc, builder.getInt32(0)), "meshes");
  llvm::Value *world = meshes.empty() ? nullptr : builder.CreateCall(worldSize);
  auto constantArray = [&](llvm::ArrayRef<int64_t> values,
                           const llvm::Twine &name) -> llvm::Constant * {
    auto *type = llvm::ArrayType::get(i64, values.size());
    return new llvm::GlobalVariable(
        module, type, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
        llvm::ConstantDataArray::get(context, values), name);
  };
  for (auto [id, mesh] : llvm::enumerate(meshes)) {
    llvm::BasicBlock *add =
        llvm::BasicBlock::Create(context, "register." + mesh.name, init);
    llvm::BasicBlock *next =
        llvm::BasicBlock::Create(context, "after." + mesh.name, init);
    builder.CreateCondBr(
        builder.CreateICmpSLE(builder.getInt64(mesh.size()), world), add,
        next);
    builder.SetInsertPoint(add);
    llvm::Value *shape = constantArray(mesh.shape, "mesh.shape." + mesh.name);
    llvm::Value *devices =
        mesh.devices.empty()
            ? static_cast<llvm::Value *>(llvm::ConstantPointerNull::get(ptr))
            : constantArray(mesh.devices, "mesh.devices." + mesh.name);
    llvm::Value *registered = builder.CreateCall(
        registerMesh, {builder.getInt64(id), builder.getInt64(mesh.shape.size()),
                       shape, devices});
    builder.CreateCondBr(builder.CreateICmpNE(registered, builder.getInt32(0)),
                         failed, next);
    builder.SetInsertPoint(next);
  }
  builder.CreateRet(builder.getInt32(0));
  builder.SetInsertPoint(failed);
  builder.CreateRet(builder.getInt32(1));

  auto *finalize = llvm::Function::Create(
      llvm::FunctionType::get(voidType, false),
      llvm::GlobalValue::ExternalLinkage, "dtensor_artifact_finalize", module);
  builder.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", finalize));
  builder.CreateCall(rtFinalize);
  builder.CreateRetVoid();
}

/// Adds `void dtensor_artifact_run(void **packed)`, the entry's C interface
/// in packed form: packed[i] points to the i-th parameter of
/// `_mlir_ciface_<entry>` (the result descriptor's address first when the
/// entry has results, then one descriptor address per argument).
static llvm::Error addRun(llvm::Module &module, llvm::StringRef entry) {
  llvm::Function *ciface = module.getFunction(("_mlir_ciface_" + entry).str());
  if (!ciface)
    return makeError("the lowered program has no C interface for @" + entry);
  llvm::LLVMContext &context = module.getContext();
  auto *ptr = llvm::PointerType::get(context, 0);
  auto *run = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr}, false),
      llvm::GlobalValue::ExternalLinkage, "dtensor_artifact_run", module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", run));
  llvm::SmallVector<llvm::Value *> args;
  for (auto [i, param] : llvm::enumerate(ciface->args())) {
    llvm::Value *slot = builder.CreateLoad(
        ptr, builder.CreateConstGEP1_64(ptr, run->getArg(0), i));
    args.push_back(builder.CreateLoad(param.getType(), slot));
  }
  builder.CreateCall(ciface, args);
  builder.CreateRetVoid();
  return llvm::Error::success();
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
  // $ORIGIN first: an artifact shipped beside its runtime library (to a
  // machine without this build tree) finds it there.
  std::string rpath = ("-Wl,-rpath,$ORIGIN:" + options.runtimeDir + ":" +
                       llvm::sys::path::parent_path(runnerUtils))
                          .str();
  // -Bsymbolic: calls inside the artifact bind to its own functions, never
  // to another artifact's of the same name loaded in the same process (a
  // sharded program and its unsharded reference share their entry's name).
  llvm::SmallVector<llvm::StringRef> args = {
      *linker,     "-shared", "-Wl,-Bsymbolic", object, "-o",
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

  llvm::Expected<func::FuncOp> entry =
      Session::selectEntry(module, options.entry);
  if (!entry)
    return entry.takeError();
  std::string entryName = entry->getSymName().str();

  // Lower, recording what the entry takes and returns on the way.
  ArtifactManifest manifest;
  manifest.target = targetName;
  manifest.entry = entryName;
  manifest.unsharded = options.unsharded;
  for (unsigned i = 0, e = entry->getNumArguments(); i < e; ++i)
    manifest.integerBounds.push_back(Session::getIntegerInputBound(*entry, i));
  manifest.undefinedResults = Session::getUndefinedResults(*entry);
  std::vector<HostMesh> meshes;
  if (options.unsharded) {
    Session::stripPlacements(module);
    if (llvm::Error error = describeSignature(*entry, manifest))
      return error;
    if (failed(session.lower(module, Stage::LLVM, options.pipeline)))
      return makeError("lowering the unsharded program failed");
  } else {
    if (!options.perRank &&
        failed(session.lower(module, Stage::PerRank, options.pipeline)))
      return makeError("compiling the sharded program failed");
    auto perRank = module.lookupSymbol<func::FuncOp>(entryName);
    FailureOr<EntryLayouts> layouts = failure();
    if (perRank)
      layouts = getEntryLayouts(perRank);
    if (failed(layouts))
      return makeError("the per-rank entry @" + entryName +
                       " does not say how its tensors are laid out");
    manifest.layouts = *layouts;
    meshes = layouts->meshes;
    if (failed(session.lower(module, Stage::LLVM, options.pipeline,
                             Stage::PerRank)))
      return makeError("lowering the sharded program failed");
  }
  // Only Executable::invoke reads the recorded signatures.
  module->removeAttr(kSignaturesAttrName);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, entryName);
  if (!llvmModule)
    return makeError("translating the lowered program to LLVM IR failed");
  addManifest(*llvmModule, manifest.toJSON());
  addInit(*llvmModule, meshes);
  if (llvm::Error error = addRun(*llvmModule, entryName))
    return error;

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
