//===- NCCLBackend.h - the CUDA communication backend -----------*- C++ -*-===//

#ifndef DTENSOR_LIB_TARGET_CUDA_RUNTIME_NCCLBACKEND_H
#define DTENSOR_LIB_TARGET_CUDA_RUNTIME_NCCLBACKEND_H

#include "CommBackend.h"

namespace dtensor::rt {

/// Bootstraps from the launcher's environment (Bootstrap.h), sets up the
/// device and the world communicator and starts the watchdog; null with a
/// message on stderr on failure ("no CUDA device: ...", rendezvous errors).
std::unique_ptr<CommBackend> createNCCLBackend(int *argc, char ***argv);

} // namespace dtensor::rt

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIME_NCCLBACKEND_H
