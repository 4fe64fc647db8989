//===- CostFiles.cpp - hardware descriptions and per-op cost tables -------===//
//
// Readers for the JSON files of CostFiles.h. Every error names the source
// (file path or "hardware description"), the key path inside the document
// (`nccl.base_latency_us.ring.ll`) and what was expected, so that a typo in
// a description never silently leaves a preset value in place.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Analysis/CostFiles.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir::dtensor;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

static Error makeError(StringRef source, const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (source + ": " + message).str());
}

/// A short rendering of a JSON value for messages.
static std::string render(const json::Value &value) {
  std::string text = llvm::formatv("{0}", value).str();
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return text;
}

//===----------------------------------------------------------------------===//
// Hardware descriptions
//===----------------------------------------------------------------------===//

namespace {
/// What a number must be: > 0, >= 0, or a fraction in (0, 1].
enum class Bound { Positive, NonNegative, Fraction };

/// Reads the fields of one JSON object, remembering the key path.
class DescriptionReader {
public:
  explicit DescriptionReader(StringRef source) : source(source) {}

  Error read(const json::Object &root, HardwareModel &hw);

private:
  Error checkKeys(const json::Object &object, StringRef path,
                  llvm::ArrayRef<StringRef> known);
  Error readNumber(const json::Value &value, const Twine &path, Bound bound,
                   double &out);
  Error readCount(const json::Value &value, const Twine &path, int64_t &out);
  Error readAlgoProtoTable(const json::Value &value, StringRef path,
                           CollectiveTuning::AlgoProtoTable &table);
  Error readScaleTable(const json::Value &value, StringRef path,
                       CollectiveTuning::ScaleTable &table);
  template <size_t N>
  Error readNameSet(const json::Value &value, StringRef path,
                    const std::array<StringRef, N> &names,
                    std::array<bool, N> &enabled);
  Error readTuning(const json::Object &object, CollectiveTuning &tuning);

  StringRef source;
};
} // namespace

/// `path`.`key`: where a field of a cost file is, for messages.
static std::string joinKeyPath(StringRef path, StringRef key) {
  return path.empty() ? key.str() : (path + "." + key).str();
}

Error DescriptionReader::checkKeys(const json::Object &object, StringRef path,
                                   llvm::ArrayRef<StringRef> known) {
  llvm::SmallVector<std::string> unknown;
  for (const auto &entry : object)
    if (!llvm::is_contained(known, StringRef(entry.first)))
      unknown.push_back(entry.first.str());
  if (unknown.empty())
    return Error::success();
  llvm::sort(unknown);
  std::string where = path.empty() ? "" : (" in " + path).str();
  return makeError(source, "unknown key '" + unknown.front() + "'" + where +
                               " (expected one of: " + llvm::join(known, ", ") +
                               ")");
}

Error DescriptionReader::readNumber(const json::Value &value, const Twine &path,
                                    Bound bound, double &out) {
  std::optional<double> number = value.getAsNumber();
  bool ok = number && std::isfinite(*number);
  StringRef expected;
  switch (bound) {
  case Bound::Positive:
    ok = ok && *number > 0;
    expected = "> 0";
    break;
  case Bound::NonNegative:
    ok = ok && *number >= 0;
    expected = ">= 0";
    break;
  case Bound::Fraction:
    ok = ok && *number > 0 && *number <= 1;
    expected = "in (0, 1]";
    break;
  }
  if (!ok)
    return makeError(source, path + ": expected a number " + expected +
                                 ", got " + render(value));
  out = *number;
  return Error::success();
}

Error DescriptionReader::readCount(const json::Value &value, const Twine &path,
                                   int64_t &out) {
  std::optional<int64_t> count = value.getAsInteger();
  if (!count || *count < 1)
    return makeError(source,
                     path + ": expected an integer >= 1, got " + render(value));
  out = *count;
  return Error::success();
}

static constexpr std::array<StringRef, kNumCollectiveAlgorithms>
    kAlgorithmNames = {"tree", "ring"};
static constexpr std::array<StringRef, kNumCollectiveProtocols> kProtocolNames =
    {"ll", "ll128", "simple"};

