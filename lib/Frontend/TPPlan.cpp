//===- TPPlan.cpp - PyTorch tensor-parallel plans as data -----------------===//

#include "dtensor/Frontend/TPPlan.h"

#include "dtensor/Support/Errors.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dtensor;

StringRef mlir::dtensor::getPlanStyleName(PlanStyle style) {
  switch (style) {
  case PlanStyle::Colwise:
    return "ColwiseParallel";
  case PlanStyle::Rowwise:
    return "RowwiseParallel";
  case PlanStyle::Sequence:
    return "SequenceParallel";
  case PlanStyle::PrepareInput:
    return "PrepareModuleInput";
  case PlanStyle::PrepareOutput:
    return "PrepareModuleOutput";
  }
  llvm_unreachable("unknown style");
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

/// Parses `S(d)`, `R`, `P`, `P(op)` and PyTorch's spellings `Shard(d)`,
/// `Replicate()`, `Partial()`, `Partial(op)`.
FailureOr<PlanPlacement> mlir::dtensor::parsePlanPlacement(StringRef text) {
  StringRef s = text.trim();
  StringRef head = s.take_until([](char c) { return c == '('; });
  StringRef arg;
  bool hasArg = head.size() != s.size();
  if (hasArg) {
    StringRef rest = s.drop_front(head.size());
    if (!rest.consume_front("(") || !rest.consume_back(")"))
      return failure();
    arg = rest.trim();
  }
  head = head.trim();
  PlanPlacement placement;
  if (head == "S" || head == "Shard") {
    placement.kind = PlacementKind::Shard;
    if (!hasArg || arg.getAsInteger(10, placement.dim))
      return failure();
    return placement;
  }
  if (head == "R" || head == "Replicate") {
    if (hasArg && !arg.empty())
      return failure();
    if (head == "Replicate" && !hasArg)
      return failure();
    return placement;
  }
  if (head == "P" || head == "Partial") {
    placement.kind = PlacementKind::Partial;
    if (!hasArg || arg.empty())
      return placement;
    StringRef name = arg;
    // PyTorch quotes the op: Partial("sum").
    if (name.size() >= 2 && (name.front() == '"' || name.front() == '\'') &&
        name.back() == name.front())
      name = name.drop_front().drop_back();
    std::optional<ReduceKind> reduce = symbolizeReduceKind(name);
    if (!reduce)
      return failure();
    placement.reduce = *reduce;
    return placement;
  }
  return failure();
}

namespace {

/// Collects the message of the first error of the plan; converts to failure
/// so that `return error(where) << ...;` reads as before.
class PlanError {
public:
  class Stream {
  public:
    Stream(std::string &message, const Twine &context) : os(message) {
      os << context;
    }
    template <typename T> Stream &operator<<(const T &value) {
      os << value;
      return *this;
    }
    operator LogicalResult() const { return failure(); }

  private:
    llvm::raw_string_ostream os;
  };

  Stream operator()(const Twine &context) {
    message.clear();
    return Stream(message, context);
  }
  std::string message;
};

class PlanParser {
public:
  explicit PlanParser(int64_t meshRank) : meshRank(meshRank) {}

  FailureOr<std::vector<PlanEntry>>
  parseEntries(const llvm::json::Object &plan);

  PlanError error;

private:
  LogicalResult parseEntry(StringRef key, unsigned index,
                           const llvm::json::Value &value, PlanEntry &entry);
  FailureOr<PlanLayout> parseLayout(const llvm::json::Value &value,
                                    const Twine &where);
  FailureOr<SmallVector<PlanLayout>>
  parseLayoutList(const llvm::json::Value &value, const Twine &where);

  int64_t meshRank;
};

FailureOr<PlanLayout> PlanParser::parseLayout(const llvm::json::Value &value,
                                              const Twine &where) {
  if (value.getAsNull())
    return PlanLayout(std::nullopt);
  SmallVector<const llvm::json::Value *> items;
  if (value.getAsString()) {
    items.push_back(&value);
  } else if (const llvm::json::Array *array = value.getAsArray()) {
    for (const llvm::json::Value &item : *array)
      items.push_back(&item);
  } else {
    error(where) << ": expected a placement string, a list of placements "
                    "or null";
    return failure();
  }
  if (static_cast<int64_t>(items.size()) != meshRank) {
    error(where) << ": a layout on a mesh of rank " << meshRank << " has "
                 << meshRank << " placement(s), got " << items.size();
    return failure();
  }
  SmallVector<PlanPlacement> placements;
  for (const llvm::json::Value *item : items) {
    std::optional<StringRef> text = item->getAsString();
    if (!text) {
      error(where) << ": expected a placement string";
      return failure();
    }
    FailureOr<PlanPlacement> placement = parsePlanPlacement(*text);
    if (failed(placement)) {
      error(where) << ": bad placement '" << *text
                   << "' (expected S(dim), R, P or P(sum|avg|product|min|max))";
      return failure();
    }
    placements.push_back(*placement);
  }
  return PlanLayout(placements);
}

FailureOr<SmallVector<PlanLayout>>
PlanParser::parseLayoutList(const llvm::json::Value &value,
                            const Twine &where) {
  SmallVector<PlanLayout> layouts;
  const llvm::json::Array *array = value.getAsArray();
  // A single layout: a string or null, or on an n-D mesh a list of strings.
  bool single = !array || (meshRank > 1 && !array->empty() &&
                           llvm::all_of(*array, [](const llvm::json::Value &v) {
                             return v.getAsString().has_value();
                           }));
  if (single) {
    FailureOr<PlanLayout> layout = parseLayout(value, where);
    if (failed(layout))
      return failure();
    layouts.push_back(*layout);
    return layouts;
  }
  for (auto [i, item] : llvm::enumerate(*array)) {
    FailureOr<PlanLayout> layout =
        parseLayout(item, where + "[" + Twine(i) + "]");
    if (failed(layout))
      return failure();
    layouts.push_back(*layout);
  }
  return layouts;
}

LogicalResult PlanParser::parseEntry(StringRef key, unsigned index,
                                     const llvm::json::Value &value,
                                     PlanEntry &entry) {
  std::string where = ("entry '" + key + "'").str();
  const llvm::json::Object *object = value.getAsObject();
  if (!object)
    return error(where) << ": expected an object with a \"style\"";
  entry.key = key.str();
  entry.index = index;
  std::optional<StringRef> styleName = object->getString("style");
  if (!styleName)
    return error(where) << ": missing \"style\" string";
  static const std::pair<StringRef, PlanStyle> styles[] = {
      {"ColwiseParallel", PlanStyle::Colwise},
      {"RowwiseParallel", PlanStyle::Rowwise},
      {"SequenceParallel", PlanStyle::Sequence},
      {"PrepareModuleInput", PlanStyle::PrepareInput},
      {"PrepareModuleOutput", PlanStyle::PrepareOutput}};
  auto style = llvm::find_if(
      styles, [&](const auto &pair) { return pair.first == *styleName; });
  if (style == std::end(styles))
    return error(where) << ": unknown style '" << *styleName
                        << "' (expected ColwiseParallel, RowwiseParallel, "
                           "SequenceParallel, PrepareModuleInput or "
                           "PrepareModuleOutput)";
  entry.style = style->second;
  where += (" (" + getPlanStyleName(entry.style) + ")").str();

  SmallVector<StringRef> allowed = {"style", "use_local_output", "mesh_dim"};
  switch (entry.style) {
  case PlanStyle::Colwise:
  case PlanStyle::Rowwise:
    allowed.append({"input_layouts", "output_layouts"});
    break;
  case PlanStyle::Sequence:
    allowed.push_back("sequence_dim");
    break;
  case PlanStyle::PrepareInput:
    allowed.append({"input_layouts", "desired_input_layouts"});
    break;
  case PlanStyle::PrepareOutput:
    allowed.append({"output_layouts", "desired_output_layouts"});
    break;
  }
  SmallVector<StringRef> keys;
  for (const auto &member : *object)
    keys.push_back(member.first);
  llvm::sort(keys);
  for (StringRef field : keys)
    if (!llvm::is_contained(allowed, field))
      return error(where) << ": unknown field '" << field
                          << "' (allowed: " << llvm::join(allowed, ", ") << ")";

  if (const llvm::json::Value *local = object->get("use_local_output"))
    if (!local->getAsBoolean())
      return error(where) << ": use_local_output must be a boolean";
  if (const llvm::json::Value *dim = object->get("sequence_dim")) {
    std::optional<int64_t> value = dim->getAsInteger();
    if (!value)
      return error(where) << ": sequence_dim must be an integer";
    entry.sequenceDim = *value;
  }
  if (const llvm::json::Value *dim = object->get("mesh_dim")) {
    std::optional<int64_t> value = dim->getAsInteger();
    if (!value)
      return error(where) << ": mesh_dim must be an integer";
    entry.meshDim = *value;
  }
  auto layouts =
      [&](StringRef field,
          std::optional<SmallVector<PlanLayout>> &into) -> LogicalResult {
    const llvm::json::Value *list = object->get(field);
    if (!list)
      return success();
    FailureOr<SmallVector<PlanLayout>> parsed =
        parseLayoutList(*list, where + ": " + field);
    if (failed(parsed))
      return failure();
    into = std::move(*parsed);
    return success();
  };
  if (failed(layouts("input_layouts", entry.inputLayouts)) ||
      failed(layouts("desired_input_layouts", entry.desiredInputLayouts)) ||
      failed(layouts("output_layouts", entry.outputLayouts)) ||
      failed(layouts("desired_output_layouts", entry.desiredOutputLayouts)))
    return failure();

  // Colwise and Rowwise take one layout each, PrepareModule* pairs of lists
  // of equal length.
  auto single =
      [&](StringRef field,
          const std::optional<SmallVector<PlanLayout>> &list) -> LogicalResult {
    if (!list)
      return success();
    if (list->size() != 1)
      return error(where) << ": " << field << " takes one layout, got "
                          << list->size();
    if (!list->front())
      return error(where) << ": " << field << " must not be null";
    return success();
  };
  auto paired = [&](StringRef field, StringRef desiredField,
                    const std::optional<SmallVector<PlanLayout>> &list,
                    const std::optional<SmallVector<PlanLayout>> &desired)
      -> LogicalResult {
    if (!list || !desired)
      return error(where) << ": needs both " << field << " and "
                          << desiredField;
    if (list->size() != desired->size())
      return error(where) << ": " << field << " and " << desiredField
                          << " have different lengths (" << list->size()
                          << " and " << desired->size() << ")";
    return success();
  };
  switch (entry.style) {
  case PlanStyle::Colwise:
  case PlanStyle::Rowwise:
    return success(succeeded(single("input_layouts", entry.inputLayouts)) &&
                   succeeded(single("output_layouts", entry.outputLayouts)));
  case PlanStyle::Sequence:
    return success();
  case PlanStyle::PrepareInput:
    return paired("input_layouts", "desired_input_layouts", entry.inputLayouts,
                  entry.desiredInputLayouts);
  case PlanStyle::PrepareOutput:
    return paired("output_layouts", "desired_output_layouts",
                  entry.outputLayouts, entry.desiredOutputLayouts);
  }
  return success();
}

FailureOr<std::vector<PlanEntry>>
PlanParser::parseEntries(const llvm::json::Object &plan) {
  SmallVector<StringRef> keys;
  for (const auto &member : plan)
    keys.push_back(member.first);
  llvm::sort(keys);
  std::vector<PlanEntry> entries;
  for (StringRef key : keys) {
    if (key.empty() || llvm::is_contained(llvm::split(key, '.'), "")) {
      error("module path '") << key << "' has an empty segment";
      return failure();
    }
    const llvm::json::Value &value = *plan.get(key);
    // A module may take several styles, as a list.
    if (const llvm::json::Array *list = value.getAsArray()) {
      for (auto [i, item] : llvm::enumerate(*list)) {
        PlanEntry entry;
        if (failed(parseEntry(key, i, item, entry)))
          return failure();
        entries.push_back(std::move(entry));
      }
      continue;
    }
    PlanEntry entry;
    if (failed(parseEntry(key, 0, value, entry)))
      return failure();
    entries.push_back(std::move(entry));
  }
  return entries;
}

} // namespace

llvm::Expected<std::vector<PlanEntry>>
mlir::dtensor::parsePlanEntries(const llvm::json::Object &plan,
                                int64_t meshRank) {
  PlanParser parser(meshRank);
  FailureOr<std::vector<PlanEntry>> entries = parser.parseEntries(plan);
  if (failed(entries))
    return makeError(parser.error.message);
  return std::move(*entries);
}

llvm::Expected<PlanDocument> mlir::dtensor::parsePlanDocument(StringRef text) {
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return makeError("malformed JSON: " + llvm::toString(json.takeError()));
  llvm::json::Object *root = json->getAsObject();
  if (!root)
    return makeError("the plan must be a JSON object");
  static const StringRef topLevel[] = {"mesh", "mesh_dim", "plan"};
  for (const auto &member : *root)
    if (!llvm::is_contained(topLevel, StringRef(member.first)))
      return makeError("unknown top-level field '" + StringRef(member.first) +
                       "' (allowed: mesh, mesh_dim, plan)");
  PlanDocument document;
  llvm::json::Object *plan = root->getObject("plan");
  if (!plan)
    return makeError("missing \"plan\" object (module path -> style)");
  document.plan = std::move(*plan);
  if (const llvm::json::Value *value = root->get("mesh")) {
    std::optional<StringRef> name = value->getAsString();
    if (!name)
      return makeError("\"mesh\" must be a string");
    document.mesh = name->str();
  }
  if (const llvm::json::Value *value = root->get("mesh_dim")) {
    document.meshDim = value->getAsInteger();
    if (!document.meshDim)
      return makeError("\"mesh_dim\" must be an integer");
  }
  return document;
}
