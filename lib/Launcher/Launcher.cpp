//===- Launcher.cpp - run compiled programs on N ranks and check them -----===//

#include "dtensor/Launcher/Launcher.h"

#include "DTensor/DTensor.h"
#include "dtensor/Compiler/Session.h"
#include "dtensor/Runtime/Runtime.h"
#include "dtensor/Sharding/Layout.h"
#include "dtensor/Support/ChunkMath.h"
#include "dtensor/Support/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <limits>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace mlir;
using namespace mlir::dtensor;
namespace json = llvm::json;

namespace {

//===----------------------------------------------------------------------===//
// What driver and workers share: the manifest
//===----------------------------------------------------------------------===//

struct Placement {
  PlacementKind kind;
  int64_t dim = 0;
  ReduceKind reduce = ReduceKind::Sum;
};

struct TensorSpec {
  ElementType type = ElementType::F32;
  SmallVector<int64_t> shape;
  int64_t mesh = 0;
  std::vector<Placement> placements;
};

struct MeshSpec {
  std::string name;
  SmallVector<int64_t> shape;
  SmallVector<int64_t> devices;
  int64_t size() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
  /// Coordinates of world rank `rank`, or none if it is not in the mesh.
  std::optional<SmallVector<int64_t>> coordsOf(int64_t rank) const {
    int64_t position = rank;
    if (!devices.empty()) {
      auto it = llvm::find(devices, rank);
      if (it == devices.end())
        return std::nullopt;
      position = it - devices.begin();
    }
    if (position >= size())
      return std::nullopt;
    SmallVector<int64_t> coords(shape.size());
    for (int64_t d = shape.size() - 1; d >= 0; --d) {
      coords[d] = position % shape[d];
      position /= shape[d];
    }
    return coords;
  }
};

struct Manifest {
  std::string entry;
  int64_t repeat = 0;
  std::vector<MeshSpec> meshes;
  std::vector<TensorSpec> args, results;
};

json::Value toJSON(const TensorSpec &spec) {
  json::Array placements;
  for (const Placement &p : spec.placements)
    placements.push_back(
        json::Object{{"kind", static_cast<int64_t>(p.kind)},
                     {"dim", p.dim},
                     {"reduce", static_cast<int64_t>(p.reduce)}});
  return json::Object{{"type", static_cast<int64_t>(spec.type)},
                      {"shape", json::Array(spec.shape)},
                      {"mesh", spec.mesh},
                      {"placements", std::move(placements)}};
}

std::optional<TensorSpec> tensorSpecFromJSON(const json::Value &value) {
  const json::Object *object = value.getAsObject();
  if (!object)
    return std::nullopt;
  TensorSpec spec;
  spec.type = static_cast<ElementType>(object->getInteger("type").value_or(0));
  spec.mesh = object->getInteger("mesh").value_or(0);
  if (const json::Array *shape = object->getArray("shape"))
    for (const json::Value &s : *shape)
      spec.shape.push_back(s.getAsInteger().value_or(0));
  if (const json::Array *placements = object->getArray("placements"))
    for (const json::Value &p : *placements) {
      const json::Object *po = p.getAsObject();
      if (!po)
        return std::nullopt;
      spec.placements.push_back(
          {static_cast<PlacementKind>(po->getInteger("kind").value_or(1)),
           po->getInteger("dim").value_or(0),
           static_cast<ReduceKind>(po->getInteger("reduce").value_or(0))});
    }
  return spec;
}

llvm::Error writeManifest(llvm::StringRef path, const Manifest &manifest) {
  json::Array meshes, args, results;
  for (const MeshSpec &mesh : manifest.meshes)
    meshes.push_back(json::Object{{"name", mesh.name},
                                  {"shape", json::Array(mesh.shape)},
                                  {"devices", json::Array(mesh.devices)}});
  for (const TensorSpec &spec : manifest.args)
    args.push_back(toJSON(spec));
  for (const TensorSpec &spec : manifest.results)
    results.push_back(toJSON(spec));
  json::Object root{{"entry", manifest.entry},
                    {"repeat", manifest.repeat},
                    {"meshes", std::move(meshes)},
                    {"args", std::move(args)},
                    {"results", std::move(results)}};
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::createStringError(ec, "cannot write " + path);
  os << json::Value(std::move(root));
  return llvm::Error::success();
}

llvm::Expected<Manifest> readManifest(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read " + path);
  auto value = json::parse((*buffer)->getBuffer());
  if (!value)
    return value.takeError();
  const json::Object *root = value->getAsObject();
  auto bad = [&] {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "malformed manifest " + path);
  };
  if (!root)
    return bad();
  Manifest manifest;
  manifest.entry = root->getString("entry").value_or("").str();
  manifest.repeat = root->getInteger("repeat").value_or(0);
  if (const json::Array *meshes = root->getArray("meshes"))
    for (const json::Value &m : *meshes) {
      const json::Object *mo = m.getAsObject();
      if (!mo)
        return bad();
      MeshSpec mesh;
      mesh.name = mo->getString("name").value_or("").str();
      for (const json::Value &s : *mo->getArray("shape"))
        mesh.shape.push_back(s.getAsInteger().value_or(1));
      for (const json::Value &s : *mo->getArray("devices"))
        mesh.devices.push_back(s.getAsInteger().value_or(0));
      manifest.meshes.push_back(mesh);
    }
  for (auto [key, list] : {std::pair{"args", &manifest.args},
                           std::pair{"results", &manifest.results}}) {
    if (const json::Array *specs = root->getArray(key))
      for (const json::Value &s : *specs) {
        std::optional<TensorSpec> spec = tensorSpecFromJSON(s);
        if (!spec)
          return bad();
        list->push_back(*spec);
      }
  }
  return manifest;
}

