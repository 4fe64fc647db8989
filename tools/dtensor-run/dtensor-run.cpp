//===- dtensor-run.cpp - run a program on N ranks and check it ------------===//
//
// Compiles a global-view program, runs it on N CPU processes through mpirun
// and checks every output against the unsharded program. A thin layer over
// dtensor/Launcher/Launcher.h.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Launcher/Launcher.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <tuple>

using namespace llvm;

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<program.mlir>"));
static cl::opt<int64_t> ranks("n", cl::desc("number of ranks (default 4)"),
                              cl::init(4));
static cl::alias ranksLong("ranks", cl::aliasopt(ranks));
static cl::opt<std::string> entry("entry",
                                  cl::desc("function to run (default: the "
                                           "only public one)"));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("seed of the random inputs (default: "
                                       "fresh, printed)"));
static cl::list<std::string>
    rtolOption("rtol",
               cl::desc("relative tolerance of the check, |a-b| <= atol + "
                        "rtol*|b| for every element: VALUE for every "
                        "floating-point output, OUTPUT:VALUE for one (default: "
                        "1e-4 f32/f64, 5e-3 f16, 4e-2 bf16; integers exact)"),
               cl::CommaSeparated);
static cl::list<std::string>
    atolOption("atol",
               cl::desc("absolute tolerance of the check: VALUE for every "
                        "floating-point output, OUTPUT:VALUE for one; auto "
                        "(default): max(rtol*max|b|, 1e-5 f32, 1e-10 f64, 1e-3 "
                        "f16, 1e-2 bf16)"),
               cl::CommaSeparated);
static cl::list<std::string> toleranceOption("tolerance",
                                             cl::desc("the old name of --rtol"),
                                             cl::CommaSeparated);
static cl::opt<int64_t> repeat("repeat",
                               cl::desc("timed calls after the checked one"),
                               cl::init(0));
static cl::list<std::string>
    inputs("input", cl::desc("INDEX=FILE.npy: argument INDEX from a file"));
static cl::opt<int64_t> timeout("timeout",
                                cl::desc("seconds before the rank job is "
                                         "killed (default 120)"),
                                cl::init(120));
static cl::opt<std::string>
    target("target",
           cl::desc("compile for <backend>[:<hardware>] (default: the "
                    "module's dtensor.target, else cpu:h200)"),
           cl::init(""));
static cl::opt<std::string>
    overlap("overlap",
            cl::desc("schedule the per-rank program for overlap with these "
                     "dtensor-overlap passes before lowering it, e.g. "
                     "default or async-collectives,sink-waits,raise-comms"));
static cl::opt<bool>
    fuse("fuse", cl::desc("fuse all_gather + matmul and matmul + "
                          "reduce_scatter in the per-rank program (every "
                          "legal candidate) before lowering it"));
static cl::opt<int64_t> splitAllReduce(
    "split-all-reduce",
    cl::desc("split every matmul + all_reduce of the per-rank program into "
             "N row chunks before scheduling (N >= 2; 0: no split)"),
    cl::init(0));
static cl::opt<std::string> mpirun("mpirun", cl::desc("mpirun to launch with"),
                                   cl::init("mpirun"));
static cl::opt<std::string>
    workDir("work-dir",
            cl::desc("keep the compiled modules, the inputs, the ranks' and "
                     "the reassembled outputs and the reference's outputs "
                     "(ref<i>.npy) in this directory"));
static cl::opt<bool>
    singleGpu("single-gpu",
              cl::desc("GPU targets: start every rank on GPU 0 (NCCL over "
                       "loopback: slow, for testing numerics)"));
static cl::opt<std::string> worker("worker", cl::Hidden,
                                   cl::desc("internal: run as a rank"));

int main(int argc, char **argv) {
  // Ranks are started by mpirun with --worker=DIR and no program file.
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    if (arg.consume_front("--worker="))
      return mlir::dtensor::runWorker(arg, &argc, &argv);
  }
  InitLLVM init(argc, argv);
  // Option errors exit 2 like every other error (1 means a mismatch).
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "dtensor-run: compile a global-view program, run it on N CPU ranks "
          "over MPI and check its outputs against the unsharded program\n",
          &errs()))
    return 2;
  mlir::dtensor::LaunchOptions options;
  options.inputFile = inputFile;
  options.entry = entry;
  options.ranks = ranks;
  if (seed.getNumOccurrences())
    options.seed = seed;
  if (std::string why = options.tolerances.parseOptions(
          rtolOption, atolOption, toleranceOption);
      !why.empty()) {
    errs() << "dtensor-run: error: " << why << "\n";
    return 2;
  }
  options.repeat = repeat;
  options.timeoutSeconds = timeout;
  options.target = target;
  options.overlap = overlap;
  options.fuse = fuse;
  options.splitAllReduce = splitAllReduce;
  options.mpirun = mpirun;
  options.workDir = workDir;
  options.singleGpu = singleGpu;
  for (const std::string &spec : inputs) {
    auto [index, file] = StringRef(spec).split('=');
    int64_t i;
    if (file.empty() || index.getAsInteger(10, i) || i < 0) {
      errs() << "dtensor-run: error: --input expects INDEX=FILE.npy, got '"
             << spec << "'\n";
      return 2;
    }
    options.inputs[i] = file.str();
  }
  if (std::string why = mlir::dtensor::validateOptions(options); !why.empty()) {
    errs() << "dtensor-run: error: " << why << "\n";
    return 2;
  }
  return mlir::dtensor::launchAndCheck(options, outs());
}
