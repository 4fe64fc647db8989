//===- ArtifactLauncher.cpp - run compiled artifacts on N ranks -----------===//

#include "dtensor/Launcher/ArtifactLauncher.h"

#include "dtensor/Support/ArtifactManifest.h"
#include "dtensor/Support/EntryLayouts.h"
#include "dtensor/Support/Errors.h"
#include "dtensor/Support/HostLayout.h"
#include "dtensor/Support/HostTensor.h"
#include "dtensor/Support/MemRefCall.h"
#include "dtensor/Support/OutputCheck.h"
#include "dtensor/Support/Process.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <dlfcn.h>
#include <netinet/in.h>
#include <random>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace mlir::dtensor;
namespace json = llvm::json;

namespace {

/// The runtime functions the launcher calls, from the artifact's runtime
/// library (found through the artifact's handle).
struct RuntimeAPI {
  int64_t (*worldRank)() = nullptr;
  int64_t (*worldSize)() = nullptr;
  void (*barrier)() = nullptr;
  void *(*bufferAlloc)(int64_t) = nullptr;
  void (*bufferFree)(void *) = nullptr;
  void (*bufferWrite)(void *, const void *, int64_t) = nullptr;
  void (*bufferRead)(void *, const void *, int64_t) = nullptr;
  /// CUDA artifacts only (dtensor/Runtime/CUDARuntime.h), for --cuda-graph.
  void *(*context)() = nullptr;
  void (*graphBegin)(void *) = nullptr;
  void *(*graphEnd)(void *) = nullptr;
  void (*graphLaunch)(void *, void *) = nullptr;
  void (*graphDestroy)(void *, void *) = nullptr;

  BufferSpace getBufferSpace() const {
    BufferSpace space;
    space.allocate = bufferAlloc;
    space.release = bufferFree;
    space.write = bufferWrite;
    space.read = bufferRead;
    return space;
  }
};

/// A loaded artifact and what its manifest says.
struct Artifact {
  std::string path;
  void *handle = nullptr;
  std::string target, backend, entry;
  bool unsharded = false;
  /// Sharded artifacts: the entry's layouts.
  EntryLayouts layouts;
  /// Every artifact: global element types and shapes of the arguments and
  /// results (from the layouts or the signature).
  std::vector<std::pair<ElementType, std::vector<int64_t>>> args, results;
  std::vector<int64_t> integerBounds;
  std::vector<bool> undefinedResults;
  int (*init)(int *, char ***) = nullptr;
  void (*run)(void **) = nullptr;
  void (*finalize)() = nullptr;
  RuntimeAPI runtime;

