//===- dtensor-launch.cpp - run a compiled artifact on N ranks ------------===//
//
// Loads an artifact of dtensor-compile, starts or joins its ranks, feeds
// them their parts of the global inputs and checks the outputs against the
// unsharded reference artifact. Needs no MLIR or LLVM library: this is what
// runs on the GPU machines. A thin layer over
// dtensor/Launcher/ArtifactLauncher.h.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Launcher/ArtifactLauncher.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <tuple>

using namespace llvm;

static cl::OptionCategory category("dtensor-launch options");

static cl::opt<std::string> artifact(cl::Positional, cl::Required,
                                     cl::desc("<artifact.so>"),
                                     cl::cat(category));
static cl::opt<std::string>
    reference("reference",
              cl::desc("the unsharded artifact (dtensor-compile --unsharded) "
                       "to compare every output with"),
              cl::value_desc("artifact.so"), cl::cat(category));
static cl::opt<int64_t>
    nproc("nproc",
          cl::desc("start this many ranks (one per GPU; mpirun for CPU "
                   "artifacts); without it, join the launcher that started "
                   "this process (torchrun, mpirun, srun) or run alone"),
          cl::init(0), cl::cat(category));
static cl::opt<bool>
    singleGpu("single-gpu",
              cl::desc("start every rank on GPU 0 (NCCL over loopback "
                       "sockets: slow, for testing numerics)"),
              cl::cat(category));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("seed of the random inputs (default: "
                                       "a fresh one, printed)"),
                              cl::cat(category));
static cl::list<std::string>
    rtolOption("rtol",
               cl::desc("relative tolerance of the check, |a-b| <= atol + "
                        "rtol*|b| for every element: VALUE for every "
                        "floating-point output, OUTPUT:VALUE for one (default: "
                        "1e-4 f32/f64, 5e-3 f16, 4e-2 bf16; integers exact)"),
               cl::CommaSeparated, cl::cat(category));
static cl::list<std::string>
    atolOption("atol",
               cl::desc("absolute tolerance of the check: VALUE for every "
                        "floating-point output, OUTPUT:VALUE for one; auto "
                        "(default): max(rtol*max|b|, 1e-5 f32, 1e-10 f64, 1e-3 "
                        "f16, 1e-2 bf16)"),
               cl::CommaSeparated, cl::cat(category));
static cl::list<std::string> toleranceOption("tolerance",
                                             cl::desc("the old name of --rtol"),
                                             cl::CommaSeparated,
                                             cl::cat(category));
static cl::list<std::string>
    inputs("input", cl::desc("INDEX=FILE.npy: argument INDEX from a file"),
           cl::cat(category));
static cl::opt<std::string>
    workDir("work-dir",
            cl::desc("directory the ranks share for the inputs, their "
                     "outputs, the reassembled outputs (out<i>.npy) and the "
                     "reference's (ref<i>.npy) (default: a temporary one; "
                     "required when another launcher starts several "
                     "ranks)"),
            cl::cat(category));
static cl::opt<std::string>
    outputDir("output-dir",
              cl::desc("write the reassembled outputs here (out<i>.npy)"),
              cl::cat(category));
static cl::opt<int64_t> timeout("timeout",
                                cl::desc("seconds before started ranks are "
                                         "killed (default 300)"),
                                cl::init(300), cl::cat(category));
static cl::opt<bool>
    cudaGraph("cuda-graph",
              cl::desc("CUDA artifacts: after one direct call, capture the "
                       "whole program (collectives included) as one CUDA "
                       "graph, replay it twice and check the second "
                       "replay's outputs"),
              cl::cat(category));
static cl::opt<std::string> mpirun("mpirun",
                                   cl::desc("mpirun for CPU artifacts"),
                                   cl::init("mpirun"), cl::cat(category));

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  // Option errors exit 2 like every other error (1 means a mismatch).
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "dtensor-launch: run an artifact of dtensor-compile on N ranks and "
          "check it against the unsharded artifact\n",
          &errs()))
    return 2;
  mlir::dtensor::ArtifactLaunchOptions options;
  options.artifact = artifact;
  options.reference = reference;
  options.nproc = nproc;
  options.singleGpu = singleGpu;
  if (seed.getNumOccurrences())
    options.seed = seed;
  if (std::string why = options.tolerances.parseOptions(
          rtolOption, atolOption, toleranceOption);
      !why.empty()) {
    errs() << "dtensor-launch: error: " << why << "\n";
    return 2;
  }
  options.workDir = workDir;
  options.outputDir = outputDir;
  options.timeoutSeconds = timeout;
  options.mpirun = mpirun;
  options.cudaGraph = cudaGraph;
  for (const std::string &spec : inputs) {
    auto [index, file] = StringRef(spec).split('=');
    int64_t i;
    if (file.empty() || index.getAsInteger(10, i) || i < 0) {
      errs() << "dtensor-launch: error: --input expects INDEX=FILE.npy, got '"
             << spec << "'\n";
      return 2;
    }
    options.inputs[i] = file.str();
  }
  std::string self =
      sys::fs::getMainExecutable(argv[0], reinterpret_cast<void *>(&main));
  return mlir::dtensor::launchArtifact(options, self, &argc, &argv, outs());
}
