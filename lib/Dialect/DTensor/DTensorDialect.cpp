//===- DTensorDialect.cpp - dialect, attributes and types -----------------===//

#include "dtensor/Dialect/DTensor/DTensor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dtensor;

#include "dtensor/Dialect/DTensor/DTensorDialect.cpp.inc"
#include "dtensor/Dialect/DTensor/DTensorEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dtensor/Dialect/DTensor/DTensorAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dtensor/Dialect/DTensor/DTensorTypes.cpp.inc"

void DTensorDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dtensor/Dialect/DTensor/DTensorAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dtensor/Dialect/DTensor/DTensorTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dtensor/Dialect/DTensor/DTensorOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// PlacementAttr
//===----------------------------------------------------------------------===//

PlacementAttr PlacementAttr::getShard(MLIRContext *ctx, int64_t dim) {
  return get(ctx, PlacementKind::Shard, dim, ReduceKind::Sum);
}

PlacementAttr PlacementAttr::getReplicate(MLIRContext *ctx) {
  return get(ctx, PlacementKind::Replicate, 0, ReduceKind::Sum);
}

PlacementAttr PlacementAttr::getPartial(MLIRContext *ctx, ReduceKind op) {
  return get(ctx, PlacementKind::Partial, 0, op);
}

LogicalResult
PlacementAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      PlacementKind kind, int64_t dim, ReduceKind reduce) {
  if (kind == PlacementKind::Shard && dim < 0)
    return emitError() << "[PL1] shard dimension must be non-negative, got "
                       << dim;
  if (kind != PlacementKind::Shard && dim != 0)
    return emitError() << "only a shard placement has a dimension";
  if (kind != PlacementKind::Partial && reduce != ReduceKind::Sum)
    return emitError() << "only a partial placement has a reduction";
  return success();
}

PlacementAttr PlacementAttr::parseBody(AsmParser &parser) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  auto emitError = [&] { return parser.emitError(loc); };
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return {};
  if (keyword == "R")
    return getReplicate(ctx);
  if (keyword == "S") {
    int64_t dim;
    if (parser.parseLParen() || parser.parseInteger(dim) ||
        parser.parseRParen())
      return {};
    return getChecked(emitError, ctx, PlacementKind::Shard, dim,
                      ReduceKind::Sum);
  }
  if (keyword == "P") {
    ReduceKind reduce = ReduceKind::Sum;
    if (succeeded(parser.parseOptionalLParen())) {
      StringRef name;
      SMLoc nameLoc = parser.getCurrentLocation();
      if (parser.parseKeyword(&name))
        return {};
      std::optional<ReduceKind> parsed = symbolizeReduceKind(name);
      if (!parsed) {
        parser.emitError(nameLoc)
            << "unknown reduction '" << name
            << "'; expected sum, avg, product, min or max";
        return {};
      }
      reduce = *parsed;
      if (parser.parseRParen())
        return {};
    }
    return getPartial(ctx, reduce);
  }
  emitError() << "expected a placement S(dim), R, P or P(op), got '"
              << keyword << "'";
  return {};
}

void PlacementAttr::printBody(AsmPrinter &printer) const {
  switch (getKind()) {
  case PlacementKind::Shard:
    printer << "S(" << getDim() << ")";
    return;
  case PlacementKind::Replicate:
    printer << "R";
    return;
  case PlacementKind::Partial:
    printer << "P(" << stringifyReduceKind(getReduce()) << ")";
    return;
  }
}

Attribute PlacementAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  PlacementAttr attr = parseBody(parser);
  if (!attr || parser.parseGreater())
    return {};
  return attr;
}

void PlacementAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printBody(printer);
  printer << ">";
}

//===----------------------------------------------------------------------===//
// LayoutAttr
//===----------------------------------------------------------------------===//

LogicalResult LayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 FlatSymbolRefAttr mesh,
                                 ArrayRef<PlacementAttr> placements) {
  std::optional<ReduceKind> partial;
  for (PlacementAttr placement : placements) {
    if (!placement.isPartial())
      continue;
    if (partial && *partial != placement.getReduce())
      return emitError() << "[LAYOUT4] mixed Partial reductions P("
                         << stringifyReduceKind(*partial) << ") and P("
                         << stringifyReduceKind(placement.getReduce())
                         << ") in one layout";
    partial = placement.getReduce();
  }
  return success();
}

