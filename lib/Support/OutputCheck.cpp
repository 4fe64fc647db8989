//===- OutputCheck.cpp - reassemble and compare rank outputs --------------===//

#include "dtensor/Support/OutputCheck.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir::dtensor;

double mlir::dtensor::relativeError(const HostTensor &got,
                                    const HostTensor &want) {
  double maxDiff = 0, maxRef = 0;
  for (int64_t k = 0, n = want.getNumElements(); k < n; ++k) {
    maxDiff = std::max(maxDiff, std::fabs(got.get(k) - want.get(k)));
    maxRef = std::max(maxRef, std::fabs(want.get(k)));
  }
  return maxDiff / std::max(maxRef, 1e-30);
}

static std::string joinRanks(const std::vector<int64_t> &ranks) {
  std::string text;
  for (int64_t rank : ranks)
    text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

llvm::Expected<bool> mlir::dtensor::checkOutputs(
    const EntryLayouts &layouts, const std::vector<bool> &undefined,
    const std::vector<HostTensor> *expected, double tolerance,
    LocalOutputReader read, llvm::raw_ostream &os,
    std::vector<HostTensor> *globals) {
  auto makeError = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  bool allGood = true;
  for (auto [i, spec] : llvm::enumerate(layouts.results)) {
    if (i < undefined.size() && undefined[i]) {
      os << "  output #" << i << " " << layouts.describe(spec)
         << ": undefined (a tensor.empty), not compared\n";
      if (globals)
        globals->emplace_back();
      continue;
    }
    const HostMesh &mesh = layouts.getMesh(spec);
    std::vector<HostTensor> locals;
    for (int64_t position = 0; position < mesh.size(); ++position) {
      int64_t rank = mesh.rankAt(position);
      llvm::Expected<HostTensor> local = read(i, rank);
      if (!local)
        return makeError("rank " + llvm::Twine(rank) + " left no output #" +
                         llvm::Twine(i) + ": " +
                         llvm::toString(local.takeError()));
      // .npy has no bf16: ranks write bf16 outputs as f32 (writeNpy).
      if (spec.type == ElementType::BF16 && local->type == ElementType::F32)
        *local = castHostTensor(*local, ElementType::BF16);
      locals.push_back(std::move(*local));
    }
    HostReassembly global =
        reassemble(locals, spec.type, spec.shape, spec.layout, mesh);
    if (!global.error.empty())
      return makeError("output #" + llvm::Twine(i) + ": " + global.error);
    if (globals)
      globals->push_back(global.replicas.front().value);
    if (!expected) {
      os << "  output #" << i << " " << layouts.describe(spec)
         << ": reassembled from " << locals.size() << " rank"
         << (locals.size() == 1 ? "" : "s") << "\n";
      continue;
    }
    // Every copy is checked; the report gives the worst.
    double worst = 0;
    std::vector<std::vector<int64_t>> bad;
    for (const HostReplica &replica : global.replicas) {
      double relative = relativeError(replica.value, (*expected)[i]);
      bool good = !std::isnan(relative) && relative <= tolerance;
      if (!good)
        bad.push_back(replica.ranks);
      if (!std::isnan(worst) && (std::isnan(relative) || relative > worst))
        worst = relative;
    }
    allGood &= bad.empty();
    os << llvm::format("  output #%zu %s: max relative error %.3e "
                       "(tolerance %.1e) %s",
                       i, layouts.describe(spec).c_str(), worst, tolerance,
                       bad.empty() ? "ok" : "MISMATCH");
    if (!bad.empty() && global.replicas.size() > 1) {
      os << " in " << bad.size() << " of " << global.replicas.size()
         << " copies: ";
      for (auto [k, ranks] : llvm::enumerate(bad))
        os << (k ? "; " : "") << "ranks " << joinRanks(ranks);
    }
    os << "\n";
  }
  return allGood;
}
