//===- OutputCheck.cpp - reassemble and compare rank outputs --------------===//

#include "dtensor/Support/OutputCheck.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

using namespace mlir::dtensor;

static bool isIntegerType(ElementType type) {
  return type == ElementType::I32 || type == ElementType::I64;
}

double mlir::dtensor::getDefaultRtol(ElementType type) {
  switch (type) {
  case ElementType::F32:
  case ElementType::F64:
    return 1e-4;
  case ElementType::F16:
    return 5e-3;
  case ElementType::BF16:
    return 4e-2;
  case ElementType::I32:
  case ElementType::I64:
    return 0;
  }
  return 0;
}

double mlir::dtensor::getAtolFloor(ElementType type) {
  switch (type) {
  case ElementType::F64:
    return 1e-10;
  case ElementType::F32:
    return 1e-5;
  case ElementType::F16:
    return 1e-3;
  case ElementType::BF16:
    return 1e-2;
  case ElementType::I32:
  case ElementType::I64:
    return 0;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Tolerances
//===----------------------------------------------------------------------===//

/// `value` in as few significant digits as give it back (at most 3):
/// "1e-04", "2.5e-03", "0".
static std::string formatTolerance(double value) {
  if (value == 0)
    return "0";
  char text[32];
  for (int digits = 0; digits < 3; ++digits) {
    std::snprintf(text, sizeof(text), "%.*e", digits, value);
    if (std::strtod(text, nullptr) == value)
      return text;
  }
  std::snprintf(text, sizeof(text), "%.3e", value);
  return text;
}

/// `value` exactly, for another process's command line.
static std::string formatExact(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

std::string CheckTolerances::parse(llvm::StringRef name, llvm::StringRef spec) {
  bool isAtol = name == "atol";
  std::string option = ("--" + name).str();
  std::string expects = option +
                        " expects VALUE or OUTPUT:VALUE (VALUE a number >= 0" +
                        (isAtol ? " or auto" : "") +
                        ", OUTPUT an output index), got '" + spec.str() + "'";
  llvm::StringRef text = spec.trim();
  std::optional<int64_t> index;
  if (text.contains(':')) {
    auto [indexText, valueText] = text.split(':');
    int64_t i;
    if (indexText.trim().getAsInteger(10, i) || i < 0)
      return expects;
    index = i;
    text = valueText.trim();
  }
  std::optional<double> value;
  if (!(isAtol && text == "auto")) {
    double number;
    if (text.empty() || !llvm::to_float(text, number))
      return expects;
    if (!std::isfinite(number) || number < 0)
      return option + " must be a finite number >= 0, got " + text.str();
    value = number;
  }
  std::optional<double> &global = isAtol ? atol : rtol;
  std::map<int64_t, Override> &perOutput = isAtol ? atolFor : rtolFor;
  if (index)
    perOutput[*index] = {value, option + "=" + spec.str()};
  else
    global = value;
  return "";
}

std::string CheckTolerances::validate() const {
  auto check = [](const char *option,
                  std::optional<double> value) -> std::string {
    if (!value || (std::isfinite(*value) && *value >= 0))
      return "";
    return std::string(option) + " must be a finite number >= 0, got " +
           formatExact(*value);
  };
  if (std::string why = check("--rtol", rtol); !why.empty())
    return why;
  if (std::string why = check("--atol", atol); !why.empty())
    return why;
  for (const auto &[option, overrides] :
       {std::pair("--rtol", &rtolFor), std::pair("--atol", &atolFor)})
    for (const auto &[index, given] : *overrides) {
      if (index < 0)
        return std::string(option) + ": output index must be >= 0, got " +
               std::to_string(index);
      if (std::string why = check(option, given.value); !why.empty())
        return why;
    }
  return "";
}

std::string CheckTolerances::validateOutputs(size_t numOutputs,
                                             llvm::StringRef entry) const {
  for (const auto *overrides : {&rtolFor, &atolFor})
    for (const auto &[index, given] : *overrides)
      if (index >= static_cast<int64_t>(numOutputs)) {
        std::string spelling = given.spelling;
        if (spelling.empty())
          spelling = (overrides == &rtolFor ? "--rtol=" : "--atol=") +
                     std::to_string(index) + ":...";
        return spelling + ": @" + entry.str() + " has " +
               std::to_string(numOutputs) + " result" +
               (numOutputs == 1 ? "" : "s");
      }
  return "";
}

OutputTolerance CheckTolerances::resolve(size_t index, ElementType type) const {
  bool isFloat = !isIntegerType(type);
  OutputTolerance tolerance;
  tolerance.atolFloor = getAtolFloor(type);
  auto i = static_cast<int64_t>(index);
  if (auto it = rtolFor.find(i); it != rtolFor.end() && it->second.value)
    tolerance.rtol = *it->second.value;
  else
    tolerance.rtol = isFloat ? rtol.value_or(getDefaultRtol(type)) : 0;
  if (auto it = atolFor.find(i); it != atolFor.end())
    tolerance.atol = it->second.value;
  else
    tolerance.atol = isFloat ? atol : std::optional<double>(0.0);
  return tolerance;
}

std::string
CheckTolerances::parseOptions(const llvm::cl::list<std::string> &rtol,
                              const llvm::cl::list<std::string> &atol,
                              const llvm::cl::list<std::string> &tolerance) {
  std::vector<std::tuple<unsigned, llvm::StringRef, llvm::StringRef>> given;
  // cl::list overloads unary &: std::addressof.
  using List = const llvm::cl::list<std::string> *;
  for (auto [list, name] :
       {std::pair<List, llvm::StringRef>(std::addressof(rtol), "rtol"),
        std::pair<List, llvm::StringRef>(std::addressof(atol), "atol"),
        std::pair<List, llvm::StringRef>(std::addressof(tolerance),
                                         "tolerance")})
    for (size_t i = 0; i < list->size(); ++i)
      given.emplace_back(list->getPosition(i), name, (*list)[i]);
  llvm::stable_sort(given, [](const auto &a, const auto &b) {
    return std::get<0>(a) < std::get<0>(b);
  });
  for (const auto &[position, name, spec] : given)
    if (std::string why = parse(name, spec); !why.empty())
      return why;
  return "";
}

std::vector<std::string> CheckTolerances::toArgs() const {
  std::vector<std::string> args;
  if (rtol)
    args.push_back("--rtol=" + formatExact(*rtol));
  if (atol)
    args.push_back("--atol=" + formatExact(*atol));
  for (const auto &[index, given] : rtolFor)
    if (given.value)
      args.push_back("--rtol=" + std::to_string(index) + ":" +
                     formatExact(*given.value));
  for (const auto &[index, given] : atolFor)
    args.push_back("--atol=" + std::to_string(index) + ":" +
                   (given.value ? formatExact(*given.value) : "auto"));
  return args;
}

//===----------------------------------------------------------------------===//
// Comparing
//===----------------------------------------------------------------------===//

/// Element `k` of an integer tensor, exactly (HostTensor::get's double
/// rounds i64 beyond 2^53).
static int64_t getInteger(const HostTensor &tensor, int64_t k) {
  if (tensor.type == ElementType::I32) {
    int32_t value;
    std::memcpy(&value, tensor.data.data() + 4 * k, 4);
    return value;
  }
  int64_t value;
  std::memcpy(&value, tensor.data.data() + 8 * k, 8);
  return value;
}

Comparison mlir::dtensor::compareTensors(const HostTensor &got,
                                         const HostTensor &want,
                                         const OutputTolerance &tolerance) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  int64_t n = std::min(got.getNumElements(), want.getNumElements());
  double maxRef = 0;
  for (int64_t k = 0; k < n; ++k)
    if (double b = want.get(k); std::isfinite(b))
      maxRef = std::max(maxRef, std::fabs(b));
  Comparison c;
  c.rtol = tolerance.rtol;
  c.autoAtol = !tolerance.atol;
  c.atol = tolerance.atol
               ? *tolerance.atol
               : std::max(tolerance.rtol * maxRef, tolerance.atolFloor);
  bool exactIntegers = isIntegerType(got.type) && got.type == want.type;
  bool worstBad = false;
  double worstDiff = 0;
  for (int64_t k = 0; k < n; ++k) {
    double a, b;
    bool equal;
    if (exactIntegers) {
      int64_t x = getInteger(got, k), y = getInteger(want, k);
      equal = x == y;
      a = static_cast<double>(x);
      b = static_cast<double>(y);
    } else {
      a = got.get(k);
      b = want.get(k);
      bool bothNaN = std::isnan(a) && std::isnan(b);
      c.numNaN += bothNaN;
      equal = a == b || bothNaN;
    }
    if (equal)
      continue;
    double allowed = c.atol + c.rtol * std::fabs(b);
    double diff = std::fabs(a - b), ratio;
    bool bad;
    if (!std::isfinite(a) || !std::isfinite(b)) {
      diff = ratio = kInf;
      bad = true;
    } else {
      // a != b: diff > 0 (or 0 only for integers beyond 2^53 apart by less
      // than a double's step, which still differ).
      bad = diff > allowed || (exactIntegers && allowed == 0);
      ratio = allowed > 0 ? diff / allowed : kInf;
    }
    c.numBad += bad;
    c.maxAbsError = std::max(c.maxAbsError, diff);
    // The worst: a bad element before a good one, then the largest ratio,
    // then (past a zero bound) the largest difference.
    if (c.worst < 0 || (bad && !worstBad) ||
        (bad == worstBad &&
         (ratio > c.ratio || (ratio == c.ratio && diff > worstDiff)))) {
      worstDiff = diff;
      c.worst = k;
      c.got = a;
      c.want = b;
      c.allowed = allowed;
      c.ratio = ratio;
      worstBad = bad;
    }
  }
  c.good = c.numBad == 0;
  c.maxRelativeError = c.maxAbsError / std::max(maxRef, 1e-30);
  return c;
}

void mlir::dtensor::printCheckCriterion(llvm::raw_ostream &os) {
  os << "  check: every element |a-b| <= atol + rtol*|b|, a the sharded "
        "program's value, b the unsharded reference's; atol auto: "
        "max(rtol*max|b|, the element type's floor); max relative error: "
        "max|a-b| / max|b|\n";
}

/// "[3, 5]": the index of flat element `k` of a tensor of `shape`.
static std::string formatIndex(llvm::ArrayRef<int64_t> shape, int64_t k) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t size = std::max<int64_t>(shape[d], 1);
    index[d] = k % size;
    k /= size;
  }
  std::string text = "[";
  for (auto [d, i] : llvm::enumerate(index))
    text += (d ? ", " : "") + std::to_string(i);
  return text + "]";
}