Error DescriptionReader::readAlgoProtoTable(
    const json::Value &value, StringRef path,
    CollectiveTuning::AlgoProtoTable &table) {
  const json::Object *object = value.getAsObject();
  if (!object)
    return makeError(source, path +
                                 ": expected an object with keys tree, "
                                 "ring, got " +
                                 render(value));
  if (Error err =
          checkKeys(*object, path, {kAlgorithmNames[0], kAlgorithmNames[1]}))
    return err;
  for (auto [a, algorithm] : llvm::enumerate(kAlgorithmNames)) {
    const json::Value *row = object->get(algorithm);
    if (!row)
      continue;
    std::string rowPath = joinKeyPath(path, algorithm);
    const json::Object *rowObject = row->getAsObject();
    if (!rowObject)
      return makeError(source, rowPath +
                                   ": expected an object with keys ll, "
                                   "ll128, simple, got " +
                                   render(*row));
    if (Error err = checkKeys(
            *rowObject, rowPath,
            {kProtocolNames[0], kProtocolNames[1], kProtocolNames[2]}))
      return err;
    for (auto [p, protocol] : llvm::enumerate(kProtocolNames))
      if (const json::Value *cell = rowObject->get(protocol))
        if (Error err = readNumber(*cell, joinKeyPath(rowPath, protocol),
                                   Bound::NonNegative, table[a][p]))
          return err;
  }
  return Error::success();
}

Error DescriptionReader::readScaleTable(const json::Value &value,
                                        StringRef path,
                                        CollectiveTuning::ScaleTable &table) {
  const json::Array *array = value.getAsArray();
  if (!array || array->size() != table.size())
    return makeError(source, path +
                                 ": expected an array of 3 numbers (one node, "
                                 "two nodes, more nodes), got " +
                                 render(value));
  for (auto [i, element] : llvm::enumerate(*array))
    if (Error err = readNumber(element, path + "[" + Twine(i) + "]",
                               Bound::Positive, table[i]))
      return err;
  return Error::success();
}

template <size_t N>
Error DescriptionReader::readNameSet(const json::Value &value, StringRef path,
                                     const std::array<StringRef, N> &names,
                                     std::array<bool, N> &enabled) {
  std::string expected = llvm::join(names, ", ");
  const json::Array *array = value.getAsArray();
  if (!array)
    return makeError(source, path + ": expected an array of names among " +
                                 expected + ", got " + render(value));
  std::array<bool, N> result{};
  for (const json::Value &element : *array) {
    std::optional<StringRef> name = element.getAsString();
    const StringRef *found = name ? llvm::find(names, *name) : names.end();
    if (found == names.end())
      return makeError(source, path + ": unknown name " + render(element) +
                                   " (expected " + expected + ")");
    result[found - names.begin()] = true;
  }
  enabled = result;
  return Error::success();
}

Error DescriptionReader::readTuning(const json::Object &object,
                                    CollectiveTuning &tuning) {
  if (Error err = checkKeys(
          object, "nccl",
          {"base_latency_us", "intra_latency_us", "net_latency_us",
           "net_overhead_us", "simple_overhead_us", "ll_max_bus_bandwidth_gbps",
           "ring_ll128_max_channel_gbps", "tree_ll128_max_channel_gbps",
           "tree_max_channel_gbps", "gather_scatter_efficiency", "channels",
           "protocols", "algorithms"}))
    return err;
  struct TableField {
    StringRef key;
    CollectiveTuning::AlgoProtoTable *table;
  };
  for (TableField field :
       {TableField{"base_latency_us", &tuning.baseLatencyUs},
        TableField{"intra_latency_us", &tuning.intraLatencyUs},
        TableField{"net_latency_us", &tuning.netLatencyUs}})
    if (const json::Value *value = object.get(field.key))
      if (Error err = readAlgoProtoTable(*value, joinKeyPath("nccl", field.key),
                                         *field.table))
        return err;
  struct ScaleField {
    StringRef key;
    CollectiveTuning::ScaleTable *table;
  };
  for (ScaleField field :
       {ScaleField{"ll_max_bus_bandwidth_gbps", &tuning.llMaxBusBandwidthGBps},
        ScaleField{"ring_ll128_max_channel_gbps",
                   &tuning.ringLL128MaxChannelGBps},
        ScaleField{"tree_ll128_max_channel_gbps",
                   &tuning.treeLL128MaxChannelGBps},
        ScaleField{"tree_max_channel_gbps", &tuning.treeMaxChannelGBps}})
    if (const json::Value *value = object.get(field.key))
      if (Error err =
              readScaleTable(*value, joinKeyPath("nccl", field.key), *field.table))
        return err;
  if (const json::Value *value = object.get("net_overhead_us"))
    if (Error err = readNumber(*value, "nccl.net_overhead_us",
                               Bound::NonNegative, tuning.netOverheadUs))
      return err;
  if (const json::Value *value = object.get("simple_overhead_us"))
    if (Error err = readNumber(*value, "nccl.simple_overhead_us",
                               Bound::NonNegative, tuning.simpleOverheadUs))
      return err;
  if (const json::Value *value = object.get("gather_scatter_efficiency")) {
    const json::Array *array = value->getAsArray();
    if (!array || array->size() != tuning.gatherScatterEfficiency.size())
      return makeError(source,
                       "nccl.gather_scatter_efficiency: expected an array of "
                       "2 fractions (a pair of ranks, three or more), got " +
                           render(*value));
    for (auto [i, element] : llvm::enumerate(*array))
      if (Error err = readNumber(
              element, "nccl.gather_scatter_efficiency[" + Twine(i) + "]",
              Bound::Fraction, tuning.gatherScatterEfficiency[i]))
        return err;
  }
  if (const json::Value *value = object.get("channels"))
    if (Error err = readCount(*value, "nccl.channels", tuning.channels))
      return err;
  if (const json::Value *value = object.get("protocols"))
    if (Error err = readNameSet(*value, "nccl.protocols", kProtocolNames,
                                tuning.protocolEnabled))
      return err;
  if (const json::Value *value = object.get("algorithms"))
    if (Error err = readNameSet(*value, "nccl.algorithms", kAlgorithmNames,
                                tuning.algorithmEnabled))
      return err;
  return Error::success();
}