  CallSignature getCallSignature() const {
    CallSignature signature;
    for (const auto &[type, shape] : args)
      signature.args.emplace_back(type, shape.size());
    for (const auto &[type, shape] : results)
      signature.results.emplace_back(type, shape.size());
    return signature;
  }
  /// The entry's mesh (sharded artifacts with tensors).
  const HostMesh *getEntryMesh() const {
    std::optional<int64_t> mesh = layouts.getEntryMesh();
    return unsharded || !mesh ? nullptr : &layouts.meshes[*mesh];
  }
};

template <typename T>
llvm::Error lookup(const Artifact &artifact, const char *name, T &fn) {
  fn = reinterpret_cast<T>(dlsym(artifact.handle, name));
  if (!fn)
    return makeError("'" + artifact.path + "' has no " + name +
                     ": not an artifact of dtensor-compile, or its runtime "
                     "library is older");
  return llvm::Error::success();
}

/// Fills what `artifact`'s manifest `text` says.
llvm::Error parseManifest(llvm::StringRef text, Artifact &artifact) {
  llvm::Expected<ArtifactManifest> manifest = ArtifactManifest::fromJSON(text);
  if (!manifest)
    return makeError("'" + artifact.path +
                     "': " + llvm::toString(manifest.takeError()));
  artifact.target = manifest->target;
  artifact.backend = manifest->getBackend().str();
  artifact.entry = manifest->entry;
  artifact.unsharded = manifest->unsharded;
  artifact.layouts = std::move(manifest->layouts);
  for (const TensorSignature &tensor : manifest->args)
    artifact.args.emplace_back(tensor.type, tensor.shape);
  for (const TensorSignature &tensor : manifest->results)
    artifact.results.emplace_back(tensor.type, tensor.shape);
  artifact.integerBounds = std::move(manifest->integerBounds);
  artifact.undefinedResults = std::move(manifest->undefinedResults);
  return llvm::Error::success();
}

llvm::Expected<Artifact> loadArtifact(const std::string &path) {
  Artifact artifact;
  artifact.path = path;
  if (!llvm::sys::fs::exists(path))
    return makeError("'" + path + "' does not exist");
  // dlopen searches the library path for a name without a slash.
  llvm::SmallString<256> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  // Local: the reference defines the same function names as the artifact.
  // Both bind to one runtime library all the same (one soname, loaded once).
  artifact.handle = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!artifact.handle)
    return makeError("cannot load '" + path + "': " + dlerror());
  const char *(*manifestFn)() = nullptr;
  if (llvm::Error e = lookup(artifact, "dtensor_artifact_manifest", manifestFn))
    return std::move(e);
  if (llvm::Error e = lookup(artifact, "dtensor_artifact_init", artifact.init))
    return std::move(e);
  if (llvm::Error e = lookup(artifact, "dtensor_artifact_run", artifact.run))
    return std::move(e);
  if (llvm::Error e =
          lookup(artifact, "dtensor_artifact_finalize", artifact.finalize))
    return std::move(e);
  RuntimeAPI &rt = artifact.runtime;
  if (llvm::Error e = llvm::joinErrors(
          llvm::joinErrors(
              llvm::joinErrors(
                  lookup(artifact, "dtensor_rt_world_rank", rt.worldRank),
                  lookup(artifact, "dtensor_rt_world_size", rt.worldSize)),
              llvm::joinErrors(
                  lookup(artifact, "dtensor_rt_barrier", rt.barrier),
                  lookup(artifact, "dtensor_rt_buffer_alloc", rt.bufferAlloc))),
          llvm::joinErrors(
              llvm::joinErrors(
                  lookup(artifact, "dtensor_rt_buffer_free", rt.bufferFree),
                  lookup(artifact, "dtensor_rt_buffer_write", rt.bufferWrite)),
              lookup(artifact, "dtensor_rt_buffer_read", rt.bufferRead))))
    return std::move(e);

  if (llvm::Error e = parseManifest(manifestFn(), artifact))
    return std::move(e);
  if (artifact.backend == "cuda")
    if (llvm::Error e = llvm::joinErrors(
            llvm::joinErrors(
                lookup(artifact, "dtensor_rt_context", rt.context),
                lookup(artifact, "dtensor_rt_graph_begin", rt.graphBegin)),
            llvm::joinErrors(
                llvm::joinErrors(
                    lookup(artifact, "dtensor_rt_graph_end", rt.graphEnd),
                    lookup(artifact, "dtensor_rt_graph_launch",
                           rt.graphLaunch)),
                lookup(artifact, "dtensor_rt_graph_destroy", rt.graphDestroy))))
      return std::move(e);
  return artifact;
}

/// Why `artifact` cannot run as `options` ask beyond what
/// validateArtifactLaunchOptions sees; empty if it can.
std::string checkRunnable(const ArtifactLaunchOptions &options,
                          const Artifact &artifact) {
  if (options.cudaGraph && artifact.backend != "cuda")
    return "--cuda-graph needs a CUDA artifact; '" + options.artifact +
           "' is for the " + artifact.backend + " target";
  return "";
}