void mlir::dtensor::printComparison(llvm::raw_ostream &os, size_t index,
                                    llvm::StringRef what,
                                    llvm::ArrayRef<int64_t> shape,
                                    const Comparison &c) {
  os << llvm::format("  output #%zu %s: max relative error %.3e", index,
                     what.str().c_str(), c.maxRelativeError);
  os << " (atol " << formatTolerance(c.atol) << (c.autoAtol ? " auto" : "")
     << ", rtol " << formatTolerance(c.rtol) << ")";
  if (c.worst < 0) {
    os << "; every element equal";
  } else {
    os << "; worst element " << formatIndex(shape, c.worst) << ": ";
    if (std::isfinite(c.got) && std::isfinite(c.want)) {
      os << llvm::format("|a-b| %.3e %s %.3e = atol + rtol*|b|",
                         std::fabs(c.got - c.want), c.good ? "<=" : ">",
                         c.allowed);
      if (!c.good)
        os << llvm::format(", got %.9g, want %.9g", c.got, c.want);
    } else {
      os << llvm::format("got %.9g, want %.9g", c.got, c.want);
    }
    if (!c.good) {
      int64_t total = 1;
      for (int64_t size : shape)
        total *= size;
      os << "; " << c.numBad << " of " << total << " element"
         << (total == 1 ? "" : "s") << " off";
    }
  }
  if (c.numNaN)
    os << "; " << c.numNaN << " NaN where the reference has NaN";
  os << " " << (c.good ? "ok" : "MISMATCH");
}

static std::string joinRanks(const std::vector<int64_t> &ranks) {
  std::string text;
  for (int64_t rank : ranks)
    text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

llvm::Expected<bool> mlir::dtensor::checkOutputs(
    const EntryLayouts &layouts, const std::vector<bool> &undefined,
    const std::vector<HostTensor> *expected, const CheckTolerances &tolerances,
    LocalOutputReader read, llvm::raw_ostream &os,
    std::vector<HostTensor> *globals) {
  auto makeError = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (expected)
    printCheckCriterion(os);
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
    OutputTolerance tolerance = tolerances.resolve(i, spec.type);
    std::optional<Comparison> worst;
    std::vector<std::vector<int64_t>> bad;
    for (const HostReplica &replica : global.replicas) {
      Comparison c = compareTensors(replica.value, (*expected)[i], tolerance);
      if (!c.good)
        bad.push_back(replica.ranks);
      if (!worst || (worst->good && !c.good) ||
          (worst->good == c.good && c.ratio > worst->ratio))
        worst = c;
    }
    allGood &= bad.empty();
    printComparison(os, i, layouts.describe(spec), spec.shape, *worst);
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
