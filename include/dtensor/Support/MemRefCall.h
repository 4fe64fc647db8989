//===- MemRefCall.h - calling compiled functions on host tensors -*- C++ -*-===//
//
// Calls a function compiled with MLIR's C interface (`_mlir_ciface_<name>`:
// every tensor argument a pointer to a ranked memref descriptor
//   {allocated, aligned, offset, sizes[rank], strides[rank]},
// results through a pointer, first, to one descriptor or to a struct of
// them, all 8-byte words) in its packed form: `packed[i]` points to the
// i-th parameter. Arguments come from HostTensors and results go back into
// HostTensors; the buffers in between live in a BufferSpace: host memory
// for the JIT, a rank's device memory for a CUDA artifact.
//
// The same code serves Executable::invoke (the JIT of dtensor-run) and
// dtensor-launch (artifacts), so both pass and free buffers alike: each
// argument is a fresh copy (compiled code may write into its arguments);
// every result buffer the call allocated is released once, after every
// result is copied out, except views of the arguments and constants
// (memref.global descriptors carry 0xdeadbeef as the allocated pointer).
//
// Depends on LLVM Support only, never on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SUPPORT_MEMREFCALL_H
#define DTENSOR_SUPPORT_MEMREFCALL_H

#include "dtensor/Support/HostTensor.h"

#include "llvm/ADT/FunctionExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <functional>
#include <utility>
#include <vector>

namespace mlir::dtensor {

/// Element type and rank of each tensor argument and result.
struct CallSignature {
  std::vector<std::pair<ElementType, int64_t>> args, results;
};

/// Where a call's argument and result buffers live.
struct BufferSpace {
  std::function<void *(int64_t bytes)> allocate;
  std::function<void(void *buffer)> release;
  /// Host -> buffer.
  std::function<void(void *buffer, const void *host, int64_t bytes)> write;
  /// Buffer -> host.
  std::function<void(void *host, const void *buffer, int64_t bytes)> read;

  /// Host memory (malloc/free, memcpy).
  static BufferSpace host();
};

/// Calls `call(packed)` on copies of `args` in `space` and returns the
/// results. Checks the arguments' element types and ranks against
/// `signature`; errors name `name`.
llvm::Expected<std::vector<HostTensor>>
callPacked(llvm::StringRef name, const CallSignature &signature,
           llvm::ArrayRef<const HostTensor *> args, const BufferSpace &space,
           llvm::function_ref<llvm::Error(void **packed)> call);

} // namespace mlir::dtensor

#endif // DTENSOR_SUPPORT_MEMREFCALL_H
