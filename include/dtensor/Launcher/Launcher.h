//===- Launcher.h - run compiled programs on N ranks and check them -*- C++ -*-===//
//
// The launcher behind dtensor-run. It compiles a global-view program twice
// (sharded per rank, and unsharded as the reference), launches the sharded
// one on N processes through mpirun, feeds both the same global inputs, and
// compares every output of the sharded run, reassembled from the ranks'
// local parts by the output's layout, with the reference.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LAUNCHER_LAUNCHER_H
#define DTENSOR_LAUNCHER_LAUNCHER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dtensor {

struct LaunchOptions {
  std::string inputFile;
  /// Entry function; empty: the module's only public function.
  std::string entry;
  int64_t ranks = 4;
  /// Seed of the random inputs; none: a fresh one, printed.
  std::optional<uint64_t> seed;
  /// Maximum relative error per output: max|a - b| / max(max|b|, 1e-30).
  double tolerance = 1e-4;
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
  /// Work directory for the compiled modules, inputs and outputs; empty: a
  /// fresh temporary one, removed afterwards unless keepWorkDir.
  std::string workDir;
  bool keepWorkDir = false;
};

/// Compiles, runs and checks; prints a report to `os`. Returns the process
/// exit code: 0 all outputs within tolerance, 1 a mismatch, 2 an error.
int launchAndCheck(const LaunchOptions &options, llvm::raw_ostream &os);

/// The rank side: runs inside mpirun on every process, reading what
/// launchAndCheck wrote to `workDir`. Returns the exit code.
int runWorker(llvm::StringRef workDir, int *argc, char ***argv);

} // namespace mlir::dtensor

#endif // DTENSOR_LAUNCHER_LAUNCHER_H
