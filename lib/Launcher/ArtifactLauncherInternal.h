//===- ArtifactLauncherInternal.h - pieces of dtensor-launch ----*- C++ -*-===//
//
// What launchArtifact (ArtifactLauncher.cpp) is made of, private to
// lib/Launcher:
//
// - a loaded artifact (LoadedArtifact.cpp): the shared library dlopen'ed,
//   its entries and its runtime's functions found, its manifest read
//   (dtensor/Support/ArtifactManifest.h), in this process or a child;
// - the local job (LocalJob.cpp): the ranks started on this host (mpirun
//   for a CPU artifact, this executable N times with the dtensor bootstrap
//   environment otherwise), their shared work directory, the timeout and
//   the failing rank's report;
// - one rank (RankWorker.cpp): inputs drawn or read, the entry called on
//   this rank's shards, outputs written, and on rank 0 the comparison with
//   the reference.
//
// Like the rest of dtensor-launch, none of it links MLIR or libLLVM.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_LAUNCHER_ARTIFACTLAUNCHERINTERNAL_H
#define DTENSOR_LIB_LAUNCHER_ARTIFACTLAUNCHERINTERNAL_H

#include "dtensor/Launcher/ArtifactLauncher.h"

#include "dtensor/Support/EntryLayouts.h"
#include "dtensor/Support/HostTensor.h"
#include "dtensor/Support/MemRefCall.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlir::dtensor::launcher {

/// Prints "dtensor-launch: error: <message>" to stderr and returns 2, the
/// exit code of an error (ArtifactLauncher.cpp).
int launchError(const llvm::Twine &message);

//===----------------------------------------------------------------------===//
// A loaded artifact (LoadedArtifact.cpp)
//===----------------------------------------------------------------------===//

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

/// The artifact at `path` loaded into this process (which runs its
/// constructors: a CUDA artifact's load its kernels, on a GPU) with its
/// entries, its runtime's functions and its manifest.
llvm::Expected<Artifact> loadArtifact(const std::string &path);

/// Why `artifact` cannot run as `options` ask beyond what
/// validateArtifactLaunchOptions sees (--cuda-graph for a CPU artifact, a
/// tolerance for an output it does not have); empty if it can.
std::string checkRunnable(const ArtifactLaunchOptions &options,
                          const Artifact &artifact);

/// The manifest of the artifact at `path`, read in a child process: loading
/// an artifact runs its constructors, which load its GPU kernels, and a
/// process that only starts the ranks must neither need a GPU nor die of
/// a missing one with the wrong exit code.
llvm::Expected<Artifact> peekArtifact(const std::string &path);

/// `t` as a tensor type ("tensor<8x16xf32>").
std::string describe(const std::pair<ElementType, std::vector<int64_t>> &t);

/// Why `reference` cannot serve as the reference of `artifact`.
llvm::Error checkReference(const Artifact &artifact, const Artifact &reference);

//===----------------------------------------------------------------------===//
// The local job (LocalJob.cpp)
//===----------------------------------------------------------------------===//

/// `given` (created if missing), or a fresh temporary directory when it is
/// empty.
llvm::Expected<std::string> createWorkDir(const std::string &given);

/// Starts `options.nproc` ranks of `self` on this host for `artifact` (as
/// peekArtifact read it) in a shared work directory and waits for them;
/// reports to `os` and stderr. Returns the exit code of launchArtifact.
int runLocalJob(const ArtifactLaunchOptions &options, const std::string &self,
                const Artifact &artifact, llvm::raw_ostream &os);

//===----------------------------------------------------------------------===//
// One rank (RankWorker.cpp)
//===----------------------------------------------------------------------===//

/// Runs this process as one rank of the job that started it (or as the
/// only rank), reporting to `os` on rank 0. Returns the exit code of
/// launchArtifact.
int runRank(const ArtifactLaunchOptions &options, int *argc, char ***argv,
            llvm::raw_ostream &os);

} // namespace mlir::dtensor::launcher

#endif // DTENSOR_LIB_LAUNCHER_ARTIFACTLAUNCHERINTERNAL_H
