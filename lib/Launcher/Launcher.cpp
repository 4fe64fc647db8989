//===- Launcher.cpp - run compiled programs on N ranks and check them -----===//

#include "dtensor/Launcher/Launcher.h"

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Compiler/Artifact.h"
#include "dtensor/Compiler/Session.h"
#include "dtensor/Support/Errors.h"
#include "dtensor/Runtime/Runtime.h"
#include "dtensor/Sharding/Layout.h"
#include "dtensor/Support/EntryLayouts.h"
#include "dtensor/Support/HostLayout.h"
#include "dtensor/Support/HostTensor.h"
#include "dtensor/Support/OutputCheck.h"
#include "dtensor/Support/Process.h"
#include "dtensor/Support/SafeMath.h"
#include "dtensor/Target/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace mlir;
using namespace mlir::dtensor;
namespace json = llvm::json;

static llvm::Error writeFile(llvm::StringRef path, llvm::StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return makeError("cannot write " + path + ": " + ec.message());
  os << text;
  return llvm::Error::success();
}

static llvm::Expected<std::string> readFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError("cannot read " + path + ": " +
                     buffer.getError().message());
  return (*buffer)->getBuffer().str();
}

//===----------------------------------------------------------------------===//
// Starting ranks
//===----------------------------------------------------------------------===//

RankLauncher::~RankLauncher() = default;

namespace {

class MpiRankLauncher : public RankLauncher {
public:
  MpiRankLauncher(std::string mpirun, std::string worker)
      : mpirun(std::move(mpirun)), worker(std::move(worker)) {}

  llvm::Error run(const RankJob &job) override {
    llvm::Expected<std::vector<std::string>> command = getMpirunCommand(
        mpirun, job.ranks, {worker, "--worker=" + job.workDir}, job.workDir);
    if (!command)
      return command.takeError();
    int status = runWithTimeout(*command, job.timeoutSeconds);
    if (status == kTimedOut)
      return makeError("the rank job did not finish within " +
                       llvm::Twine(job.timeoutSeconds) +
                       " s and was killed (raise --timeout if it is just "
                       "slow)");
    if (status == kCannotStart)
      return makeError("cannot start " + command->front());
    if (status != 0)
      return makeError("the rank job failed with exit code " +
                       llvm::Twine(status) + " (see the rank's message above)");
    return llvm::Error::success();
  }

private:
  std::string mpirun, worker;
};

} // namespace