/// The manifest of the artifact at `path`, read in a child process: loading
/// an artifact runs its constructors, which load its GPU kernels, and a
/// process that only starts the ranks must neither need a GPU nor die of
/// a missing one with the wrong exit code.
llvm::Expected<Artifact> peekArtifact(const std::string &path) {
  int fds[2];
  if (pipe(fds) != 0)
    return makeError("cannot create a pipe");
  pid_t pid = fork();
  if (pid < 0)
    return makeError("cannot fork");
  if (pid == 0) {
    close(fds[0]);
    llvm::Expected<Artifact> loaded = loadArtifact(path);
    if (!loaded) {
      llvm::errs() << "dtensor-launch: error: "
                   << llvm::toString(loaded.takeError()) << "\n";
      _exit(2);
    }
    auto manifest = reinterpret_cast<const char *(*)()>(
        dlsym(loaded->handle, "dtensor_artifact_manifest"));
    std::string text = manifest();
    size_t written = 0;
    while (written < text.size()) {
      ssize_t n = write(fds[1], text.data() + written, text.size() - written);
      if (n <= 0)
        _exit(2);
      written += n;
    }
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char chunk[4096];
  ssize_t n;
  while ((n = read(fds[0], chunk, sizeof(chunk))) > 0)
    text.append(chunk, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return makeError("cannot load '" + path + "' (see above)");
  Artifact artifact;
  artifact.path = path;
  if (llvm::Error e = parseManifest(text, artifact))
    return std::move(e);
  return artifact;
}

std::string describe(const std::pair<ElementType, std::vector<int64_t>> &t) {
  return describeTensorType(t.first, t.second);
}

/// Why `reference` cannot serve as the reference of `artifact`.
llvm::Error checkReference(const Artifact &artifact,
                           const Artifact &reference) {
  if (!reference.unsharded)
    return makeError("the reference '" + reference.path +
                     "' is a sharded artifact; compile it with "
                     "dtensor-compile --unsharded");
  auto compare = [&](const auto &mine, const auto &theirs,
                     llvm::StringRef what) -> llvm::Error {
    if (mine.size() != theirs.size())
      return makeError("the reference takes " + llvm::Twine(theirs.size()) +
                       " " + what + "s, the artifact " +
                       llvm::Twine(mine.size()));
    for (size_t i = 0; i < mine.size(); ++i)
      if (mine[i] != theirs[i])
        return makeError(what + " #" + llvm::Twine(i) + " is " +
                         describe(mine[i]) + " in the artifact but " +
                         describe(theirs[i]) + " in the reference");
    return llvm::Error::success();
  };
  if (llvm::Error e = compare(artifact.args, reference.args, "argument"))
    return e;
  return compare(artifact.results, reference.results, "result");
}

/// `given` (created if missing), or a fresh temporary directory when it is
/// empty.
llvm::Expected<std::string> createWorkDir(const std::string &given) {
  if (!given.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(given))
      return makeError("cannot create '" + given + "': " + ec.message());
    return given;
  }
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("dtensor-launch", dir))
    return makeError("cannot create a work directory: " + ec.message());
  return std::string(dir);
}

/// What rank 0 wrote after comparing ("PASS" or "FAIL"), or "" if it did
/// not get that far: exit code 1 means a mismatch only with "FAIL" there
/// (a runtime error may exit 1 too).
std::string readVerdict(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().trim().str() : "";
}

/// A free TCP port on the loopback interface for the rendezvous.
int findFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return 29500;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 29500;
  if (bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  close(fd);
  return port;
}

/// The command line of one rank: this executable joining the job.
std::vector<std::string> rankCommand(const ArtifactLaunchOptions &options,
                                     const std::string &self, uint64_t seed,
                                     const std::string &workDir) {
  std::vector<std::string> args = {self, options.artifact};
  if (!options.reference.empty())
    args.push_back("--reference=" + options.reference);
  args.push_back("--seed=" + std::to_string(seed));
  std::string tolerance;
  llvm::raw_string_ostream(tolerance)
      << llvm::format("%.17g", options.tolerance);
  args.push_back("--tolerance=" + tolerance);
  for (const auto &[index, file] : options.inputs)
    args.push_back("--input=" + std::to_string(index) + "=" + file);
  args.push_back("--work-dir=" + workDir);
  if (options.cudaGraph)
    args.push_back("--cuda-graph");
  if (!options.outputDir.empty())
    args.push_back("--output-dir=" + options.outputDir);
  return args;
}

