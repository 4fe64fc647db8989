//===- Errors.h - small helpers of the host-side libraries ------*- C++ -*-===//
//
// What the compiler's and the launchers' host code share to report errors
// as llvm::Error and to build paths.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SUPPORT_ERRORS_H
#define DTENSOR_SUPPORT_ERRORS_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Path.h"

#include <string>

namespace mlir::dtensor {

/// An llvm::Error that carries `message`.
inline llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// `dir`/`name` in the native path syntax.
inline std::string joinPath(llvm::StringRef dir, const llvm::Twine &name) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

} // namespace mlir::dtensor

#endif // DTENSOR_SUPPORT_ERRORS_H
