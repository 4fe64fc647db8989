//===- MPIRegistry.cpp - the backends of dtensor_runtime ------------------===//
//
// The backend registry of the CPU runtime library: MPI only. The CUDA
// library (dtensor_runtime_cuda) links lib/Target/CUDA/Runtime/
// CUDARegistry.cpp instead.
//
//===----------------------------------------------------------------------===//

#include "CommBackend.h"

#include <cstdio>

namespace dtensor::rt {

const char *defaultBackendName() { return "mpi"; }

std::unique_ptr<CommBackend> createBackend(const std::string &name, int *argc,
                                           char ***argv) {
  if (name == "mpi")
    return createMPIBackend(argc, argv);
  std::fprintf(stderr,
               "dtensor runtime: rank ?: init: unknown backend '%s' (this "
               "library, dtensor_runtime, has: mpi)\n",
               name.c_str());
  return nullptr;
}

} // namespace dtensor::rt
