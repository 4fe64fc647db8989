//===- CUDARegistry.cpp - the backends of dtensor_runtime_cuda ------------===//
//
// The backend registry of the CUDA runtime library: NCCL only (MPI stays
// out of this library; the CPU library dtensor_runtime has it).
//
//===----------------------------------------------------------------------===//

#include "CommBackend.h"
#include "NCCLBackend.h"

#include <cstdio>

namespace dtensor::rt {

const char *defaultBackendName() { return "nccl"; }

std::unique_ptr<CommBackend> createBackend(const std::string &name, int *argc,
                                           char ***argv) {
  if (name == "nccl")
    return createNCCLBackend(argc, argv);
  std::fprintf(stderr,
               "dtensor runtime: rank ?: init: unknown backend '%s' (this "
               "library, dtensor_runtime_cuda, has: nccl; the CPU backend "
               "'mpi' is in dtensor_runtime)\n",
               name.c_str());
  return nullptr;
}

} // namespace dtensor::rt
