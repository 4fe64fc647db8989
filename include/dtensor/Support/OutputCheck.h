//===- OutputCheck.h - reassemble and compare rank outputs ------*- C++ -*-===//
//
// The check behind dtensor-run and dtensor-launch: every output of a sharded
// entry is reassembled from the ranks' local parts by its layout
// (HostLayout.h), and every copy (one per combination of Replicate
// coordinates) is compared with the unsharded program's output, element by
// element as torch.allclose does:
//
//   |a - b| <= atol + rtol * |b|     (a: the ranks' value, b: the reference)
//
// for every element. Equal values pass (equal infinities and NaN where the
// reference has NaN included); any other NaN or infinity fails. Integer
// outputs compare exactly unless an override for that output says
// otherwise.
//
// Tolerances (CheckTolerances): rtol is --rtol (its old name --tolerance),
// else the element type's default; atol is --atol, else "auto":
// max(rtol * max|b|, floor), with the type's floor. Auto is the check of
// old (max|a - b| <= rtol * max|b|: an error small against the output's
// largest value passes wherever it is) plus the floor, so that an output
// that is zero in exact math, whose both sides are rounding noise, passes.
//
//   type       default rtol   atol floor
//   f64, f32   1e-4           1e-10 (f64), 1e-5 (f32)
//   f16        5e-3           1e-3
//   bf16       4e-2           1e-2
//   i32, i64   0              0          (exact)
//
// --rtol/--atol VALUE set every floating-point output's, OUTPUT:VALUE one
// output's (integer outputs included); --atol=auto is the default. The
// report has a line saying the criterion, then one line per output:
//
//   output #0 tensor<8x16xf32> on @tp [R]: max relative error 1.062e-07
//   (atol 8.982e-04 auto, rtol 1e-04); worst element [6, 7]: |a-b|
//   9.537e-07 <= 1.796e-03 = atol + rtol*|b| ok
//
// (on one line) where the max relative error is max|a - b| / max|b| and the
// worst element the one nearest to (or farthest past) its bound; on a
// mismatch the line also gives both values there and how many elements are
// off.
//
// Depends on LLVM Support only, never on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SUPPORT_OUTPUTCHECK_H
#define DTENSOR_SUPPORT_OUTPUTCHECK_H

#include "dtensor/Support/EntryLayouts.h"
#include "dtensor/Support/HostTensor.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dtensor {

/// The default rtol of outputs of `type` (0 for integers).
double getDefaultRtol(ElementType type);
/// The least atol "auto" gives outputs of `type` (0 for integers).
double getAtolFloor(ElementType type);

/// The tolerances of one output, as the check uses them.
struct OutputTolerance {
  double rtol = 0;
  /// None: auto, max(rtol * max|b|, atolFloor).
  std::optional<double> atol;
  double atolFloor = 0;
};

/// The tolerances asked for: one value for every floating-point output, and
/// overrides for single outputs.
struct CheckTolerances {
  /// One override: a value, or auto (atol only), and how it was spelled
  /// ("--atol=2:1e-3"), for messages.
  struct Override {
    std::optional<double> value;
    std::string spelling;
  };
  /// Every floating-point output's; none: the type's default rtol.
  std::optional<double> rtol;
  /// Every floating-point output's; none: auto.
  std::optional<double> atol;
  std::map<int64_t, Override> rtolFor, atolFor;

  /// Takes one value of option `name` ("rtol", "atol" or "tolerance", an
  /// alias of rtol): VALUE or OUTPUT:VALUE, VALUE a finite number >= 0, or
  /// "auto" for atol. A later value replaces an earlier one. Returns why
  /// `spec` is invalid; empty if it is not.
  std::string parse(llvm::StringRef name, llvm::StringRef spec);
  /// Why these cannot be used (a value negative, NaN or infinite, set
  /// through the API); empty if they can.
  std::string validate() const;
  /// Why the overrides do not fit entry `@entry` of `numOutputs` results;
  /// empty if they do.
  std::string validateOutputs(size_t numOutputs, llvm::StringRef entry) const;
  /// What output `index` of element type `type` is checked with.
  OutputTolerance resolve(size_t index, ElementType type) const;
  /// The command-line arguments (--rtol=..., --atol=...) that give these
  /// tolerances to another dtensor-launch.
  std::vector<std::string> toArgs() const;
  /// Takes the values of a tool's --rtol, --atol and --tolerance options in
  /// the order the command line gave them (a later value replaces an
  /// earlier one). Returns why one is invalid; empty if none is.
  std::string parseOptions(const llvm::cl::list<std::string> &rtol,
                           const llvm::cl::list<std::string> &atol,
                           const llvm::cl::list<std::string> &tolerance);
};

/// One tensor against its reference.
struct Comparison {
  /// Every element within its bound.
  bool good = true;
  /// max|a - b| over the elements that are not equal (infinite where a NaN
  /// or an infinity does not match), and that over max|b| (finite b).
  double maxAbsError = 0, maxRelativeError = 0;
  /// The tolerances used (atol resolved; autoAtol: it was auto).
  double atol = 0, rtol = 0;
  bool autoAtol = false;
  /// Elements outside their bound; elements NaN on both sides (equal).
  int64_t numBad = 0, numNaN = 0;
  /// The element with the largest |a - b| / (atol + rtol * |b|), -1 when
  /// every element is equal; its values and bound.
  int64_t worst = -1;
  double got = 0, want = 0, allowed = 0;
  /// How far `worst` is from its bound: |a - b| / allowed (infinite past a
  /// zero bound or at an unmatched NaN or infinity).
  double ratio = 0;
};

/// Compares `got` with `want` (same type and shape) element by element.
Comparison compareTensors(const HostTensor &got, const HostTensor &want,
                          const OutputTolerance &tolerance);

/// Writes the line saying what the check is, before the output lines.
void printCheckCriterion(llvm::raw_ostream &os);

/// Writes "  output #<index> <what>: max relative error ... ok|MISMATCH"
/// for `comparison` of a tensor of `shape`, without the newline.
void printComparison(llvm::raw_ostream &os, size_t index, llvm::StringRef what,
                     llvm::ArrayRef<int64_t> shape,
                     const Comparison &comparison);

/// Reads world rank `rank`'s local part of output `index`.
using LocalOutputReader =
    llvm::function_ref<llvm::Expected<HostTensor>(size_t index, int64_t rank)>;

/// Reassembles every output of `layouts` from what `read` returns and, with
/// `expected` (one tensor per output), compares each copy with it, writing
/// the report to `os`. Outputs marked in `undefined` are reported and
/// skipped. `globals`, when given, receives each output's first copy (an
/// empty tensor for skipped ones). Returns whether every compared copy is
/// within its tolerances; an error if the parts cannot be read or do not
/// fit the layout.
llvm::Expected<bool> checkOutputs(const EntryLayouts &layouts,
                                  const std::vector<bool> &undefined,
                                  const std::vector<HostTensor> *expected,
                                  const CheckTolerances &tolerances,
                                  LocalOutputReader read, llvm::raw_ostream &os,
                                  std::vector<HostTensor> *globals = nullptr);

} // namespace mlir::dtensor

#endif // DTENSOR_SUPPORT_OUTPUTCHECK_H
