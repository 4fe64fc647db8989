//===- Launcher.h - run compiled programs on N ranks and check them -*- C++ -*-===//
//
// The launcher behind dtensor-run, in three steps: compile a global-view
// program twice (sharded per rank, and unsharded as the reference, which it
// runs on the host), start the ranks of the sharded one through a
// RankLauncher (mpirun today), and compare every copy of every output,
// reassembled from the ranks' local parts by its layout
// (dtensor/Support/HostLayout.h), with the reference.
//
// The work directory is the interface between the driver and the ranks:
// sharded.mlir (the per-rank program at the LLVM stage), layouts.json (the
// entry's EntryLayouts), job.json ({"repeat": K}), in<i>.npy (global
// inputs), ref<i>.npy (the reference's outputs); each rank writes
// out<i>.rank<r>.npy and rank 0 timing.json; the driver then writes the
// reassembled outputs, out<i>.npy (the first copy of each).
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LAUNCHER_LAUNCHER_H
#define DTENSOR_LAUNCHER_LAUNCHER_H

#include "dtensor/Support/OutputCheck.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dtensor {

/// A job of ranks to start: `ranks` processes, each running runWorker on
/// `workDir`, killed after `timeoutSeconds`.
struct RankJob {
  std::string workDir;
  int64_t ranks = 1;
  int64_t timeoutSeconds = 120;
};

/// Starts the ranks of a job and waits for them.
class RankLauncher {
public:
  virtual ~RankLauncher();
  /// Runs `job`; an error says why it did not finish cleanly (could not
  /// start, timed out, a rank failed).
  virtual llvm::Error run(const RankJob &job) = 0;
};

/// Ranks as processes of `mpirun --oversubscribe -n N <worker>
/// --worker=DIR`, where `worker` is an executable that calls runWorker for
/// that option (dtensor-run), in their own process group, killed after the
/// timeout.
std::unique_ptr<RankLauncher> createMpiRankLauncher(std::string mpirun,
                                                    std::string worker);

/// The largest --timeout: seconds beyond it overflow the clocks.
constexpr int64_t kMaxTimeoutSeconds = 1000000000;

struct LaunchOptions {
  std::string inputFile;
  /// Entry function; empty: the module's only public function.
  std::string entry;
  int64_t ranks = 4;
  /// Seed of the random inputs; none: a fresh one, printed.
  std::optional<uint64_t> seed;
  /// What the outputs are checked with: every element within
  /// atol + rtol * |reference| (dtensor/Support/OutputCheck.h).
  CheckTolerances tolerances;
  /// Timed calls of the sharded program (after one warm-up call).
  int64_t repeat = 0;
  /// Argument index -> .npy file to use instead of random data.
  std::map<int64_t, std::string> inputs;
  /// Seconds before the rank job is killed.
  int64_t timeoutSeconds = 120;
  /// Target as <backend>[:<hardware>]; empty: the module's own
  /// dtensor.target (or the default target).
  std::string target;
  /// Scheduling passes applied to the per-rank program before it is
  /// lowered, comma-separated as dtensor-overlap's `passes` option takes
  /// them ("default" for the default list); empty: none.
  std::string overlap;
  /// Fuse all_gather + matmul and matmul + reduce_scatter in the per-rank
  /// program (dtensor-fuse-collective-matmul with force=true, before the
  /// scheduling passes); the fused ops run as ring pipelines.
  bool fuse = false;
  /// Split every matmul + all_reduce of the per-rank program into this many
  /// row chunks (dtensor-split-matmul-all-reduce with force=true, after
  /// fusion and before the scheduling passes); 0: no split, 1 is invalid.
  int64_t splitAllReduce = 0;
  std::string mpirun = "mpirun";
  /// GPU targets: every rank on GPU 0 (dtensor-launch --single-gpu, NCCL
  /// over loopback; for testing numerics on a machine with one GPU).
  bool singleGpu = false;
  /// Starts the ranks; none: mpirun (`mpirun`) running this executable.
  RankLauncher *launcher = nullptr;
  /// Work directory for the compiled modules, inputs and outputs; empty: a
  /// fresh temporary one, removed afterwards unless keepWorkDir.
  std::string workDir;
  bool keepWorkDir = false;
};

/// Why `options` cannot be run (a negative, infinite or NaN tolerance, a
/// negative repeat count, a timeout outside [1, kMaxTimeoutSeconds], fewer
/// than one rank, a negative input index); empty if they can.
std::string validateOptions(const LaunchOptions &options);

/// Compiles, runs and checks; prints a report to `os`. Returns the process
/// exit code: 0 all outputs within tolerance, 1 a mismatch, 2 an error.
int launchAndCheck(const LaunchOptions &options, llvm::raw_ostream &os);

/// The rank side: runs inside mpirun on every process, reading what
/// launchAndCheck wrote to `workDir`. Returns the exit code.
int runWorker(llvm::StringRef workDir, int *argc, char ***argv);

} // namespace mlir::dtensor

#endif // DTENSOR_LAUNCHER_LAUNCHER_H
