//===- ArtifactLauncher.h - run compiled artifacts on N ranks ---*- C++ -*-===//
//
// What dtensor-launch does, with no MLIR or LLVM library at run time (LLVM's
// Support library is linked in statically): load an artifact that
// dtensor-compile wrote (dtensor/Compiler/Artifact.h), start or join the
// ranks, feed every rank its part of the global inputs, call the entry on
// buffers in the target's memory (the GPU's for CUDA), reassemble the
// outputs and, given the unsharded reference artifact, compare them with it
// (dtensor/Support/OutputCheck.h).
//
// Ranks:
//   - nproc > 0 and this process not started as a rank: start the ranks.
//     For a CUDA artifact, nproc processes of this executable with the
//     dtensor bootstrap environment (DTENSOR_RANK, DTENSOR_WORLD_SIZE,
//     DTENSOR_LOCAL_RANK, DTENSOR_MASTER_ADDR/PORT; one GPU per rank, or all
//     on GPU 0 with singleGpu); a rank that fails gets the others killed
//     after a grace period, and the report names it. For a CPU artifact,
//     mpirun -n nproc.
//   - otherwise: be one rank of whatever started this process (dtensor-launch
//     itself, torchrun, mpirun or srun, as the runtime's bootstrap reads
//     them), or the only rank.
// The ranks share a work directory (on one host, or a shared file system):
// rank 0 writes the global inputs there (in<i>.npy), every rank its outputs
// (out<i>.rank<r>.npy); rank 0 then reassembles them (out<i>.npy), runs the
// reference (ref<i>.npy), compares and reports.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LAUNCHER_ARTIFACTLAUNCHER_H
#define DTENSOR_LAUNCHER_ARTIFACTLAUNCHER_H

#include "dtensor/Support/OutputCheck.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dtensor {

struct ArtifactLaunchOptions {
  /// The artifact to run (sharded or unsharded).
  std::string artifact;
  /// The unsharded reference artifact to compare with; empty: no check.
  std::string reference;
  /// Ranks to start; 0: join the launcher that started this process.
  int64_t nproc = 0;
  /// Start every rank on GPU 0 (NCCL over loopback: for tests only).
  bool singleGpu = false;
  /// Seed of the random inputs; none: a fresh one, printed.
  std::optional<uint64_t> seed;
  /// What the outputs are checked with: every element within
  /// atol + rtol * |reference| (dtensor/Support/OutputCheck.h).
  CheckTolerances tolerances;
  /// Argument index -> .npy file to use instead of random data.
  std::map<int64_t, std::string> inputs;
  /// Shared by the ranks; empty: a fresh temporary one (removed afterwards
  /// unless keepWorkDir), which needs this process to start the ranks or a
  /// world of one.
  std::string workDir;
  bool keepWorkDir = false;
  /// Where rank 0 writes the reassembled outputs (out<i>.npy); empty: none.
  std::string outputDir;
  /// CUDA artifacts: after one direct call (plans, autotuning, NCCL
  /// connections), capture the whole program, collectives included, as one
  /// CUDA graph, replay it twice and check the second replay's outputs.
  bool cudaGraph = false;
  /// Seconds before started ranks are killed.
  int64_t timeoutSeconds = 300;
  std::string mpirun = "mpirun";
};

/// Why `options` cannot be run; empty if they can.
std::string validateArtifactLaunchOptions(const ArtifactLaunchOptions &options);

/// Runs the artifact as described above, reporting to `os` (errors to
/// stderr). `self` is this executable, started again for each rank.
/// Returns the exit code: 0 all outputs within tolerance (or no reference),
/// 1 a mismatch, 2 an error.
int launchArtifact(const ArtifactLaunchOptions &options,
                   const std::string &self, int *argc, char ***argv,
                   llvm::raw_ostream &os);

} // namespace mlir::dtensor

#endif // DTENSOR_LAUNCHER_ARTIFACTLAUNCHER_H