Error DescriptionReader::read(const json::Object &root, HardwareModel &hw) {
  if (Error err =
          checkKeys(root, "",
                    {"base", "name", "intra_node_bandwidth_gbps",
                     "inter_node_bandwidth_gbps", "memory_bandwidth_gbps",
                     "matmul_tflops", "ranks_per_node", "nccl"}))
    return err;
  if (const json::Value *value = root.get("name")) {
    std::optional<StringRef> name = value->getAsString();
    if (!name || name->empty())
      return makeError(source, "name: expected a non-empty string, got " +
                                   render(*value));
    hw.name = name->str();
  }
  struct NumberField {
    StringRef key;
    double *field;
  };
  for (NumberField field :
       {NumberField{"intra_node_bandwidth_gbps", &hw.intraNodeBandwidthGBps},
        NumberField{"inter_node_bandwidth_gbps", &hw.interNodeBandwidthGBps},
        NumberField{"memory_bandwidth_gbps", &hw.memoryBandwidthGBps},
        NumberField{"matmul_tflops", &hw.matmulTflops}})
    if (const json::Value *value = root.get(field.key))
      if (Error err =
              readNumber(*value, field.key, Bound::Positive, *field.field))
        return err;
  if (const json::Value *value = root.get("ranks_per_node"))
    if (Error err = readCount(*value, "ranks_per_node", hw.ranksPerNode))
      return err;
  if (const json::Value *value = root.get("nccl")) {
    const json::Object *object = value->getAsObject();
    if (!object)
      return makeError(source,
                       "nccl: expected an object, got " + render(*value));
    if (Error err = readTuning(*object, hw.nccl))
      return err;
  }
  // Every collective needs a pair: the ring serves all but all_reduce's
  // tree, point-to-point needs LL or Simple.
  if (!hw.nccl.enabled(CollectiveAlgorithm::Ring))
    return makeError(source, "nccl.algorithms: must include \"ring\" (the "
                             "only algorithm of all_gather, reduce_scatter "
                             "and broadcast)");
  if (!hw.nccl.enabled(CollectiveProtocol::LL) &&
      !hw.nccl.enabled(CollectiveProtocol::Simple))
    return makeError(source, "nccl.protocols: must include \"ll\" or "
                             "\"simple\" (point-to-point collectives use "
                             "no other)");
  return Error::success();
}

