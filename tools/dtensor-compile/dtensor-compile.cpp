//===- dtensor-compile.cpp - compile a program ahead of time --------------===//
//
// Compiles a global-view program for a target into a shared library linked
// against the target's runtime library (or an object file, or LLVM IR), with
// a manifest function describing the entry's layouts. A thin layer over
// dtensor/Compiler/Artifact.h.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Compiler/Artifact.h"
#include "dtensor/Compiler/Session.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using mlir::dtensor::ArtifactOptions;

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<program.mlir>"));
static cl::opt<std::string> outputFile("o", cl::Required,
                                       cl::desc("the artifact to write"),
                                       cl::value_desc("file"));
static cl::opt<std::string>
    target("target",
           cl::desc("compile for <backend>[:<hardware>] (default: the "
                    "module's dtensor.target, else cpu:h200)"),
           cl::init(""));
static cl::opt<std::string> entry("entry",
                                  cl::desc("function to compile (default: "
                                           "the only public one)"));
static cl::opt<bool>
    unsharded("unsharded",
              cl::desc("compile the unsharded reference program (placements "
                       "stripped) instead of the per-rank program"));
static cl::opt<bool>
    perRank("per-rank",
            cl::desc("the input is already the per-rank program (with "
                     "dtensor.layout on the entry's arguments and results): "
                     "compile it from the per-rank stage on"));
static cl::opt<bool>
    fuse("fuse", cl::desc("fuse all_gather + matmul and matmul + "
                          "reduce_scatter (every legal candidate)"));
static cl::opt<std::string>
    overlap("overlap",
            cl::desc("schedule the per-rank program for overlap with these "
                     "dtensor-overlap passes: default, none or a "
                     "comma-separated list"),
            cl::init("none"));
static cl::opt<ArtifactOptions::Emit> emit(
    "emit", cl::desc("what to write"),
    cl::values(clEnumValN(ArtifactOptions::Emit::SharedLibrary, "so",
                          "a shared library over the runtime (default)"),
               clEnumValN(ArtifactOptions::Emit::Object, "obj",
                          "an object file"),
               clEnumValN(ArtifactOptions::Emit::LLVMIR, "llvm", "LLVM IR")),
    cl::init(ArtifactOptions::Emit::SharedLibrary));
static cl::opt<std::string>
    runtimeDir("runtime-dir",
               cl::desc("where the runtime libraries lie (default: lib/ "
                        "next to this tool's bin/)"));
static cl::opt<std::string> linker("linker",
                                   cl::desc("compiler driver that links"),
                                   cl::init("c++"));

static int fail(const Twine &message) {
  errs() << "dtensor-compile: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "dtensor-compile: compile a global-view program ahead of time into "
          "a shared library over the target's runtime\n",
          &errs()))
    return 1;

  ArtifactOptions options;
  options.entry = entry;
  options.unsharded = unsharded;
  options.perRank = perRank;
  if (perRank && unsharded)
    return fail("--per-rank and --unsharded exclude each other: the "
                "reference is compiled from the global-view program");
  options.pipeline.target = target;
  options.pipeline.fuse.enabled = options.pipeline.fuse.force = fuse;
  if (overlap != "none") {
    SmallVector<StringRef> passes;
    StringRef(overlap).split(passes, ',', -1, /*KeepEmpty=*/false);
    for (StringRef pass : passes)
      options.pipeline.overlap.passes.push_back(pass.trim().str());
  }
  options.emit = emit;
  options.outputPath = outputFile;
  options.linker = linker;
  options.runtimeDir = runtimeDir;
  if (options.runtimeDir.empty()) {
    std::string self = sys::fs::getMainExecutable(
        argv[0], reinterpret_cast<void *>(&fail));
    SmallString<256> dir(sys::path::parent_path(sys::path::parent_path(self)));
    sys::path::append(dir, "lib");
    options.runtimeDir = std::string(dir);
  }

  mlir::dtensor::Session session;
  auto buffer = MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buffer)
    return fail("cannot read '" + inputFile +
                "': " + buffer.getError().message());
  // Parse errors (and the screen's) are printed with their locations.
  auto module = session.parse((*buffer)->getBuffer(), inputFile);
  if (failed(module))
    return fail("cannot parse '" + inputFile + "'");
  if (Error error = mlir::dtensor::compileArtifact(session, **module, options))
    return fail(toString(std::move(error)));
  return 0;
}
