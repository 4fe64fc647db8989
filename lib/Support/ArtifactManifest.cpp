//===- ArtifactManifest.cpp - what a compiled artifact says of itself -----===//

#include "dtensor/Support/ArtifactManifest.h"

#include "dtensor/Support/Errors.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir::dtensor;
namespace json = llvm::json;

static json::Array signatureToJSON(const std::vector<TensorSignature> &list) {
  json::Array out;
  for (const TensorSignature &tensor : list)
    out.push_back(json::Object{{"type", getElementTypeName(tensor.type)},
                               {"shape", json::Array(tensor.shape)}});
  return out;
}

std::string ArtifactManifest::toJSON() const {
  json::Object manifest{{"target", target},
                        {"entry", entry},
                        {"unsharded", unsharded},
                        {"integer_bounds", json::Array(integerBounds)},
                        {"undefined_results", json::Array(undefinedResults)}};
  if (unsharded) {
    manifest["signature"] = json::Object{{"args", signatureToJSON(args)},
                                         {"results", signatureToJSON(results)}};
  } else {
    llvm::Expected<json::Value> parsed = json::parse(layouts.toJSON());
    // EntryLayouts::toJSON writes valid JSON.
    manifest["layouts"] = parsed ? std::move(*parsed) : json::Value(nullptr);
    if (!parsed)
      llvm::consumeError(parsed.takeError());
  }
  std::string text;
  llvm::raw_string_ostream(text) << json::Value(std::move(manifest));
  return text;
}

static llvm::Expected<std::vector<TensorSignature>>
signatureFromJSON(const json::Array *list, llvm::StringRef what) {
  std::vector<TensorSignature> out;
  if (!list)
    return makeError("the manifest's signature has no '" + what + "'");
  for (const json::Value &value : *list) {
    const json::Object *object = value.getAsObject();
    std::optional<llvm::StringRef> typeName =
        object ? object->getString("type") : std::nullopt;
    std::optional<ElementType> type =
        typeName ? parseElementTypeName(*typeName) : std::nullopt;
    const json::Array *shape = object ? object->getArray("shape") : nullptr;
    if (!type || !shape)
      return makeError("the manifest's signature has a malformed " + what);
    TensorSignature tensor{*type, {}};
    for (const json::Value &dim : *shape) {
      std::optional<int64_t> size = dim.getAsInteger();
      if (!size || *size < 0)
        return makeError("the manifest's signature has a malformed shape");
      tensor.shape.push_back(*size);
    }
    out.push_back(std::move(tensor));
  }
  return out;
}

llvm::Expected<ArtifactManifest>
ArtifactManifest::fromJSON(llvm::StringRef text) {
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return makeError("malformed manifest: " +
                     llvm::toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return makeError("the manifest is not a JSON object");
  std::optional<llvm::StringRef> target = root->getString("target");
  std::optional<llvm::StringRef> entry = root->getString("entry");
  std::optional<bool> unsharded = root->getBoolean("unsharded");
  if (!target || !entry || !unsharded)
    return makeError("the manifest lacks 'target', 'entry' or 'unsharded'");
  ArtifactManifest manifest;
  manifest.target = target->str();
  manifest.entry = entry->str();
  manifest.unsharded = *unsharded;
  if (manifest.unsharded) {
    const json::Object *signature = root->getObject("signature");
    if (!signature)
      return makeError("the manifest has no 'signature'");
    auto args = signatureFromJSON(signature->getArray("args"), "args");
    if (!args)
      return args.takeError();
    auto results = signatureFromJSON(signature->getArray("results"), "results");
    if (!results)
      return results.takeError();
    manifest.args = std::move(*args);
    manifest.results = std::move(*results);
  } else {
    const json::Value *layouts = root->get("layouts");
    if (!layouts)
      return makeError("the manifest has no 'layouts'");
    std::string layoutsText;
    llvm::raw_string_ostream(layoutsText) << *layouts;
    llvm::Expected<EntryLayouts> parsedLayouts =
        EntryLayouts::fromJSON(layoutsText);
    if (!parsedLayouts)
      return parsedLayouts.takeError();
    manifest.layouts = std::move(*parsedLayouts);
    for (const HostTensorSpec &spec : manifest.layouts.args)
      manifest.args.push_back({spec.type, spec.shape});
    for (const HostTensorSpec &spec : manifest.layouts.results)
      manifest.results.push_back({spec.type, spec.shape});
  }
  if (const json::Array *bounds = root->getArray("integer_bounds"))
    for (const json::Value &bound : *bounds)
      manifest.integerBounds.push_back(bound.getAsInteger().value_or(16));
  if (const json::Array *undefined = root->getArray("undefined_results"))
    for (const json::Value &flag : *undefined)
      manifest.undefinedResults.push_back(flag.getAsBoolean().value_or(false));
  return manifest;
}
