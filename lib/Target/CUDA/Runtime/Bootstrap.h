//===- Bootstrap.h - world rank, size and the NCCL unique id ----*- C++ -*-===//
//
// Where a CUDA rank learns who it is and how to find the others:
//
//   launcher   rank                  size                local rank
//   dtensor    DTENSOR_RANK          DTENSOR_WORLD_SIZE  DTENSOR_LOCAL_RANK
//   torchrun   RANK                  WORLD_SIZE          LOCAL_RANK
//   mpirun     OMPI_COMM_WORLD_RANK  .._SIZE             .._LOCAL_RANK
//   srun       SLURM_PROCID          SLURM_NTASKS        SLURM_LOCALID
//
// checked in that order (the first launcher whose rank variable is set
// wins); none set: a single process, rank 0 of 1.
//
// The NCCL unique id goes from rank 0 to the others over a TCP rendezvous:
// rank 0 listens on the rendezvous address, every other rank connects
// (retrying until rank 0 listens), sends a hello with its rank and world
// size, and receives the id. Address: DTENSOR_MASTER_ADDR, else
// MASTER_ADDR, else 127.0.0.1. Port: DTENSOR_MASTER_PORT, else MASTER_PORT
// + 1 (under torchrun, MASTER_PORT itself is torch's TCPStore), else 29511.
// Every step has a deadline (DTENSOR_RENDEZVOUS_TIMEOUT seconds, default
// 120) and fails with a message naming the address, the rank and the step.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_TARGET_CUDA_RUNTIME_BOOTSTRAP_H
#define DTENSOR_LIB_TARGET_CUDA_RUNTIME_BOOTSTRAP_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace dtensor::rt::cuda {

struct LaunchEnv {
  std::string launcher = "none"; // dtensor, torchrun, mpirun, srun, none
  int64_t rank = 0;
  int64_t worldSize = 1;
  int64_t localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int port = 29511;
  double rendezvousTimeout = 120;
  /// DTENSOR_SINGLE_GPU_TEST=1: every rank on device 0, told apart by
  /// NCCL_HOSTID, talking over the loopback interface.
  bool singleGpuTest = false;
};

/// Reads the launcher's variables; false with `error` set when they are
/// malformed (not integers, rank outside 0..size-1, bad port).
bool readLaunchEnv(LaunchEnv &env, std::string &error);

/// Rank 0 sends `bytes` bytes at `data` to every other rank, which receive
/// them into `data`. False with `error` set on failure or timeout.
bool exchangeUniqueId(const LaunchEnv &env, void *data, size_t bytes,
                      std::string &error);

} // namespace dtensor::rt::cuda

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIME_BOOTSTRAP_H
