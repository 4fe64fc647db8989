//===- OutputCheck.h - reassemble and compare rank outputs ------*- C++ -*-===//
//
// The check behind dtensor-run and dtensor-launch: every output of a sharded
// entry is reassembled from the ranks' local parts by its layout
// (HostLayout.h), and every copy (one per combination of Replicate
// coordinates) is compared with the unsharded program's output. The report
// has one line per output:
//
//   output #0 tensor<8x16xf32> on @tp [R]: max relative error 1.2e-07
//   (tolerance 1.0e-04) ok
//
// Depends on LLVM Support only, never on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SUPPORT_OUTPUTCHECK_H
#define DTENSOR_SUPPORT_OUTPUTCHECK_H

#include "dtensor/Support/EntryLayouts.h"
#include "dtensor/Support/HostTensor.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace mlir::dtensor {

/// The maximum relative error of `got` against `want`:
/// max|a - b| / max(max|b|, 1e-30).
double relativeError(const HostTensor &got, const HostTensor &want);

/// Reads world rank `rank`'s local part of output `index`.
using LocalOutputReader =
    llvm::function_ref<llvm::Expected<HostTensor>(size_t index, int64_t rank)>;

/// Reassembles every output of `layouts` from what `read` returns and, with
/// `expected` (one tensor per output), compares each copy with it, writing
/// the report to `os`. Outputs marked in `undefined` are reported and
/// skipped. `globals`, when given, receives each output's first copy (an
/// empty tensor for skipped ones). Returns whether every compared copy is
/// within `tolerance`; an error if the parts cannot be read or do not fit
/// the layout.
llvm::Expected<bool> checkOutputs(const EntryLayouts &layouts,
                                  const std::vector<bool> &undefined,
                                  const std::vector<HostTensor> *expected,
                                  double tolerance, LocalOutputReader read,
                                  llvm::raw_ostream &os,
                                  std::vector<HostTensor> *globals = nullptr);

} // namespace mlir::dtensor

#endif // DTENSOR_SUPPORT_OUTPUTCHECK_H
