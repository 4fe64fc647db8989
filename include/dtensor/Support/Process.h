//===- Process.h - starting rank processes ----------------------*- C++ -*-===//
//
// What dtensor-run and dtensor-launch share to start ranks: running a
// command in its own process group under a timeout, and the mpirun command
// line they use. Depends on LLVM Support only, never on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SUPPORT_PROCESS_H
#define DTENSOR_SUPPORT_PROCESS_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::dtensor {

/// Exit codes of runWithTimeout besides the command's own.
constexpr int kTimedOut = -1;
constexpr int kCannotStart = -2;

/// Runs `argv` (argv[0] looked up on PATH) in its own process group and
/// waits; kills the whole group after `timeoutSeconds`. Returns the exit
/// code (128 + the signal for a killed command), kTimedOut or kCannotStart.
int runWithTimeout(const std::vector<std::string> &argv,
                   int64_t timeoutSeconds);

/// `mpirun [--allow-run-as-root] --oversubscribe --bind-to none -n N
/// <program...>`, with mpirun found on PATH (or at its path); an error says
/// how to get one. With a `sessionDir` (the job's own directory), mpirun
/// runs with TMPDIR there: Open MPI creates its session directory under
/// TMPDIR, and two jobs starting at once under one TMPDIR can race on it
/// ("mkdir ... File exists", orte_init fails).
llvm::Expected<std::vector<std::string>>
getMpirunCommand(const std::string &mpirun, int64_t ranks,
                 const std::vector<std::string> &program,
                 const std::string &sessionDir = "");

} // namespace mlir::dtensor

#endif // DTENSOR_SUPPORT_PROCESS_H
