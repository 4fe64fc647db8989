//===- ArtifactLauncher.cpp - run compiled artifacts on N ranks -----------===//
//
// The entry of dtensor-launch: join a job as one of its ranks
// (RankWorker.cpp), or look at the artifact and start the ranks on this
// host (LocalJob.cpp).
//
//===----------------------------------------------------------------------===//

#include "dtensor/Launcher/ArtifactLauncher.h"

#include "ArtifactLauncherInternal.h"

using namespace mlir::dtensor;
using namespace mlir::dtensor::launcher;

int launcher::launchError(const llvm::Twine &message) {
  llvm::errs() << "dtensor-launch: error: " << message << "\n";
  return 2;
}

std::string
mlir::dtensor::validateArtifactLaunchOptions(const ArtifactLaunchOptions &o) {
  if (o.artifact.empty())
    return "no artifact given";
  if (std::string why = o.tolerances.validate(); !why.empty())
    return why;
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
  if (std::string why = validateArtifactLaunchOptions(options); !why.empty())
    return launchError(why);
  if (options.nproc == 0)
    return runRank(options, argc, argv, os);

  // Start the ranks: look at the artifact first (in a child process) for
  // its backend and mesh.
  llvm::Expected<Artifact> artifact = peekArtifact(options.artifact);
  if (!artifact)
    return launchError(llvm::toString(artifact.takeError()));
  if (std::string why = checkRunnable(options, *artifact); !why.empty())
    return launchError(why);
  if (const HostMesh *mesh = artifact->getEntryMesh())
    if (mesh->size() != options.nproc)
      return launchError(
          "mesh @" + mesh->name + " has " + llvm::Twine(mesh->size()) +
          " processes; run with --nproc " + llvm::Twine(mesh->size()));
  if (artifact->unsharded && options.nproc != 1)
    return launchError("'" + options.artifact +
                       "' is unsharded: run it with --nproc 1");
  return runLocalJob(options, self, *artifact, os);
}