static Expected<HardwareModel> hardwareFromJSON(const json::Value &value,
                                                StringRef defaultBase,
                                                StringRef source) {
  const json::Object *root = value.getAsObject();
  if (!root)
    return makeError(source, "expected a JSON object, got " + render(value));
  StringRef baseName = defaultBase;
  if (const json::Value *base = root->get("base")) {
    std::optional<StringRef> name = base->getAsString();
    if (!name)
      return makeError(source, "base: expected a preset name (" +
                                   HardwareModel::presetNames() + "), got " +
                                   render(*base));
    baseName = *name;
  }
  std::optional<HardwareModel> hw = HardwareModel::byName(baseName);
  if (!hw)
    return makeError(source, "unknown base preset '" + baseName +
                                 "' (expected " + HardwareModel::presetNames() +
                                 ")");
  DescriptionReader reader(source);
  if (Error err = reader.read(*root, *hw))
    return std::move(err);
  return *hw;
}

Expected<HardwareModel> HardwareModel::fromJSON(const json::Value &value,
                                                StringRef defaultBase) {
  return hardwareFromJSON(value, defaultBase, "hardware description");
}

/// Reads and parses a JSON file; errors start with the path.
static Expected<json::Value> readJSONFile(StringRef path, StringRef what) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return makeError(path, "cannot read " + what + ": " +
                               buffer.getError().message());
  Expected<json::Value> value = json::parse((*buffer)->getBuffer());
  if (!value)
    return makeError(path, "invalid JSON: " + toString(value.takeError()));
  return std::move(*value);
}

Expected<HardwareModel> HardwareModel::fromFile(StringRef path,
                                                StringRef defaultBase) {
  Expected<json::Value> value = readJSONFile(path, "hardware description");
  if (!value)
    return value.takeError();
  Expected<HardwareModel> hw = hardwareFromJSON(*value, defaultBase, path);
  if (!hw)
    return hw.takeError();
  // Without a name of its own, a description is named after its file.
  const json::Object *root = value->getAsObject();
  if (!root->get("name"))
    hw->name = llvm::sys::path::stem(path).str();
  return hw;
}

Expected<HardwareModel> mlir::dtensor::resolveHardware(StringRef preset,
                                                       StringRef file) {
  if (!file.empty())
    return HardwareModel::fromFile(file, preset);
  std::optional<HardwareModel> hw = HardwareModel::byName(preset);
  if (!hw)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   ("unknown hardware preset '" + preset +
                                    "' (expected " +
                                    HardwareModel::presetNames() + ")")
                                       .str());
  return *hw;
}

mlir::FailureOr<HardwareModel>
mlir::dtensor::resolveHardwareOrEmitError(mlir::Location loc, StringRef preset,
                                          StringRef file, StringRef prefix) {
  Expected<HardwareModel> hw = resolveHardware(preset, file);
  if (!hw)
    return mlir::emitError(loc) << prefix << llvm::toString(hw.takeError());
  return std::move(*hw);
}

//===----------------------------------------------------------------------===//
// Per-op cost tables
//===----------------------------------------------------------------------===//

static Expected<llvm::StringMap<double>>
costTableFromJSON(const json::Value &value, StringRef source) {
  const json::Object *object = value.getAsObject();
  if (!object)
    return makeError(source,
                     "expected a JSON object from op names to microseconds, "
                     "got " +
                         render(value));
  llvm::StringMap<double> table;
  // Sorted so that the first error is the same on every run.
  llvm::SmallVector<StringRef> keys;
  for (const auto &entry : *object)
    keys.push_back(entry.first);
  llvm::sort(keys);
  for (StringRef key : keys) {
    const json::Value &cell = *object->get(key);
    if (key.empty())
      return makeError(source, "empty op name");
    std::optional<double> us = cell.getAsNumber();
    if (!us || !std::isfinite(*us) || *us < 0)
      return makeError(source, "'" + key +
                                   "': expected microseconds (a number >= "
                                   "0), got " +
                                   render(cell));
    table[key] = *us;
  }
  return table;
}

Expected<llvm::StringMap<double>>
mlir::dtensor::parseCostTable(StringRef text, StringRef sourceName) {
  Expected<json::Value> value = json::parse(text);
  if (!value)
    return makeError(sourceName,
                     "invalid JSON: " + toString(value.takeError()));
  return costTableFromJSON(*value, sourceName);
}

Expected<llvm::StringMap<double>> mlir::dtensor::loadCostTable(StringRef path) {
  Expected<json::Value> value = readJSONFile(path, "cost table");
  if (!value)
    return value.takeError();
  return costTableFromJSON(*value, path);
}