//===----------------------------------------------------------------------===//
// Blocks of global tensors
//===----------------------------------------------------------------------===//

/// Offsets and sizes of the block a process at `coords` holds.
void blockOf(const TensorSpec &spec, const MeshSpec &mesh,
             ArrayRef<int64_t> coords, SmallVectorImpl<int64_t> &offsets,
             SmallVectorImpl<int64_t> &sizes) {
  offsets.assign(spec.shape.size(), 0);
  sizes.assign(spec.shape.begin(), spec.shape.end());
  for (size_t dim = 0; dim < spec.shape.size(); ++dim) {
    SmallVector<int64_t> splits, indices;
    for (auto [axis, p] : llvm::enumerate(spec.placements))
      if (p.kind == PlacementKind::Shard &&
          p.dim == static_cast<int64_t>(dim)) {
        splits.push_back(mesh.shape[axis]);
        indices.push_back(coords[axis]);
      }
    Chunk chunk = nestedChunkOf(spec.shape[dim], splits, indices);
    offsets[dim] = chunk.offset;
    sizes[dim] = chunk.size;
  }
}

double identityOf(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Avg:
    return 0;
  case ReduceKind::Product:
    return 1;
  case ReduceKind::Min:
    return std::numeric_limits<double>::infinity();
  case ReduceKind::Max:
    return -std::numeric_limits<double>::infinity();
  }
  return 0;
}