Attribute LayoutAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  FlatSymbolRefAttr mesh;
  SmallVector<PlacementAttr> placements;
  if (parser.parseLess() || parser.parseAttribute(mesh) || parser.parseComma())
    return {};
  if (parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square, [&]() -> ParseResult {
            PlacementAttr placement = PlacementAttr::parseBody(parser);
            if (!placement)
              return failure();
            placements.push_back(placement);
            return success();
          }))
    return {};
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), mesh, placements);
}

void LayoutAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(getPlacements(), printer,
                        [&](PlacementAttr p) { p.printBody(printer); });
  printer << "]>";
}

bool LayoutAttr::hasPartial() const { return getPartialKind().has_value(); }

std::optional<ReduceKind> LayoutAttr::getPartialKind() const {
  for (PlacementAttr placement : getPlacements())
    if (placement.isPartial())
      return placement.getReduce();
  return std::nullopt;
}

bool LayoutAttr::isFullyReplicated() const {
  return llvm::all_of(getPlacements(),
                      [](PlacementAttr p) { return p.isReplicate(); });
}

//===----------------------------------------------------------------------===//
// TargetAttr
//===----------------------------------------------------------------------===//

static constexpr llvm::StringLiteral kBackends[] = {"cpu", "cuda"};
static constexpr llvm::StringLiteral kHardwarePresets[] = {"h100", "h200",
                                                           "cpu"};

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef backend, StringRef hardware,
                                 StringRef chip, StringRef hardwareFile,
                                 StringRef costTable) {
  if (!llvm::is_contained(kBackends, backend))
    return emitError() << "[TG1] unknown backend '" << backend
                       << "' (expected cpu or cuda)";
  if (!llvm::is_contained(kHardwarePresets, hardware))
    return emitError() << "[TG2] unknown hardware preset '" << hardware
                       << "' (expected h100, h200 or cpu)";
  if (!chip.empty()) {
    if (backend != "cuda")
      return emitError() << "[TG3] 'chip' is only for the cuda backend";
    StringRef digits = chip;
    if (!digits.consume_front("sm_") || digits.empty() ||
        !llvm::all_of(digits, llvm::isDigit))
      return emitError() << "[TG3] chip '" << chip
                         << "' is not of the form sm_<digits>";
  }
  return success();
}

StringRef TargetAttr::getChipOrDefault() const {
  if (!getChip().empty())
    return getChip();
  // Both Hopper presets; the CPU preset plans only.
  return "sm_90";
}

Attribute TargetAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef backend;
  std::string hardware;
  if (parser.parseLess() || parser.parseKeyword(&backend) ||
      parser.parseComma() || parser.parseString(&hardware))
    return {};
  std::string fields[3];
  static constexpr llvm::StringLiteral kKeys[] = {"chip", "hardware_file",
                                                  "cost_table"};
  while (succeeded(parser.parseOptionalComma())) {
    SMLoc keyLoc = parser.getCurrentLocation();
    StringRef key;
    if (parser.parseKeyword(&key))
      return {};
    const auto *it = llvm::find(kKeys, key);
    if (it == std::end(kKeys)) {
      parser.emitError(keyLoc)
          << "unknown target field '" << key
          << "' (expected chip, hardware_file or cost_table)";
      return {};
    }
    std::string &field = fields[it - std::begin(kKeys)];
    if (!field.empty()) {
      parser.emitError(keyLoc) << "target field '" << key << "' given twice";
      return {};
    }
    if (parser.parseEqual() || parser.parseString(&field))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), backend, hardware, fields[0],
                    fields[1], fields[2]);
}

void TargetAttr::print(AsmPrinter &printer) const {
  printer << "<" << getBackend() << ", \"" << getHardware() << "\"";
  auto printField = [&](StringRef key, StringRef value) {
    if (!value.empty()) {
      printer << ", " << key << " = ";
      printer.printString(value);
    }
  };
  printField("chip", getChip());
  printField("hardware_file", getHardwareFile());
  printField("cost_table", getCostTable());
  printer << ">";
}

LogicalResult DTensorDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  if (attr.getName() != kTargetAttrName)
    return success();
  if (!isa<ModuleOp>(op))
    return op->emitError() << "[TG4] '" << kTargetAttrName
                           << "' belongs on a builtin.module";
  if (!isa<TargetAttr>(attr.getValue()))
    return op->emitError() << "[TG4] '" << kTargetAttrName
                           << "' must be a #dtensor.target attribute";
  return success();
}
