//===- LocalJob.cpp - start the ranks of a job on this host ---------------===//
//
// A small mpirun: the ranks of a job started on this host, either by
// mpirun (CPU artifacts) or as processes of this executable with the
// dtensor bootstrap environment and a rendezvous port, in one process
// group; a failing rank gets the others killed after a grace period, the
// job is killed after the timeout, and rank 0's verdict tells a mismatch
// from an error.
//
//===----------------------------------------------------------------------===//

#include "ArtifactLauncherInternal.h"

#include "dtensor/Support/Errors.h"
#include "dtensor/Support/Process.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <netinet/in.h>
#include <optional>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace mlir::dtensor;
using namespace mlir::dtensor::launcher;

llvm::Expected<std::string> launcher::createWorkDir(const std::string &given) {
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

namespace {

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
  for (std::string &arg : options.tolerances.toArgs())
    args.push_back(std::move(arg));
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

} // namespace

int launcher::runLocalJob(const ArtifactLaunchOptions &options,
                          const std::string &self, const Artifact &artifact,
                          llvm::raw_ostream &os) {
  uint64_t seed = options.seed ? *options.seed : makeFreshSeed();
  llvm::Expected<std::string> created = createWorkDir(options.workDir);
  if (!created)
    return launchError(llvm::toString(created.takeError()));
  std::string workDir = *created;
  bool ownWorkDir = options.workDir.empty();
  llvm::scope_exit cleanup([&] {
    if (ownWorkDir && !options.keepWorkDir)
      llvm::sys::fs::remove_directories(workDir);
  });
  std::vector<std::string> command = rankCommand(options, self, seed, workDir);
  os.flush();
  if (artifact.backend == "cpu") {
    llvm::Expected<std::vector<std::string>> mpirun =
        getMpirunCommand(options.mpirun, options.nproc, command, workDir);
    if (!mpirun)
      return launchError(llvm::toString(mpirun.takeError()));
    int status = runWithTimeout(*mpirun, options.timeoutSeconds);
    if (status == kTimedOut)
      return launchError(
          "the ranks did not finish within " +
          llvm::Twine(options.timeoutSeconds) +
          " s and were killed (raise --timeout if it is just slow)");
    if (status == kCannotStart)
      return launchError("cannot start " + mpirun->front());
    if (status == 1 && readVerdict(joinPath(workDir, "verdict")) != "FAIL")
      return launchError("a rank exited with code 1 before the outputs were "
                         "compared (see its message above)");
    return status == 0 || status == 1 ? status : 2;
  }
  return runRanks(command, options.nproc, options.singleGpu,
                  options.timeoutSeconds, joinPath(workDir, "verdict"));
}
