//===- CuDNN.h - cuDNN's backend (graph) API, loaded at run time -*- C++ -*-===//
//
// The CUDA runtime library never links libcudnn: the first attention call
// that may use cuDNN dlopens it and calls the backend API through the table
// below. Where cuDNN is absent (or too old, or refuses a graph) attention
// runs on the runtime's own kernel (Attention.cu), so the library keeps
// loading and working on machines without cuDNN.
//
// Where the library comes from, first match wins:
//   1. $DTENSOR_CUDNN_LIBRARY, a path or a file name (only this one when
//      set: a mistyped path is an error, not a silent switch to another);
//   2. libcudnn.so.9 through the dynamic loader: a copy already loaded into
//      the process (PyTorch's pip wheel nvidia-cudnn-cu13 once torch used
//      cuDNN), LD_LIBRARY_PATH, this library's RUNPATH (the CUDA toolkit
//      of the build), the ld.so cache;
//   3. $CUDNN_PATH/lib/libcudnn.so.9 (the pip wheel's directory, the
//      variable PyTorch extensions and Transformer Engine use),
//      $CUDNN_HOME/lib64, $CUDA_HOME/lib64 and /lib, then
//      /usr/local/cuda/lib64 and /usr/local/cuda/lib.
// cuDNN 9 (cudnnGetVersion() >= 90000) is required.
//
// This file needs neither the CUDA driver nor a GPU (the descriptors of a
// graph can be built and finalized without one), so the loader and the
// graph builder (CuDNNGraph.h) are tested on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_TARGET_CUDA_RUNTIME_CUDNN_H
#define DTENSOR_LIB_TARGET_CUDA_RUNTIME_CUDNN_H

#include <cudnn_graph.h>

#include <cstddef>
#include <string>

namespace dtensor::rt::cuda {

// X(name): every cuDNN function the runtime calls.
#define DTENSOR_CUDNN_FUNCTIONS(X)                                             \
  X(cudnnGetVersion)                                                           \
  X(cudnnGetCudartVersion)                                                     \
  X(cudnnGetErrorString)                                                       \
  X(cudnnGetLastErrorString)                                                   \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnBackendCreateDescriptor)                                              \
  X(cudnnBackendDestroyDescriptor)                                             \
  X(cudnnBackendSetAttribute)                                                  \
  X(cudnnBackendGetAttribute)                                                  \
  X(cudnnBackendFinalize)                                                      \
  X(cudnnBackendExecute)

struct CudnnTable {
#define DTENSOR_CUDNN_DECLARE_POINTER(name) decltype(&::name) name = nullptr;
  DTENSOR_CUDNN_FUNCTIONS(DTENSOR_CUDNN_DECLARE_POINTER)
#undef DTENSOR_CUDNN_DECLARE_POINTER
  /// The file the loader resolved ("/usr/local/cuda/lib64/libcudnn.so.9").
  std::string path;
  /// cudnnGetVersion(): 91900 for 9.19.0.
  size_t version = 0;
};

/// The names of DTENSOR_CUDNN_FUNCTIONS, in order (for tests).
extern const char *const kCudnnFunctionNames[];
extern const size_t kCudnnFunctionCount;

/// The cuDNN table, or null with `error` set ("cannot load libcuDNN from
/// $DTENSOR_CUDNN_LIBRARY=...: ...", "... lacks cudnnBackendExecute",
/// "cuDNN 8.9.7 is too old (9 needed)"). Loads once, on the first call
/// (which also reads the variables); thread-safe.
const CudnnTable *loadCudnn(std::string &error);

/// "CUDNN_STATUS_NOT_SUPPORTED: <cuDNN's last error message>" (the message
/// only when cuDNN has one).
std::string describeCudnn(const CudnnTable &table, cudnnStatus_t status);

/// "9.19.0".
std::string formatCudnnVersion(size_t version);

} // namespace dtensor::rt::cuda

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIME_CUDNN_H
