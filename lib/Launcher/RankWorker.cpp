//===- RankWorker.cpp - one rank of an artifact's job ---------------------===//
//
// What one rank does: load the artifact and start its runtime, share the
// work directory, take rank 0's global inputs (drawn from the seed or read
// from .npy files), call the entry on this rank's shards (once, or as a
// CUDA graph), write its outputs; rank 0 then reassembles them, compares
// them with the reference artifact's and writes the verdict.
//
//===----------------------------------------------------------------------===//

#include "ArtifactLauncherInternal.h"

#include "dtensor/Support/Errors.h"
#include "dtensor/Support/HostLayout.h"
#include "dtensor/Support/OutputCheck.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"

#include <cstdio>
#include <optional>
#include <random>

using namespace mlir::dtensor;
using namespace mlir::dtensor::launcher;

namespace {

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
    // Kept in the work directory beside the ranks' outputs.
    for (auto [i, output] : llvm::enumerate(expected))
      if (i >= artifact.undefinedResults.size() ||
          !artifact.undefinedResults[i])
        if (llvm::Error e =
                writeNpy(path("ref" + llvm::Twine(i) + ".npy"), output))
          return error(std::move(e));
  }
  std::vector<HostTensor> globals;
  auto read = [&](size_t i, int64_t r) {
    return readNpy(
        path("out" + llvm::Twine(i) + ".rank" + llvm::Twine(r) + ".npy"));
  };
  llvm::Expected<bool> good = true;
  if (artifact.unsharded) {
    // One rank computed everything.
    if (reference)
      printCheckCriterion(os);
    for (size_t i = 0; i < artifact.results.size(); ++i) {
      llvm::Expected<HostTensor> output = read(i, 0);
      if (!output)
        return error(output.takeError());
      const auto &[type, shape] = artifact.results[i];
      HostTensor value = castHostTensor(*output, type);
      if (reference) {
        Comparison comparison = compareTensors(
            value, expected[i], options.tolerances.resolve(i, type));
        *good = *good && comparison.good;
        printComparison(os, i, describe(artifact.results[i]), shape,
                        comparison);
        os << "\n";
      }
      globals.push_back(std::move(value));
    }
  } else {
    good = checkOutputs(artifact.layouts, artifact.undefinedResults,
                        reference ? &expected : nullptr, options.tolerances,
                        read, os, &globals);
    if (!good)
      return error(good.takeError());
  }
  // The reassembled outputs in the work directory, beside ref<i>.npy.
  for (auto [i, global] : llvm::enumerate(globals))
    if (!global.data.empty() || global.getNumElements() == 0)
      if (llvm::Error e =
              writeNpy(path("out" + llvm::Twine(i) + ".npy"), global))
        return error(std::move(e));
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

int launcher::runRank(const ArtifactLaunchOptions &options, int *argc,
                      char ***argv, llvm::raw_ostream &os) {
  return Rank(options, os).run(argc, argv);
}
