//===- BootstrapTest.cpp - dtensor-cuda-bootstrap-test --------------------===//
//
// The CUDA runtime's bootstrap (lib/Target/CUDA/Runtime/Bootstrap.cpp)
// without a GPU: launcher variables and the TCP rendezvous that spreads the
// NCCL unique id. Each subcommand prints what it observed for FileCheck
// (test/Target/CUDA/bootstrap.test):
//
//   env                 readLaunchEnv of the current environment
//   exchange N          forks N ranks that exchange a 128-byte id; each
//                       reports whether it got rank 0's bytes
//   exchange-alone R N  rank R of N with nobody else (a timeout)
//
//===----------------------------------------------------------------------===//

#include "Bootstrap.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace dtensor::rt::cuda;

namespace {

int printEnv() {
  LaunchEnv env;
  std::string error;
  if (!readLaunchEnv(env, error)) {
    std::printf("error: %s\n", error.c_str());
    return 1;
  }
  std::printf("launcher %s rank %lld size %lld local %lld rendezvous %s:%d "
              "timeout %g single-gpu %d\n",
              env.launcher.c_str(), static_cast<long long>(env.rank),
              static_cast<long long>(env.worldSize),
              static_cast<long long>(env.localRank), env.masterAddr.c_str(),
              env.port, env.rendezvousTimeout, env.singleGpuTest ? 1 : 0);
  return 0;
}

/// The id rank 0 sends: bytes derived from a per-run seed so that a stale
/// listener cannot pass the check by accident.
void makeId(unsigned char *id, unsigned seed) {
  for (int i = 0; i < 128; ++i)
    id[i] = static_cast<unsigned char>((seed * 31u + i * 17u) & 0xff);
}

int runRank(int64_t rank, int64_t size, unsigned seed) {
  std::string r = std::to_string(rank), n = std::to_string(size);
  ::setenv("DTENSOR_RANK", r.c_str(), 1);
  ::setenv("DTENSOR_WORLD_SIZE", n.c_str(), 1);
  LaunchEnv env;
  std::string error;
  if (!readLaunchEnv(env, error)) {
    std::printf("rank %lld: env error: %s\n", static_cast<long long>(rank),
                error.c_str());
    return 1;
  }
  unsigned char id[128] = {0}, want[128];
  makeId(want, seed);
  if (rank == 0)
    std::memcpy(id, want, sizeof(id));
  if (!exchangeUniqueId(env, id, sizeof(id), error)) {
    std::printf("rank %lld: error: %s\n", static_cast<long long>(rank),
                error.c_str());
    return 1;
  }
  bool same = std::memcmp(id, want, sizeof(id)) == 0;
  std::printf("rank %lld: %s\n", static_cast<long long>(rank),
              same ? "got the id" : "got WRONG bytes");
  return same ? 0 : 1;
}

int exchange(int64_t size) {
  unsigned seed = static_cast<unsigned>(::getpid());
  std::fflush(stdout);
  std::vector<pid_t> children;
  // Start the others before rank 0: they must retry until it listens.
  for (int64_t r = size - 1; r >= 0; --r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int rc = runRank(r, size, seed);
      std::fflush(stdout);
      ::_exit(rc);
    }
    children.push_back(pid);
    if (r == size - 1)
      ::usleep(200 * 1000);
  }
  int failures = 0;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      ++failures;
  }
  std::printf("%d of %lld ranks failed\n", failures,
              static_cast<long long>(size));
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "env")
    return printEnv();
  if (cmd == "exchange" && argc == 3)
    return exchange(std::atoll(argv[2]));
  if (cmd == "exchange-alone" && argc == 4)
    return runRank(std::atoll(argv[2]), std::atoll(argv[3]), 1);
  std::fprintf(stderr, "usage: dtensor-cuda-bootstrap-test env | exchange N | "
                       "exchange-alone RANK N\n");
  return 2;
}
