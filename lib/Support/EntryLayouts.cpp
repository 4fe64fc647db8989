//===- EntryLayouts.cpp - an entry's argument and result layouts ----------===//

#include "dtensor/Support/EntryLayouts.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir::dtensor;
namespace json = llvm::json;

std::optional<ElementType>
mlir::dtensor::parseElementTypeName(llvm::StringRef name) {
  // The enumerators are dense from 0; the first without a name ends them.
  for (int i = 0;; ++i) {
    llvm::StringRef known = getElementTypeName(static_cast<ElementType>(i));
    if (known.empty())
      return std::nullopt;
    if (known == name)
      return static_cast<ElementType>(i);
  }
}

std::optional<int64_t> EntryLayouts::getEntryMesh() const {
  if (!args.empty())
    return args.front().mesh;
  if (!results.empty())
    return results.front().mesh;
  return std::nullopt;
}

std::string EntryLayouts::describe(const HostTensorSpec &spec) const {
  std::string text = "tensor<";
  for (int64_t s : spec.shape)
    text += std::to_string(s) + "x";
  return text + getElementTypeName(spec.type).str() + "> on @" +
         getMesh(spec).name + " " + spec.layout.str();
}

static json::Value specToJSON(const HostTensorSpec &spec) {
  json::Array placements;
  for (const HostPlacement &p : spec.layout.placements)
    placements.push_back(p.str());
  return json::Object{{"type", getElementTypeName(spec.type)},
                      {"shape", json::Array(spec.shape)},
                      {"mesh", spec.mesh},
                      {"placements", std::move(placements)}};
}

std::string EntryLayouts::toJSON() const {
  json::Array meshArray, argArray, resultArray;
  for (const HostMesh &mesh : meshes)
    meshArray.push_back(json::Object{{"name", mesh.name},
                                     {"shape", json::Array(mesh.shape)},
                                     {"devices", json::Array(mesh.devices)}});
  for (const HostTensorSpec &spec : args)
    argArray.push_back(specToJSON(spec));
  for (const HostTensorSpec &spec : results)
    resultArray.push_back(specToJSON(spec));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(json::Object{{"entry", entry},
                                 {"meshes", std::move(meshArray)},
                                 {"args", std::move(argArray)},
                                 {"results", std::move(resultArray)}});
  return text;
}

static llvm::Error malformed(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "malformed entry layouts: " + what);
}

/// Reads an array of integers at `key` of `object` into `out`.
static llvm::Error readInts(const json::Object &object, llvm::StringRef key,
                            std::vector<int64_t> &out,
                            const llvm::Twine &where) {
  const json::Array *array = object.getArray(key);
  if (!array)
    return malformed(where + " has no '" + key + "' array");
  for (const json::Value &v : *array) {
    std::optional<int64_t> i = v.getAsInteger();
    if (!i)
      return malformed(where + ": '" + key + "' holds a non-integer");
    out.push_back(*i);
  }
  return llvm::Error::success();
}

llvm::Expected<EntryLayouts> EntryLayouts::fromJSON(llvm::StringRef text) {
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value)
    return value.takeError();
  const json::Object *root = value->getAsObject();
  if (!root)
    return malformed("not an object");
  EntryLayouts layouts;
  std::optional<llvm::StringRef> entry = root->getString("entry");
  if (!entry)
    return malformed("no 'entry'");
  layouts.entry = entry->str();
  const json::Array *meshes = root->getArray("meshes");
  if (!meshes)
    return malformed("no 'meshes'");
  for (const json::Value &m : *meshes) {
    const json::Object *object = m.getAsObject();
    if (!object)
      return malformed("a mesh is not an object");
    HostMesh mesh;
    mesh.name = object->getString("name").value_or("").str();
    std::string where = "mesh @" + mesh.name;
    if (llvm::Error e = readInts(*object, "shape", mesh.shape, where))
      return std::move(e);
    if (llvm::Error e = readInts(*object, "devices", mesh.devices, where))
      return std::move(e);
    for (int64_t s : mesh.shape)
      if (s < 1)
        return malformed(where + " has a dimension of size " + llvm::Twine(s));
    if (!mesh.devices.empty() &&
        static_cast<int64_t>(mesh.devices.size()) != mesh.size())
      return malformed(where + " lists " + llvm::Twine(mesh.devices.size()) +
                       " devices for " + llvm::Twine(mesh.size()) +
                       " positions");
    layouts.meshes.push_back(std::move(mesh));
  }
  for (auto [key, list] : {std::pair{"args", &layouts.args},
                           std::pair{"results", &layouts.results}}) {
    const json::Array *specs = root->getArray(key);
    if (!specs)
      return malformed(llvm::Twine("no '") + key + "'");
    for (auto [i, s] : llvm::enumerate(*specs)) {
      std::string where = (llvm::Twine(key) + " #" + llvm::Twine(i)).str();
      const json::Object *object = s.getAsObject();
      if (!object)
        return malformed(where + " is not an object");
      HostTensorSpec spec;
      std::optional<ElementType> type =
          parseElementTypeName(object->getString("type").value_or(""));
      if (!type)
        return malformed(where + " has no known element type");
      spec.type = *type;
      if (llvm::Error e = readInts(*object, "shape", spec.shape, where))
        return std::move(e);
      for (int64_t size : spec.shape)
        if (size < 0)
          return malformed(where + " has a dimension of size " +
                           llvm::Twine(size));
      std::optional<int64_t> mesh = object->getInteger("mesh");
      if (!mesh || *mesh < 0 ||
          *mesh >= static_cast<int64_t>(layouts.meshes.size()))
        return malformed(where + " names no mesh");
      spec.mesh = *mesh;
      const json::Array *placements = object->getArray("placements");
      if (!placements)
        return malformed(where + " has no 'placements'");
      for (const json::Value &p : *placements) {
        std::optional<llvm::StringRef> text = p.getAsString();
        std::optional<HostPlacement> placement =
            text ? HostPlacement::parse(text->str()) : std::nullopt;
        if (!placement)
          return malformed(where + " has a placement other than S(d), R, "
                                   "P(sum|avg|product|min|max)");
        spec.layout.placements.push_back(*placement);
      }
      std::string why =
          spec.layout.verify(layouts.meshes[spec.mesh], spec.shape.size());
      if (!why.empty())
        return malformed(where + ": " + why);
      list->push_back(std::move(spec));
    }
  }
  return layouts;
}