/// Starts `nproc` ranks of `command` with the dtensor bootstrap environment
/// and waits for them. A rank that fails gets the others killed after a
/// grace period (they are likely waiting for it); the job is killed after
/// the timeout. Returns rank 0's exit code when every other rank exited 0,
/// else 2 with the failing rank named on stderr.
int runRanks(const std::vector<std::string> &command, int64_t nproc,
             bool singleGpu, int64_t timeoutSeconds,
             const std::string &verdictPath) {
  std::string port = std::to_string(findFreePort());
  std::vector<char *> argv;
  for (const std::string &arg : command)
    argv.push_back(const_cast<char *>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<pid_t> pids;
  pid_t group = 0;
  for (int64_t rank = 0; rank < nproc; ++rank) {
    pid_t pid = fork();
    if (pid < 0) {
      llvm::errs() << "dtensor-launch: error: cannot start rank " << rank
                   << "\n";
      if (group)
        kill(-group, SIGKILL);
      return 2;
    }
    if (pid == 0) {
      setpgid(0, group);
      std::string r = std::to_string(rank), n = std::to_string(nproc);
      setenv("DTENSOR_RANK", r.c_str(), 1);
      setenv("DTENSOR_WORLD_SIZE", n.c_str(), 1);
      setenv("DTENSOR_LOCAL_RANK", r.c_str(), 1);
      setenv("DTENSOR_MASTER_ADDR", "127.0.0.1", 1);
      setenv("DTENSOR_MASTER_PORT", port.c_str(), 1);
      setenv("DTENSOR_SINGLE_GPU_TEST", singleGpu ? "1" : "0", 1);
      setenv("NCCL_NVLS_ENABLE", "0", 0);
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (!group)
      group = pid;
    setpgid(pid, group);
    pids.push_back(pid);
  }
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::seconds(timeoutSeconds);
  std::optional<Clock::time_point> killAt;
  constexpr int kGraceSeconds = 15;
  std::vector<int> codes(nproc, -1);
  int64_t remaining = nproc, firstFailed = -1;
  bool killed = false;
  while (remaining > 0) {
    int status = 0;
    pid_t done = waitpid(-group, &status, WNOHANG);
    if (done > 0) {
      auto it = std::find(pids.begin(), pids.end(), done);
      if (it == pids.end())
        continue;
      int64_t rank = it - pids.begin();
      codes[rank] =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      --remaining;
      bool failed = codes[rank] != 0 && !(rank == 0 && codes[rank] == 1 &&
                                          readVerdict(verdictPath) == "FAIL");
      if (failed && firstFailed < 0 && !killed) {
        firstFailed = rank;
        llvm::errs() << "dtensor-launch: rank " << rank
                     << (WIFEXITED(status)
                             ? " exited with code " +
                                   std::to_string(codes[rank])
                             : " was killed by signal " +
                                   std::to_string(WTERMSIG(status)))
                     << "\n";
        if (remaining > 0)
          killAt = Clock::now() + std::chrono::seconds(kGraceSeconds);
      }
      continue;
    }
    auto now = Clock::now();
    if (!killed && (now > deadline || (killAt && now > *killAt))) {
      if (now > deadline)
        llvm::errs() << "dtensor-launch: error: the ranks did not finish "
                        "within "
                     << timeoutSeconds
                     << " s and were killed (raise --timeout if it is "
                        "just slow)\n";
      else
        llvm::errs() << "dtensor-launch: the other ranks did not end within "
                     << kGraceSeconds << " s of rank " << firstFailed
                     << "'s failure and were killed\n";
      kill(-group, SIGTERM);
      std::this_thread::sleep_for(std::chrono::seconds(2));
      kill(-group, SIGKILL);
      killed = true;
      if (firstFailed < 0)
        firstFailed = 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (firstFailed >= 0) {
    llvm::errs() << "dtensor-launch: error: the job failed: rank "
                 << firstFailed << " (see its message above)\n";
    return 2;
  }
  return codes[0];
}

/// One rank of the job.
class Rank {
public:
  Rank(const ArtifactLaunchOptions &options, llvm::raw_ostream &os)
      : options(options), os(os) {}
  int run(int *argc, char ***argv);

private:
  int error(const llvm::Twine &message) {
    // One write: stderr is unbuffered and shared with the other ranks and
    // the launcher, so a line written piece by piece gets interleaved.
    llvm::errs() << ("dtensor-launch: " +
                     (rank >= 0 ? "rank " + std::to_string(rank) + ": " : "") +
                     "error: " + message + "\n")
                        .str();
    llvm::errs().flush();
    return 2;
  }
  int error(llvm::Error e) { return error(llvm::toString(std::move(e))); }
  std::string path(const llvm::Twine &name) const {
    return joinPath(workDir, name);
  }
  llvm::Error writeInputs(uint64_t seed);
  llvm::Expected<std::vector<HostTensor>> readInputs();
  int check(const std::vector<HostTensor> &inputs);

  const ArtifactLaunchOptions &options;
  llvm::raw_ostream &os;
  Artifact artifact;
  int64_t rank = -1, world = 0;
  std::string workDir;
};

llvm::Error Rank::writeInputs(uint64_t seed) {
  for (const auto &[index, file] : options.inputs)
    if (index >= static_cast<int64_t>(artifact.args.size()))
      return makeError("--input " + llvm::Twine(index) + "=" + file + ": @" +
                       artifact.entry + " has " +
                       llvm::Twine(artifact.args.size()) + " argument" +
                       (artifact.args.size() == 1 ? "" : "s"));
  std::mt19937_64 rng(seed);
  for (auto [i, arg] : llvm::enumerate(artifact.args)) {
    const auto &[type, shape] = arg;
    HostTensor input;
    auto provided = options.inputs.find(i);
    if (provided != options.inputs.end()) {
      llvm::Expected<HostTensor> loaded =
          readInputNpy(i, provided->second, type, shape);
      if (!loaded)
        return loaded.takeError();
      input = std::move(*loaded);
    } else {
      int64_t bound =
          i < artifact.integerBounds.size() ? artifact.integerBounds[i] : 16;
      input = makeRandomTensor(type, shape, rng, bound);
    }
    if (llvm::Error e = writeNpy(path("in" + llvm::Twine(i) + ".npy"), input))
      return e;
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<HostTensor>> Rank::readInputs() {
  std::vector<HostTensor> inputs;
  for (auto [i, arg] : llvm::enumerate(artifact.args)) {
    llvm::Expected<HostTensor> global =
        readNpy(path("in" + llvm::Twine(i) + ".npy"));
    if (!global)
      return global.takeError();
    inputs.push_back(castHostTensor(*global, arg.first));
  }
  return inputs;
}

int Rank::check(const std::vector<HostTensor> &inputs) {
  std::optional<Artifact> reference;
  if (!options.reference.empty()) {
    llvm::Expected<Artifact> loaded = loadArtifact(options.reference);
    if (!loaded)
      return error(loaded.takeError());
    if (llvm::Error e = checkReference(artifact, *loaded))
      return error(std::move(e));
    reference = std::move(*loaded);
  }
  std::vector<HostTensor> expected;
  if (reference) {
    std::vector<const HostTensor *> args;
    for (const HostTensor &input : inputs)
      args.push_back(&input);
    // The runtime this process started serves the reference too: its
    // buffers, stream and library are the same.
    llvm::Expected<std::vector<HostTensor>> outputs =
        callPacked(reference->entry, reference->getCallSignature(), args,
                   artifact.runtime.getBufferSpace(), [&](void **packed) {
                     reference->run(packed);
                     return llvm::Error::success();
                   });
    if (!outputs)
      return error(outputs.takeError());
    expected = std::move(*outputs);
  }
  std::vector<HostTensor> globals;
  auto read = [&](size_t i, int64_t r) {
    return readNpy(
        path("out" + llvm::Twine(i) + ".rank" + llvm::Twine(r) + ".npy"));
  };
  llvm::Expected<bool> good = true;
  if (artifact.unsharded) {
    // One rank computed everything.
    for (size_t i = 0; i < artifact.results.size(); ++i) {
      llvm::Expected<HostTensor> output = read(i, 0);
      if (!output)
        return error(output.takeError());
      HostTensor value = castHostTensor(*output, artifact.results[i].first);
      if (reference) {
        double relative = relativeError(value, expected[i]);
        bool ok = !std::isnan(relative) && relative <= options.tolerance;
        *good = *good && ok;
        os << llvm::format("  output #%zu %s: max relative error %.3e "
                           "(tolerance %.1e) %s\n",
                           i, describe(artifact.results[i]).c_str(), relative,
                           options.tolerance, ok ? "ok" : "MISMATCH");
      }
      globals.push_back(std::move(value));
    }
  } else {
    good = checkOutputs(artifact.layouts, artifact.undefinedResults,
                        reference ? &expected : nullptr, options.tolerance,
                        read, os, &globals);
    if (!good)
      return error(good.takeError());
  }
  if (!options.outputDir.empty()) {
    if (std::error_code ec =
            llvm::sys::fs::create_directories(options.outputDir))
      return error("cannot create '" + options.outputDir +
                   "': " + ec.message());
    for (auto [i, global] : llvm::enumerate(globals))
      if (!global.data.empty() || global.getNumElements() == 0)
        if (llvm::Error e = writeNpy(
                joinPath(options.outputDir, "out" + llvm::Twine(i) + ".npy"),
                global))
          return error(std::move(e));
  }
  if (!reference)
    return 0;
  const char *verdict = *good ? "PASS" : "FAIL";
  if (std::FILE *file = std::fopen(path("verdict").c_str(), "w")) {
    std::fputs(verdict, file);
    std::fclose(file);
  }
  os << verdict << "\n";
  return *good ? 0 : 1;
}

int Rank::run(int *argc, char ***argv) {
  llvm::Expected<Artifact> loaded = loadArtifact(options.artifact);
  if (!loaded)
    return error(loaded.takeError());
  artifact = std::move(*loaded);
  if (std::string why = checkRunnable(options, artifact); !why.empty())
    return error(why);
  if (artifact.init(argc, argv) != 0)
    return error("the runtime of '" + options.artifact +
                 "' did not start (its message is above)");
  llvm::scope_exit finalize([&] { artifact.finalize(); });
  rank = artifact.runtime.worldRank();
  world = artifact.runtime.worldSize();
  if (const HostMesh *mesh = artifact.getEntryMesh())
    if (mesh->size() != world)
      return error("mesh @" + mesh->name + " has " + llvm::Twine(mesh->size()) +
                   " processes, the job " + llvm::Twine(world) +
                   "; run with --nproc " + llvm::Twine(mesh->size()));
  if (artifact.unsharded && world != 1)
    return error("'" + options.artifact +
                 "' is unsharded: run it on one "
                 "rank, not " +
                 llvm::Twine(world));

  // The work directory all ranks share.
  workDir = options.workDir;
  bool ownWorkDir = workDir.empty();
  if (ownWorkDir && world != 1)
    return error("ranks started by another launcher need a shared "
                 "--work-dir");
  llvm::Expected<std::string> created = createWorkDir(workDir);
  if (!created)
    return error(created.takeError());
  workDir = *created;
  llvm::scope_exit cleanup([&] {
    if (ownWorkDir && !options.keepWorkDir)
      llvm::sys::fs::remove_directories(workDir);
  });

  // Rank 0 draws (or loads) the global inputs once.
  int status = 0;
  uint64_t seed = 0;
  if (rank == 0) {
    // A reused work directory must not hand a stale verdict to the parent.
    llvm::sys::fs::remove(path("verdict"));
    seed = options.seed ? *options.seed : makeFreshSeed();
    if (llvm::Error e = writeInputs(seed))
      status = error(std::move(e));
  }
  artifact.runtime.barrier();
  if (status)
    return status;
  std::vector<HostTensor> inputs;
  if (llvm::Error e = [&]() -> llvm::Error {
        llvm::Expected<std::vector<HostTensor>> read = readInputs();
        if (!read)
          return read.takeError();
        inputs = std::move(*read);
        return llvm::Error::success();
      }())
    return error(std::move(e));

  std::vector<HostTensor> locals;
  if (artifact.unsharded) {
    locals = inputs;
  } else {
    for (auto [i, spec] : llvm::enumerate(artifact.layouts.args)) {
      const HostMesh &mesh = artifact.layouts.getMesh(spec);
      std::optional<std::vector<int64_t>> coords = mesh.coordsOf(rank);
      if (!coords)
        return error("not a member of mesh @" + mesh.name);
      locals.push_back(distribute(inputs[i], spec.layout, mesh, *coords));
    }
  }
  std::vector<const HostTensor *> args;
  for (const HostTensor &local : locals)
    args.push_back(&local);
  auto call = [&](llvm::function_ref<void(void **)> run) {
    return callPacked(artifact.entry, artifact.getCallSignature(), args,
                      artifact.runtime.getBufferSpace(), [&](void **packed) {
                        run(packed);
                        return llvm::Error::success();
                      });
  };
  llvm::Expected<std::vector<HostTensor>> outputs = call(artifact.run);
  if (!outputs)
    return error(outputs.takeError());
  if (options.cudaGraph) {
    // The direct call above built the plans and the connections; now the
    // whole program as one graph. Its results are allocated by the graph:
    // the second launch frees the first's, the buffer space the second's.
    const RuntimeAPI &rt = artifact.runtime;
    void *ctx = rt.context();
    void *graph = nullptr;
    llvm::scope_exit destroy([&] {
      if (graph)
        rt.graphDestroy(ctx, graph);
    });
    outputs = call([&](void **packed) {
      rt.graphBegin(ctx);
      artifact.run(packed);
      graph = rt.graphEnd(ctx);
      rt.graphLaunch(ctx, graph);
      rt.graphLaunch(ctx, graph);
    });
    if (!outputs)
      return error(outputs.takeError());
  }
  for (auto [i, output] : llvm::enumerate(*outputs))
    if (llvm::Error e = writeNpy(
            path("out" + llvm::Twine(i) + ".rank" + llvm::Twine(rank) + ".npy"),
            output))
      return error(std::move(e));
  artifact.runtime.barrier();
  if (rank != 0)
    return 0;

  const HostMesh *mesh = artifact.getEntryMesh();
  os << "dtensor-launch: " << options.artifact << " (" << artifact.target
     << ", @" << artifact.entry << ") on " << world << " rank"
     << (world == 1 ? "" : "s");
  if (mesh)
    os << " (mesh @" << mesh->name << ")";
  os << ", seed " << seed << "\n";
  return check(inputs);
}

} // namespace

std::string
mlir::dtensor::validateArtifactLaunchOptions(const ArtifactLaunchOptions &o) {
  if (o.artifact.empty())
    return "no artifact given";
  if (std::isnan(o.tolerance) || o.tolerance < 0)
    return "--tolerance must be a number >= 0";
  if (o.nproc < 0)
    return "--nproc must be >= 1, got " + std::to_string(o.nproc);
  if (o.timeoutSeconds < 1 || o.timeoutSeconds > 1000000000)
    return "--timeout must be in [1, 1000000000] seconds, got " +
           std::to_string(o.timeoutSeconds);
  for (const auto &[index, file] : o.inputs)
    if (index < 0)
      return "--input index must be >= 0, got " + std::to_string(index);
  return "";
}

int mlir::dtensor::launchArtifact(const ArtifactLaunchOptions &options,
                                  const std::string &self, int *argc,
                                  char ***argv, llvm::raw_ostream &os) {
  auto error = [](const llvm::Twine &message) {
    llvm::errs() << "dtensor-launch: error: " << message << "\n";
    return 2;
  };
  if (std::string why = validateArtifactLaunchOptions(options); !why.empty())
    return error(why);
  if (options.nproc == 0)
    return Rank(options, os).run(argc, argv);

  // Start the ranks: look at the artifact first (in a child process) for
  // its backend and mesh.
  llvm::Expected<Artifact> artifact = peekArtifact(options.artifact);
  if (!artifact)
    return error(llvm::toString(artifact.takeError()));
  if (std::string why = checkRunnable(options, *artifact); !why.empty())
    return error(why);
  if (const HostMesh *mesh = artifact->getEntryMesh())
    if (mesh->size() != options.nproc)
      return error("mesh @" + mesh->name + " has " + llvm::Twine(mesh->size()) +
                   " processes; run with --nproc " + llvm::Twine(mesh->size()));
  if (artifact->unsharded && options.nproc != 1)
    return error("'" + options.artifact +
                 "' is unsharded: run it with --nproc 1");
  uint64_t seed = options.seed ? *options.seed : makeFreshSeed();
  llvm::Expected<std::string> created = createWorkDir(options.workDir);
  if (!created)
    return error(llvm::toString(created.takeError()));
  std::string workDir = *created;
  bool ownWorkDir = options.workDir.empty();
  llvm::scope_exit cleanup([&] {
    if (ownWorkDir && !options.keepWorkDir)
      llvm::sys::fs::remove_directories(workDir);
  });
  std::vector<std::string> command = rankCommand(options, self, seed, workDir);
  os.flush();
  if (artifact->backend == "cpu") {
    llvm::Expected<std::vector<std::string>> mpirun =
        getMpirunCommand(options.mpirun, options.nproc, command);
    if (!mpirun)
      return error(llvm::toString(mpirun.takeError()));
    int status = runWithTimeout(*mpirun, options.timeoutSeconds);
    if (status == kTimedOut)
      return error("the ranks did not finish within " +
                   llvm::Twine(options.timeoutSeconds) +
                   " s and were killed (raise --timeout if it is just slow)");
    if (status == kCannotStart)
      return error("cannot start " + mpirun->front());
    if (status == 1 && readVerdict(joinPath(workDir, "verdict")) != "FAIL")
      return error("a rank exited with code 1 before the outputs were "
                   "compared (see its message above)");
    return status == 0 || status == 1 ? status : 2;
  }
  return runRanks(command, options.nproc, options.singleGpu,
                  options.timeoutSeconds, joinPath(workDir, "verdict"));
}