std::unique_ptr<RankLauncher>
mlir::dtensor::createMpiRankLauncher(std::string mpirun, std::string worker) {
  return std::make_unique<MpiRankLauncher>(std::move(mpirun),
                                           std::move(worker));
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

std::string mlir::dtensor::validateOptions(const LaunchOptions &options) {
  if (std::string why = options.tolerances.validate(); !why.empty())
    return why;
  if (options.repeat < 0)
    return "--repeat must be >= 0, got " + std::to_string(options.repeat);
  if (options.timeoutSeconds < 1 || options.timeoutSeconds > kMaxTimeoutSeconds)
    return "--timeout must be between 1 and " +
           std::to_string(kMaxTimeoutSeconds) + " seconds, got " +
           std::to_string(options.timeoutSeconds);
  if (options.ranks < 1)
    return "-n must be at least 1";
  for (const auto &[index, file] : options.inputs)
    if (index < 0)
      return "--input index must be >= 0, got " + std::to_string(index);
  return "";
}

namespace {

/// The sharded program as the ranks run it, and what compiling it did.
struct ShardedProgram {
  EntryLayouts layouts;
  int64_t numAllGatherMatmul = 0, numMatmulReduceScatter = 0, numSplit = 0;
};

class Driver {
public:
  Driver(const LaunchOptions &options, llvm::raw_ostream &os)
      : options(options), os(os) {}
  int run();

private:
  int error(const llvm::Twine &message) {
    llvm::errs() << "dtensor-run: error: " << message << "\n";
    return 2;
  }
  int error(llvm::Error error) {
    return this->error(llvm::toString(std::move(error)));
  }
  std::string path(const llvm::Twine &name) { return joinPath(workDir, name); }

  /// Finds the entry, makes it the only public function and drops the
  /// functions it does not call.
  llvm::Error selectEntry(ModuleOp module);
  /// The global inputs: random (from `seed`) or from --input files.
  llvm::Error makeInputs(uint64_t seed);
  llvm::Error makeWorkDir();
  /// Compiles the per-rank program to sharded.mlir.
  llvm::Expected<ShardedProgram> compileSharded(ModuleOp original);
  /// Targets other than the CPU: both artifacts compiled into the work
  /// directory, run and checked by dtensor-launch (next to this tool).
  int compileAndLaunch(ModuleOp original, uint64_t seed);
  /// Compiles and runs the unsharded program on the host.
  llvm::Expected<std::vector<HostTensor>> runReference(ModuleOp original);
  /// Writes what the ranks read: inputs, layouts.json, job.json.
  llvm::Error writeJob(const EntryLayouts &layouts);
  /// Reassembles every output and compares each copy with `expected`;
  /// writes the reassembled outputs (out<i>.npy).
  llvm::Expected<bool> compare(const EntryLayouts &layouts,
                               const std::vector<HostTensor> &expected);
  void printTiming();

  const LaunchOptions &options;
  llvm::raw_ostream &os;
  Session session;
  func::FuncOp entry;
  std::string entryName;
  std::vector<HostTensor> inputs;
  std::string workDir;
  /// The reference compiles with the same target but no scheduling.
  PipelineOptions compileOptions;
  /// Results whose contents the program leaves undefined (tensor.empty
  /// returned as it is): reported, never compared.
  std::vector<bool> undefinedResults;
};

llvm::Error Driver::selectEntry(ModuleOp module) {
  llvm::Expected<func::FuncOp> selected =
      Session::selectEntry(module, options.entry);
  if (!selected)
    return selected.takeError();
  entry = *selected;
  entryName = entry.getSymName().str();
  if (module.getOps<MeshOp>().empty())
    return makeError("the program declares no dtensor.mesh");
  undefinedResults = Session::getUndefinedResults(entry);
  return llvm::Error::success();
}

llvm::Error Driver::makeInputs(uint64_t seed) {
  unsigned numArgs = entry.getNumArguments();
  for (const auto &[index, file] : options.inputs)
    if (index >= numArgs)
      return makeError("--input " + llvm::Twine(index) + "=" + file + ": @" +
                       entryName + " has " + llvm::Twine(numArgs) +
                       " argument" + (numArgs == 1 ? "" : "s"));
  // The host holds every global input and, for the comparison, every
  // output: refuse what cannot fit before allocating any of it.
  uint64_t bytes = 0;
  for (Type type : llvm::concat<const Type>(entry.getArgumentTypes(),
                                            entry.getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    std::optional<ElementType> element =
        tensor ? getHostElementType(tensor.getElementType()) : std::nullopt;
    if (!tensor || !tensor.hasStaticShape() || !element)
      continue;
    // Both terms stay at most UINT64_MAX / 2: the sum cannot wrap.
    uint64_t count = saturatingProduct(tensor.getShape());
    uint64_t width = getByteWidth(*element);
    uint64_t tensorBytes =
        count > UINT64_MAX / 2 / width ? UINT64_MAX / 2 : count * width;
    bytes = std::min<uint64_t>(UINT64_MAX / 2, bytes + tensorBytes);
  }
  uint64_t memory = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                    static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  if (bytes > memory / 2)
    return makeError(llvm::formatv("the inputs and outputs of @{0} take {1:F1} "
                                   "GiB on the host, more than half of its "
                                   "{2:F1} GiB of memory",
                                   entryName, bytes / 1073741824.0,
                                   memory / 1073741824.0)
                         .str());
  std::mt19937_64 rng(seed);
  for (auto [i, type] : llvm::enumerate(entry.getArgumentTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    std::optional<ElementType> element =
        tensor ? getHostElementType(tensor.getElementType()) : std::nullopt;
    if (!tensor || !tensor.hasStaticShape() || !element)
      return makeError("argument #" + llvm::Twine(i) + " of @" + entryName +
                       " is not a static f32/f64/i32/i64/bf16/f16 tensor");
    auto provided = options.inputs.find(i);
    if (provided != options.inputs.end()) {
      llvm::Expected<HostTensor> loaded =
          readInputNpy(i, provided->second, *element, tensor.getShape());
      if (!loaded)
        return loaded.takeError();
      inputs.push_back(std::move(*loaded));
      continue;
    }
    inputs.push_back(makeRandomTensor(*element, tensor.getShape(), rng,
                                      Session::getIntegerInputBound(entry, i)));
  }
  return llvm::Error::success();
}

llvm::Error Driver::makeWorkDir() {
  if (!options.workDir.empty()) {
    workDir = options.workDir;
    if (std::error_code ec = llvm::sys::fs::create_directories(workDir))
      return makeError("cannot create " + workDir + ": " + ec.message());
    return llvm::Error::success();
  }
  SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("dtensor-run", dir))
    return makeError("cannot create a work directory: " + ec.message());
  workDir = std::string(dir);
  return llvm::Error::success();
}

llvm::Expected<ShardedProgram> Driver::compileSharded(ModuleOp original) {
  // Per-rank program, layouts of the entry's arguments and results, then
  // fusion and scheduling, then LLVM.
  OwningOpRef<ModuleOp> sharded = original.clone();
  if (failed(session.lower(*sharded, Stage::PerRank, compileOptions)))
    return makeError("compiling the sharded program failed");
  auto perRank = sharded->lookupSymbol<func::FuncOp>(entryName);
  FailureOr<EntryLayouts> layouts = getEntryLayouts(perRank);
  if (failed(layouts))
    return makeError("the per-rank entry does not say how its tensors are "
                     "laid out");
  ShardedProgram program{std::move(*layouts)};
  // Comm-compute fusion (force: test shapes are too small to pay), forced
  // row chunks of matmul + all_reduce, scheduling passes.
  PipelineOptions scheduling = compileOptions;
  scheduling.fuse.enabled = scheduling.fuse.force = options.fuse;
  scheduling.splitAllReduce = options.splitAllReduce;
  llvm::SmallVector<StringRef> passes;
  StringRef(options.overlap).split(passes, ',', -1, /*KeepEmpty=*/false);
  for (StringRef pass : passes)
    scheduling.overlap.passes.push_back(pass.trim().str());
  auto countAllReduces = [&] {
    int64_t count = 0;
    perRank.walk([&](AllReduceOp) { ++count; });
    return count;
  };
  int64_t allReducesBefore = countAllReduces();
  if (failed(session.lower(*sharded, Stage::Scheduled, scheduling,
                           Stage::PerRank)))
    return makeError("fusing and scheduling the sharded program failed");
  perRank.walk([&](Operation *op) {
    program.numAllGatherMatmul += isa<AllGatherMatmulOp>(op);
    program.numMatmulReduceScatter += isa<MatmulReduceScatterOp>(op);
  });
  if (options.splitAllReduce > 1)
    program.numSplit =
        (countAllReduces() - allReducesBefore) / (options.splitAllReduce - 1);
  if (failed(session.lower(*sharded, Stage::LLVM, compileOptions,
                           Stage::Scheduled)))
    return makeError("lowering the sharded program failed");
  if (llvm::Error e = writeFile(path("sharded.mlir"),
                                Session::print(sharded->getOperation())))
    return std::move(e);
  return program;
}

int Driver::compileAndLaunch(ModuleOp original, uint64_t seed) {
  std::string self =
      llvm::sys::fs::getMainExecutable(nullptr, (void *)&launchAndCheck);
  llvm::SmallString<256> bin(llvm::sys::path::parent_path(self));
  llvm::SmallString<256> launcher(bin);
  llvm::sys::path::append(launcher, "dtensor-launch");
  llvm::SmallString<256> runtimeDir(llvm::sys::path::parent_path(bin));
  llvm::sys::path::append(runtimeDir, "lib");
  ArtifactOptions artifact;
  artifact.pipeline.target = options.target;
  artifact.pipeline.fuse.enabled = artifact.pipeline.fuse.force = options.fuse;
  artifact.pipeline.splitAllReduce = options.splitAllReduce;
  if (!options.overlap.empty()) {
    llvm::SmallVector<StringRef> passes;
    StringRef(options.overlap).split(passes, ',', -1, /*KeepEmpty=*/false);
    for (StringRef pass : passes)
      artifact.pipeline.overlap.passes.push_back(pass.trim().str());
  }
  artifact.runtimeDir = std::string(runtimeDir);
  for (bool unsharded : {false, true}) {
    OwningOpRef<ModuleOp> module = original.clone();
    ArtifactOptions one = artifact;
    one.unsharded = unsharded;
    one.entry = entryName;
    one.outputPath = path(unsharded ? "reference.so" : "sharded.so");
    if (unsharded)
      one.pipeline.fuse = {}, one.pipeline.splitAllReduce = 0,
      one.pipeline.overlap.passes.clear();
    if (llvm::Error e = compileArtifact(session, *module, one))
      return error(std::move(e));
  }
  std::vector<std::string> command = {
      std::string(launcher), path("sharded.so"),
      "--reference=" + path("reference.so"),
      "--nproc=" + std::to_string(options.ranks),
      "--seed=" + std::to_string(seed),
      "--timeout=" + std::to_string(options.timeoutSeconds),
      "--work-dir=" + path("ranks")};
  for (std::string &arg : options.tolerances.toArgs())
    command.push_back(std::move(arg));
  for (const auto &[index, file] : options.inputs)
    command.push_back("--input=" + std::to_string(index) + "=" + file);
  if (options.singleGpu)
    command.push_back("--single-gpu");
  os.flush();
  int status = runWithTimeout(command, options.timeoutSeconds + 60);
  if (status == kTimedOut)
    return error("dtensor-launch did not finish within " +
                 llvm::Twine(options.timeoutSeconds + 60) + " s");
  if (status == kCannotStart || status == 127)
    return error("cannot start '" + launcher + "'");
  return status == 0 || status == 1 ? status : 2;
}

llvm::Expected<std::vector<HostTensor>>
Driver::runReference(ModuleOp original) {
  // The same program without placements, on one process.
  OwningOpRef<ModuleOp> reference = original.clone();
  Session::stripPlacements(*reference);
  if (failed(session.lower(*reference, Stage::LLVM, compileOptions)))
    return makeError("compiling the unsharded reference failed");
  FailureOr<std::unique_ptr<Executable>> exe = session.compile(*reference);
  if (failed(exe))
    return makeError("JIT-compiling the unsharded reference failed");
  SmallVector<const HostTensor *> args;
  for (const HostTensor &input : inputs)
    args.push_back(&input);
  llvm::Expected<std::vector<HostTensor>> expected =
      (*exe)->invoke(entryName, args);
  if (!expected)
    return makeError("reference run: " + llvm::toString(expected.takeError()));
  return expected;
}

llvm::Error Driver::writeJob(const EntryLayouts &layouts) {
  for (auto [i, input] : llvm::enumerate(inputs))
    if (llvm::Error e = writeNpy(path("in" + llvm::Twine(i) + ".npy"), input))
      return e;
  if (llvm::Error e = writeFile(path("layouts.json"), layouts.toJSON()))
    return e;
  std::string job;
  llvm::raw_string_ostream(job)
      << json::Value(json::Object{{"repeat", options.repeat}});
  return writeFile(path("job.json"), job);
}

llvm::Expected<bool> Driver::compare(const EntryLayouts &layouts,
                                     const std::vector<HostTensor> &expected) {
  std::vector<HostTensor> globals;
  llvm::Expected<bool> good = checkOutputs(
      layouts, undefinedResults, &expected, options.tolerances,
      [&](size_t i, int64_t rank) {
        return readNpy(path("out" + llvm::Twine(i) + ".rank" +
                            llvm::Twine(rank) + ".npy"));
      },
      os, &globals);
  if (!good)
    return good.takeError();
  // The reassembled outputs (each one's first copy), beside ref<i>.npy.
  for (auto [i, global] : llvm::enumerate(globals))
    if (!global.data.empty() || global.getNumElements() == 0)
      if (llvm::Error e =
              writeNpy(path("out" + llvm::Twine(i) + ".npy"), global))
        return std::move(e);
  return good;
}

void Driver::printTiming() {
  if (options.repeat <= 0)
    return;
  llvm::Expected<std::string> text = readFile(path("timing.json"));
  if (!text) {
    llvm::consumeError(text.takeError());
    return;
  }
  llvm::Expected<json::Value> value = json::parse(*text);
  if (!value) {
    llvm::consumeError(value.takeError());
    return;
  }
  if (const json::Object *object = value->getAsObject())
    os << llvm::format("  time per call (rank 0): median %.3f ms, "
                       "min %.3f ms over %lld calls\n",
                       object->getNumber("median_ms").value_or(0),
                       object->getNumber("min_ms").value_or(0),
                       (long long)options.repeat);
}

int Driver::run() {
  if (std::string why = validateOptions(options); !why.empty())
    return error(why);
  FailureOr<OwningOpRef<ModuleOp>> parsed =
      session.parseFile(options.inputFile);
  if (failed(parsed))
    return 2;
  ModuleOp original = **parsed;
  // The inputs and outputs are global tensors: local ones at the entry's
  // boundary (from_local of an argument, to_local of a result) are made
  // global as propagation makes them.
  for (auto func : original.getOps<func::FuncOp>())
    if (failed(globalizeLocalBoundaries(func)))
      return 2;
  if (llvm::Error e = selectEntry(original))
    return error(std::move(e));
  if (std::string why =
          options.tolerances.validateOutputs(entry.getNumResults(), entryName);
      !why.empty())
    return error(why);

  uint64_t seed = options.seed ? *options.seed : makeFreshSeed();
  if (llvm::Error e = makeInputs(seed))
    return error(std::move(e));
  if (llvm::Error e = makeWorkDir())
    return error(std::move(e));
  llvm::scope_exit cleanup([&] {
    if (options.workDir.empty() && !options.keepWorkDir)
      llvm::sys::fs::remove_directories(workDir);
  });

  // Programs for the GPU run as artifacts through dtensor-launch.
  {
    OwningOpRef<ModuleOp> probe = original.clone();
    if (!options.target.empty()) {
      std::string why;
      FailureOr<TargetAttr> target =
          parseTargetSpec(probe->getContext(), options.target, why);
      if (failed(target))
        return error(why);
      setTarget(*probe, *target);
    }
    if (getTarget(*probe).getBackend() == "cpu" && options.singleGpu)
      return error("--single-gpu is for GPU targets; this program's target "
                   "is cpu (pass --target cuda)");
    if (getTarget(*probe).getBackend() != "cpu") {
      os << "dtensor-run: " << options.inputFile << ", @" << entryName
         << ": compiled for " << getTarget(*probe).getBackend()
         << " into artifacts, launching " << options.ranks << " ranks\n";
      return compileAndLaunch(original, seed);
    }
  }

  // Compile.
  compileOptions.target = options.target;
  compileOptions.overlap.passes.clear();
  llvm::Expected<ShardedProgram> sharded = compileSharded(original);
  if (!sharded)
    return error(sharded.takeError());
  const EntryLayouts &layouts = sharded->layouts;
  std::optional<int64_t> meshId = layouts.getEntryMesh();
  const HostMesh &mesh = layouts.meshes[meshId.value_or(0)];
  if (mesh.size() != options.ranks)
    return error("mesh @" + mesh.name + " has " + llvm::Twine(mesh.size()) +
                 " processes; run with -n " + llvm::Twine(mesh.size()));
  for (const auto *list : {&layouts.args, &layouts.results})
    for (const HostTensorSpec &spec : *list) {
      const HostMesh &other = layouts.getMesh(spec);
      for (int64_t p = 0; p < other.size(); ++p)
        if (other.rankAt(p) >= options.ranks)
          return error("mesh @" + other.name + " uses rank " +
                       llvm::Twine(other.rankAt(p)) + ", beyond the " +
                       llvm::Twine(options.ranks) + " ranks of the job");
    }
  llvm::Expected<std::vector<HostTensor>> expected = runReference(original);
  if (!expected)
    return error(expected.takeError());
  // The reference's outputs, global, next to the ranks' (out<i>.npy).
  for (auto [i, output] : llvm::enumerate(*expected))
    if (i >= undefinedResults.size() || !undefinedResults[i])
      if (llvm::Error e =
              writeNpy(path("ref" + llvm::Twine(i) + ".npy"), output))
        return error(std::move(e));
  if (llvm::Error e = writeJob(layouts))
    return error(std::move(e));

  os << "dtensor-run: " << options.inputFile << ", @" << entryName << " on "
     << options.ranks << " ranks (mesh @" << mesh.name << "), seed " << seed
     << "\n";
  if (options.fuse)
    os << "dtensor-run: fused " << sharded->numAllGatherMatmul
       << " all_gather_matmul, " << sharded->numMatmulReduceScatter
       << " matmul_reduce_scatter\n";
  if (options.splitAllReduce > 0)
    os << "dtensor-run: split " << sharded->numSplit
       << " matmul + all_reduce into " << options.splitAllReduce
       << " row chunks\n";
  os.flush();

  // Start the ranks.
  std::unique_ptr<RankLauncher> mpi;
  RankLauncher *launcher = options.launcher;
  if (!launcher) {
    mpi = createMpiRankLauncher(
        options.mpirun,
        llvm::sys::fs::getMainExecutable(nullptr, (void *)&launchAndCheck));
    launcher = mpi.get();
  }
  if (llvm::Error e =
          launcher->run({workDir, options.ranks, options.timeoutSeconds}))
    return error(std::move(e));

  // Compare.
  llvm::Expected<bool> good = compare(layouts, *expected);
  if (!good)
    return error(good.takeError());
  printTiming();
  os << (*good ? "PASS" : "FAIL") << "\n";
  return *good ? 0 : 1;
}

} // namespace

int mlir::dtensor::launchAndCheck(const LaunchOptions &options,
                                  llvm::raw_ostream &os) {
  return Driver(options, os).run();
}

//===----------------------------------------------------------------------===//
// Worker
//===----------------------------------------------------------------------===//

int mlir::dtensor::runWorker(llvm::StringRef workDir, int *argc, char ***argv) {
  if (dtensor_rt_init(nullptr, argc, argv) != 0)
    return 2;
  int64_t rank = dtensor_rt_world_rank();
  auto fail = [&](const llvm::Twine &message) {
    // One write: stderr is unbuffered and shared with the other ranks, so a
    // line written piece by piece gets interleaved.
    llvm::errs() << ("dtensor-run: rank " + llvm::Twine(rank) + ": " + message +
                     "\n")
                        .str();
    llvm::errs().flush();
    std::_Exit(3);
    return 3;
  };
  auto path = [&](const llvm::Twine &name) { return joinPath(workDir, name); };
  llvm::Expected<std::string> layoutsText = readFile(path("layouts.json"));
  if (!layoutsText)
    return fail(llvm::toString(layoutsText.takeError()));
  llvm::Expected<EntryLayouts> layouts = EntryLayouts::fromJSON(*layoutsText);
  if (!layouts)
    return fail(llvm::toString(layouts.takeError()));
  int64_t repeat = 0;
  llvm::Expected<std::string> jobText = readFile(path("job.json"));
  if (!jobText)
    return fail(llvm::toString(jobText.takeError()));
  if (llvm::Expected<json::Value> job = json::parse(*jobText)) {
    if (const json::Object *object = job->getAsObject())
      repeat = object->getInteger("repeat").value_or(0);
  } else {
    return fail("job.json: " + llvm::toString(job.takeError()));
  }
  // Every process registers every mesh, in order (registration is
  // collective); meshes larger than the job cannot be used by the entry
  // (the driver checked) and are skipped everywhere alike.
  for (auto [id, mesh] : llvm::enumerate(layouts->meshes))
    if (mesh.size() <= dtensor_rt_world_size() &&
        dtensor_rt_register_mesh(id, mesh.shape.size(), mesh.shape.data(),
                                 mesh.devices.empty() ? nullptr
                                                      : mesh.devices.data()))
      return fail("cannot register mesh @" + mesh.name);

  Session session;
  session.setDiagnosticCallback([&](const dtensor::Diagnostic &d) {
    // One write, as in `fail`.
    llvm::errs() << ("dtensor-run: rank " + llvm::Twine(rank) + ": " +
                     d.location + (d.location.empty() ? "" : ": ") + d.message +
                     "\n")
                        .str();
  });
  FailureOr<OwningOpRef<ModuleOp>> module =
      session.parseFile(path("sharded.mlir"));
  if (failed(module))
    return fail("cannot read the compiled program");
  FailureOr<std::unique_ptr<Executable>> exe = session.compile(**module);
  if (failed(exe))
    return fail("JIT compilation failed");

  std::vector<HostTensor> locals;
  for (auto [i, spec] : llvm::enumerate(layouts->args)) {
    llvm::Expected<HostTensor> global =
        readNpy(path("in" + llvm::Twine(i) + ".npy"));
    if (!global)
      return fail(llvm::toString(global.takeError()));
    const HostMesh &mesh = layouts->getMesh(spec);
    std::optional<std::vector<int64_t>> coords = mesh.coordsOf(rank);
    if (!coords)
      return fail("not a member of mesh @" + mesh.name);
    // Written by the launcher in the argument's type, bf16 as f32.
    locals.push_back(distribute(castHostTensor(*global, spec.type),
                                spec.layout, mesh, *coords));
  }
  SmallVector<const HostTensor *> args;
  for (const HostTensor &local : locals)
    args.push_back(&local);

  llvm::Expected<std::vector<HostTensor>> outputs =
      (*exe)->invoke(layouts->entry, args);
  if (!outputs)
    return fail(llvm::toString(outputs.takeError()));
  std::vector<double> times;
  for (int64_t k = 0; k < repeat; ++k) {
    dtensor_rt_barrier();
    auto start = std::chrono::steady_clock::now();
    llvm::Expected<std::vector<HostTensor>> again =
        (*exe)->invoke(layouts->entry, args);
    if (!again)
      return fail(llvm::toString(again.takeError()));
    dtensor_rt_barrier();
    times.push_back(std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  for (auto [i, output] : llvm::enumerate(*outputs))
    if (llvm::Error e = writeNpy(
            path("out" + llvm::Twine(i) + ".rank" + llvm::Twine(rank) + ".npy"),
            output))
      return fail(llvm::toString(std::move(e)));
  if (rank == 0 && !times.empty()) {
    std::sort(times.begin(), times.end());
    std::string timing;
    llvm::raw_string_ostream(timing) << json::Value(json::Object{
        {"median_ms", times[times.size() / 2]}, {"min_ms", times.front()}});
    if (llvm::Error e = writeFile(path("timing.json"), timing))
      llvm::consumeError(std::move(e));
  }
  dtensor_rt_finalize();
  return 0;
}