/// The local input of the process at `coords`: its block; along Partial
/// axes only coordinate 0 holds the value, the others the identity (avg,
/// min and max keep the value everywhere).
HostTensor localInput(const HostTensor &global, const TensorSpec &spec,
                      const MeshSpec &mesh, ArrayRef<int64_t> coords) {
  SmallVector<int64_t> offsets, sizes;
  blockOf(spec, mesh, coords, offsets, sizes);
  HostTensor local = sliceHostTensor(global, offsets, sizes);
  for (auto [axis, p] : llvm::enumerate(spec.placements)) {
    if (p.kind != PlacementKind::Partial || coords[axis] == 0)
      continue;
    if (p.reduce == ReduceKind::Sum || p.reduce == ReduceKind::Product)
      for (int64_t i = 0, n = local.getNumElements(); i < n; ++i)
        local.set(i, identityOf(p.reduce));
  }
  return local;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

std::optional<ElementType> elementTypeOf(Type type) {
  if (type.isF32())
    return ElementType::F32;
  if (type.isF64())
    return ElementType::F64;
  if (type.isInteger(32))
    return ElementType::I32;
  if (type.isInteger(64))
    return ElementType::I64;
  return std::nullopt;
}

std::string describe(const TensorSpec &spec, const MeshSpec &mesh) {
  std::string text = "tensor<";
  for (int64_t s : spec.shape)
    text += std::to_string(s) + "x";
  text += getElementTypeName(spec.type).str() + "> on @" + mesh.name + " [";
  for (auto [i, p] : llvm::enumerate(spec.placements)) {
    if (i)
      text += ", ";
    if (p.kind == PlacementKind::Shard)
      text += "S(" + std::to_string(p.dim) + ")";
    else if (p.kind == PlacementKind::Replicate)
      text += "R";
    else
      text += ("P(" + stringifyReduceKind(p.reduce) + ")").str();
  }
  return text + "]";
}

/// Runs `argv` in its own process group; kills the group after `timeout`
/// seconds. Returns the exit code, or -1 on timeout, -2 if it cannot start.
int runWithTimeout(const std::vector<std::string> &argv, int64_t timeout) {
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0)
    return -2;
  if (pid == 0) {
    setpgid(0, 0);
    execvp(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  while (true) {
    int status;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGTERM);
      std::this_thread::sleep_for(std::chrono::seconds(2));
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// The layout spec of a partitioned function's argument or result.
std::optional<TensorSpec> specFromAttrs(DictionaryAttr attrs,
                                        const llvm::StringMap<int64_t> &ids) {
  if (!attrs)
    return std::nullopt;
  auto layout = attrs.getAs<LayoutAttr>(kLayoutAttrName);
  auto global = attrs.getAs<TypeAttr>(kGlobalTypeAttrName);
  if (!layout || !global)
    return std::nullopt;
  auto type = cast<RankedTensorType>(global.getValue());
  TensorSpec spec;
  std::optional<ElementType> element = elementTypeOf(type.getElementType());
  if (!element)
    return std::nullopt;
  spec.type = *element;
  spec.shape.assign(type.getShape().begin(), type.getShape().end());
  spec.mesh = ids.lookup(layout.getMesh().getValue());
  for (PlacementAttr p : layout.getPlacements())
    spec.placements.push_back({p.getKind(), p.getDim(), p.getReduce()});
  return spec;
}

/// Upper bound of random integer inputs: the rows of the embedding table an
/// argument indexes, else 16.
int64_t integerBound(func::FuncOp func, unsigned argIndex) {
  int64_t bound = 16;
  func.walk([&](tensor::GatherOp gather) {
    Value indices = gather.getIndices();
    while (auto annotate = indices.getDefiningOp<AnnotateOp>())
      indices = annotate.getInput();
    auto arg = dyn_cast<BlockArgument>(indices);
    if (arg && arg.getArgNumber() == argIndex)
      bound =
          std::min(bound == 16 ? gather.getSourceType().getDimSize(0) : bound,
                   gather.getSourceType().getDimSize(0));
  });
  return bound;
}

class Driver {
public:
  Driver(const LaunchOptions &options, llvm::raw_ostream &os)
      : options(options), os(os) {}
  int run();

private:
  int error(const llvm::Twine &message) {
    llvm::errs() << "dtensor-run: error: " << message << "\n";
    return 2;
  }
  std::string path(const llvm::Twine &name) {
    SmallString<256> p(workDir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }

  const LaunchOptions &options;
  llvm::raw_ostream &os;
  std::string workDir;
};

int Driver::run() {
  Session session;
  FailureOr<OwningOpRef<ModuleOp>> parsed =
      session.parseFile(options.inputFile);
  if (failed(parsed))
    return 2;
  ModuleOp original = **parsed;

  // The entry function.
  func::FuncOp entry;
  for (auto func : original.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (options.entry.empty() ? func.isPublic()
                              : func.getSymName() == options.entry) {
      if (entry && options.entry.empty())
        return error("several public functions; choose one with --entry");
      entry = func;
    }
  }
  if (!entry)
    return error(options.entry.empty() ? "no public function to run"
                                       : "no function @" + options.entry);
  std::string entryName = entry.getSymName().str();
  // Only the entry is called from the host.
  for (auto func : original.getOps<func::FuncOp>())
    if (!func.isExternal())
      func.setVisibility(func == entry ? SymbolTable::Visibility::Public
                                       : SymbolTable::Visibility::Private);

  Manifest manifest;
  manifest.entry = entryName;
  manifest.repeat = options.repeat;
  llvm::StringMap<int64_t> meshIds;
  for (auto mesh : original.getOps<MeshOp>()) {
    MeshSpec spec;
    spec.name = mesh.getSymName().str();
    spec.shape.assign(mesh.getShape().begin(), mesh.getShape().end());
    if (auto devices = mesh.getDevices())
      spec.devices.assign(devices->begin(), devices->end());
    meshIds[spec.name] = manifest.meshes.size();
    manifest.meshes.push_back(spec);
  }
  if (manifest.meshes.empty())
    return error("the program declares no dtensor.mesh");

  // Inputs (global), random or from files.
  std::random_device device;
  uint64_t seed =
      options.seed ? *options.seed : (uint64_t(device()) << 32) ^ device();
  std::mt19937_64 rng(seed);
  std::vector<HostTensor> inputs;
  for (auto [i, type] : llvm::enumerate(entry.getArgumentTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    std::optional<ElementType> element =
        tensor ? elementTypeOf(tensor.getElementType()) : std::nullopt;
    if (!tensor || !tensor.hasStaticShape() || !element)
      return error("argument #" + llvm::Twine(i) + " of @" + entryName +
                   " is not a static f32/f64/i32/i64 tensor");
    auto provided = options.inputs.find(i);
    if (provided != options.inputs.end()) {
      llvm::Expected<HostTensor> loaded = readNpy(provided->second);
      if (!loaded)
        return error("input #" + llvm::Twine(i) + ": " +
                     llvm::toString(loaded.takeError()));
      if (loaded->type != *element ||
          ArrayRef<int64_t>(loaded->shape) != tensor.getShape()) {
        std::string want, got;
        llvm::raw_string_ostream(want) << tensor;
        for (int64_t s : loaded->shape)
          got += std::to_string(s) + "x";
        return error("input #" + llvm::Twine(i) + " (" + provided->second +
                     ") holds " + got + getElementTypeName(loaded->type) +
                     ", the argument is " + want);
      }
      inputs.push_back(std::move(*loaded));
      continue;
    }
    HostTensor input(*element, tensor.getShape());
    if (*element == ElementType::F32 || *element == ElementType::F64) {
      std::uniform_real_distribution<double> dist(-1.0, 1.0);
      for (int64_t k = 0, n = input.getNumElements(); k < n; ++k)
        input.set(k, dist(rng));
    } else {
      std::uniform_int_distribution<int64_t> dist(0,
                                                  integerBound(entry, i) - 1);
      for (int64_t k = 0, n = input.getNumElements(); k < n; ++k)
        input.set(k, static_cast<double>(dist(rng)));
    }
    inputs.push_back(std::move(input));
  }

  // Work directory.
  if (!options.workDir.empty()) {
    workDir = options.workDir;
    if (std::error_code ec = llvm::sys::fs::create_directories(workDir))
      return error("cannot create " + workDir + ": " + ec.message());
  } else {
    SmallString<128> dir;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("dtensor-run", dir))
      return error("cannot create a work directory: " + ec.message());
    workDir = std::string(dir);
  }
  auto cleanup = llvm::make_scope_exit([&] {
    if (options.workDir.empty() && !options.keepWorkDir)
      llvm::sys::fs::remove_directories(workDir);
  });

  // The reference compiles with the same target but no scheduling.
  PipelineOptions compileOptions;
  compileOptions.target = options.target;
  compileOptions.overlap.passes.clear();

  // Sharded: per-rank program, layouts of the entry's arguments and
  // results, then fusion and scheduling, then LLVM.
  OwningOpRef<ModuleOp> sharded = original.clone();
  if (failed(session.lower(*sharded, Stage::PerRank, compileOptions)))
    return error("compiling the sharded program failed");
  auto perRank = sharded->lookupSymbol<func::FuncOp>(entryName);
  for (unsigned i = 0; i < perRank.getNumArguments(); ++i) {
    std::optional<TensorSpec> spec =
        specFromAttrs(perRank.getArgAttrDict(i), meshIds);
    if (!spec)
      return error("argument #" + llvm::Twine(i) + " has no layout");
    manifest.args.push_back(*spec);
  }
  for (unsigned i = 0; i < perRank.getNumResults(); ++i) {
    std::optional<TensorSpec> spec =
        specFromAttrs(perRank.getResultAttrDict(i), meshIds);
    if (!spec)
      return error("result #" + llvm::Twine(i) + " has no layout");
    manifest.results.push_back(*spec);
  }
  const MeshSpec &mesh =
      manifest.meshes[manifest.args.empty() ? 0 : manifest.args.front().mesh];
  if (mesh.size() != options.ranks)
    return error("mesh @" + mesh.name + " has " + llvm::Twine(mesh.size()) +
                 " processes; run with -n " + llvm::Twine(mesh.size()));
  // Comm-compute fusion (force: test shapes are too small to pay), forced
  // row chunks of matmul + all_reduce, scheduling passes.
  PipelineOptions scheduling = compileOptions;
  scheduling.fuse.enabled = scheduling.fuse.force = options.fuse;
  scheduling.splitAllReduce = options.splitAllReduce;
  llvm::SmallVector<StringRef> passes;
  StringRef(options.overlap).split(passes, ',', -1, /*KeepEmpty=*/false);
  for (StringRef pass : passes)
    scheduling.overlap.passes.push_back(pass.trim().str());
  auto countAllReduces = [&] {
    int64_t count = 0;
    perRank.walk([&](AllReduceOp) { ++count; });
    return count;
  };
  int64_t allReducesBefore = countAllReduces();
  if (failed(session.lower(*sharded, Stage::Scheduled, scheduling,
                           Stage::PerRank)))
    return error("fusing and scheduling the sharded program failed");
  int64_t numAllGatherMatmul = 0, numMatmulReduceScatter = 0, numSplit = 0;
  perRank.walk([&](Operation *op) {
    numAllGatherMatmul += isa<AllGatherMatmulOp>(op);
    numMatmulReduceScatter += isa<MatmulReduceScatterOp>(op);
  });
  if (options.splitAllReduce > 0)
    numSplit = (countAllReduces() - allReducesBefore) /
               (options.splitAllReduce - 1);
  if (failed(session.lower(*sharded, Stage::LLVM, compileOptions,
                           Stage::Scheduled)))
    return error("lowering the sharded program failed");
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(path("sharded.mlir"), ec);
    if (ec)
      return error("cannot write " + path("sharded.mlir"));
    sharded->print(out);
  }

  // Reference: the same program without placements, on one process.
  OwningOpRef<ModuleOp> reference = original.clone();
  Session::stripPlacements(*reference);
  if (failed(session.lower(*reference, Stage::LLVM, compileOptions)))
    return error("compiling the unsharded reference failed");
  FailureOr<std::unique_ptr<Executable>> referenceExe =
      session.compile(*reference);
  if (failed(referenceExe))
    return 2;
  SmallVector<const HostTensor *> args;
  for (const HostTensor &input : inputs)
    args.push_back(&input);
  llvm::Expected<std::vector<HostTensor>> expected =
      (*referenceExe)->invoke(entryName, args);
  if (!expected)
    return error("reference run: " + llvm::toString(expected.takeError()));

  for (auto [i, input] : llvm::enumerate(inputs))
    if (llvm::Error e = writeNpy(path("in" + llvm::Twine(i) + ".npy"), input))
      return error(llvm::toString(std::move(e)));
  if (llvm::Error e = writeManifest(path("manifest.json"), manifest))
    return error(llvm::toString(std::move(e)));

  os << "dtensor-run: " << options.inputFile << ", @" << entryName << " on "
     << options.ranks << " ranks (mesh @" << mesh.name << "), seed " << seed
     << "\n";
  if (options.fuse)
    os << "dtensor-run: fused " << numAllGatherMatmul << " all_gather_matmul, "
       << numMatmulReduceScatter << " matmul_reduce_scatter\n";
  if (options.splitAllReduce > 0)
    os << "dtensor-run: split " << numSplit << " matmul + all_reduce into "
       << options.splitAllReduce << " row chunks\n";
  os.flush();

  // The rank job.
  auto mpirun = llvm::sys::findProgramByName(options.mpirun);
  if (!mpirun || !llvm::sys::fs::can_execute(*mpirun))
    return error("'" + options.mpirun +
                 "' not found: install OpenMPI (scripts/setup.sh does) or "
                 "pass --mpirun");
  std::string self =
      llvm::sys::fs::getMainExecutable(nullptr, (void *)&launchAndCheck);
  std::vector<std::string> command = {*mpirun};
  if (getuid() == 0)
    command.push_back("--allow-run-as-root");
  for (const char *arg : {"--oversubscribe", "--bind-to", "none", "-n"})
    command.push_back(arg);
  command.push_back(std::to_string(options.ranks));
  command.push_back(self);
  command.push_back("--worker=" + workDir);
  int status = runWithTimeout(command, options.timeoutSeconds);
  if (status == -1)
    return error("the rank job did not finish within " +
                 llvm::Twine(options.timeoutSeconds) +
                 " s and was killed (raise --timeout if it is just slow)");
  if (status == -2)
    return error("cannot start " + *mpirun);
  if (status != 0)
    return error("the rank job failed with exit code " + llvm::Twine(status) +
                 " (see the rank's message above)");

  // Reassemble each output from the ranks' parts and compare.
  bool allGood = true;
  for (auto [i, spec] : llvm::enumerate(manifest.results)) {
    const MeshSpec &m = manifest.meshes[spec.mesh];
    HostTensor global(spec.type, spec.shape);
    std::optional<ReduceKind> partial;
    int64_t partialCount = 1;
    for (auto [axis, p] : llvm::enumerate(spec.placements))
      if (p.kind == PlacementKind::Partial) {
        partial = p.reduce;
        partialCount *= m.shape[axis];
      }
    for (int64_t k = 0, n = global.getNumElements(); k < n; ++k)
      global.set(k, partial ? identityOf(*partial) : 0);
    for (int64_t rank = 0; rank < options.ranks; ++rank) {
      std::optional<SmallVector<int64_t>> coords = m.coordsOf(rank);
      if (!coords)
        continue;
      bool replica = false;
      for (auto [axis, p] : llvm::enumerate(spec.placements))
        replica |= p.kind == PlacementKind::Replicate && (*coords)[axis] != 0;
      if (replica)
        continue;
      std::string file =
          path("out" + llvm::Twine(i) + ".rank" + llvm::Twine(rank) + ".npy");
      llvm::Expected<HostTensor> local = readNpy(file);
      if (!local)
        return error("rank " + llvm::Twine(rank) + " left no output #" +
                     llvm::Twine(i) + ": " + llvm::toString(local.takeError()));
      SmallVector<int64_t> offsets, sizes;
      blockOf(spec, m, *coords, offsets, sizes);
      if (ArrayRef<int64_t>(local->shape) != ArrayRef<int64_t>(sizes))
        return error("rank " + llvm::Twine(rank) + " returned output #" +
                     llvm::Twine(i) + " with a shape other than its block");
      forEachInBlock(spec.shape, offsets, sizes, [&](int64_t g, int64_t l) {
        double v = local->get(l);
        if (!partial) {
          global.set(g, v);
          return;
        }
        double acc = global.get(g);
        switch (*partial) {
        case ReduceKind::Sum:
        case ReduceKind::Avg:
          acc += v;
          break;
        case ReduceKind::Product:
          acc *= v;
          break;
        case ReduceKind::Min:
          acc = std::min(acc, v);
          break;
        case ReduceKind::Max:
          acc = std::max(acc, v);
          break;
        }
        global.set(g, acc);
      });
    }
    if (partial == ReduceKind::Avg)
      for (int64_t k = 0, n = global.getNumElements(); k < n; ++k)
        global.set(k, global.get(k) / partialCount);

    const HostTensor &want = (*expected)[i];
    double maxDiff = 0, maxRef = 0;
    for (int64_t k = 0, n = want.getNumElements(); k < n; ++k) {
      maxDiff = std::max(maxDiff, std::fabs(global.get(k) - want.get(k)));
      maxRef = std::max(maxRef, std::fabs(want.get(k)));
    }
    double relative = maxDiff / std::max(maxRef, 1e-30);
    bool good = !std::isnan(relative) && relative <= options.tolerance;
    allGood &= good;
    os << llvm::format("  output #%zu %s: max relative error %.3e "
                       "(tolerance %.1e) %s\n",
                       i, describe(spec, m).c_str(), relative,
                       options.tolerance, good ? "ok" : "MISMATCH");
  }
  if (options.repeat > 0) {
    auto buffer = llvm::MemoryBuffer::getFile(path("timing.json"));
    if (buffer) {
      if (auto value = json::parse((*buffer)->getBuffer()))
        if (auto *object = value->getAsObject())
          os << llvm::format("  time per call (rank 0): median %.3f ms, "
                             "min %.3f ms over %lld calls\n",
                             object->getNumber("median_ms").value_or(0),
                             object->getNumber("min_ms").value_or(0),
                             (long long)options.repeat);
    }
  }
  os << (allGood ? "PASS" : "FAIL") << "\n";
  return allGood ? 0 : 1;
}

} // namespace

int mlir::dtensor::launchAndCheck(const LaunchOptions &options,
                                  llvm::raw_ostream &os) {
  return Driver(options, os).run();
}

//===----------------------------------------------------------------------===//
// Worker
//===----------------------------------------------------------------------===//

int mlir::dtensor::runWorker(llvm::StringRef workDir, int *argc, char ***argv) {
  if (dtensor_rt_init(argc, argv) != 0)
    return 2;
  int64_t rank = dtensor_rt_world_rank();
  auto fail = [&](const llvm::Twine &message) {
    llvm::errs() << "dtensor-run: rank " << rank << ": " << message << "\n";
    llvm::errs().flush();
    std::_Exit(3);
    return 3;
  };
  auto path = [&](const llvm::Twine &name) {
    SmallString<256> p(workDir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  llvm::Expected<Manifest> manifest = readManifest(path("manifest.json"));
  if (!manifest)
    return fail(llvm::toString(manifest.takeError()));
  // Every process registers every mesh, in order (registration is
  // collective); meshes larger than the job cannot be used by the entry
  // (the driver checked) and are skipped everywhere alike.
  for (auto [id, mesh] : llvm::enumerate(manifest->meshes))
    if (mesh.size() <= dtensor_rt_world_size() &&
        dtensor_rt_register_mesh(id, mesh.shape.size(), mesh.shape.data(),
                                 mesh.devices.empty() ? nullptr
                                                      : mesh.devices.data()))
      return fail("cannot register mesh @" + mesh.name);

  Session session;
  session.setDiagnosticCallback([&](const dtensor::Diagnostic &d) {
    llvm::errs() << "dtensor-run: rank " << rank << ": " << d.location
                 << (d.location.empty() ? "" : ": ") << d.message << "\n";
  });
  FailureOr<OwningOpRef<ModuleOp>> module =
      session.parseFile(path("sharded.mlir"));
  if (failed(module))
    return fail("cannot read the compiled program");
  FailureOr<std::unique_ptr<Executable>> exe = session.compile(**module);
  if (failed(exe))
    return fail("JIT compilation failed");

  std::vector<HostTensor> locals;
  for (auto [i, spec] : llvm::enumerate(manifest->args)) {
    llvm::Expected<HostTensor> global =
        readNpy(path("in" + llvm::Twine(i) + ".npy"));
    if (!global)
      return fail(llvm::toString(global.takeError()));
    const MeshSpec &mesh = manifest->meshes[spec.mesh];
    std::optional<SmallVector<int64_t>> coords = mesh.coordsOf(rank);
    if (!coords)
      return fail("not a member of mesh @" + mesh.name);
    locals.push_back(localInput(*global, spec, mesh, *coords));
  }
  SmallVector<const HostTensor *> args;
  for (const HostTensor &local : locals)
    args.push_back(&local);

  llvm::Expected<std::vector<HostTensor>> outputs =
      (*exe)->invoke(manifest->entry, args);
  if (!outputs)
    return fail(llvm::toString(outputs.takeError()));
  std::vector<double> times;
  for (int64_t k = 0; k < manifest->repeat; ++k) {
    dtensor_rt_barrier();
    auto start = std::chrono::steady_clock::now();
    llvm::Expected<std::vector<HostTensor>> again =
        (*exe)->invoke(manifest->entry, args);
    if (!again)
      return fail(llvm::toString(again.takeError()));
    dtensor_rt_barrier();
    times.push_back(std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  for (auto [i, output] : llvm::enumerate(*outputs))
    if (llvm::Error e = writeNpy(
            path("out" + llvm::Twine(i) + ".rank" + llvm::Twine(rank) + ".npy"),
            output))
      return fail(llvm::toString(std::move(e)));
  if (rank == 0 && !times.empty()) {
    std::sort(times.begin(), times.end());
    std::error_code ec;
    llvm::raw_fd_ostream os(path("timing.json"), ec);
    if (!ec)
      os << json::Value(json::Object{{"median_ms", times[times.size() / 2]},
                                     {"min_ms", times.front()}});
  }
  dtensor_rt_finalize();
  return 0;
}
