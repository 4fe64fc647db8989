//===- LoadedArtifact.cpp - an artifact loaded with its manifest ----------===//
//
// An artifact of dtensor-compile is a shared library: dlopen it, find its
// entries (dtensor_artifact_*) and its runtime's functions (dtensor_rt_*),
// and read its manifest, in this process or, to look at it without running
// its constructors here, in a child process.
//
//===----------------------------------------------------------------------===//

#include "ArtifactLauncherInternal.h"

#include "dtensor/Support/ArtifactManifest.h"
#include "dtensor/Support/Errors.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir::dtensor;
using namespace mlir::dtensor::launcher;

namespace {

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

} // namespace

llvm::Expected<Artifact> launcher::loadArtifact(const std::string &path) {
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

std::string launcher::checkRunnable(const ArtifactLaunchOptions &options,
                                    const Artifact &artifact) {
  if (options.cudaGraph && artifact.backend != "cuda")
    return "--cuda-graph needs a CUDA artifact; '" + options.artifact +
           "' is for the " + artifact.backend + " target";
  return options.tolerances.validateOutputs(artifact.results.size(),
                                            artifact.entry);
}

llvm::Expected<Artifact> launcher::peekArtifact(const std::string &path) {
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

std::string
launcher::describe(const std::pair<ElementType, std::vector<int64_t>> &t) {
  return describeTensorType(t.first, t.second);
}

llvm::Error launcher::checkReference(const Artifact &artifact,
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
