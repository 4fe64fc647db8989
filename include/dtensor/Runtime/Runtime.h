/*===- Runtime.h - the functions compiled per-rank programs call --*- C -*-===*\
|*                                                                            *|
|* The C ABI between lowered code and a communication backend. Compiled code  *|
|* calls these symbols; the CPU backend implements them over MPI, a CUDA      *|
|* backend implements the same entry points over NCCL on streams.            *|
|*                                                                            *|
|* Buffers are MLIR unranked memrefs, which the standard lowering passes as   *|
|* two arguments: the rank and a pointer to the ranked descriptor            *|
|*   { T *allocated; T *aligned; int64_t offset;                              *|
|*     int64_t sizes[rank]; int64_t strides[rank]; }                          *|
|* Inputs may be strided; outputs are fresh contiguous (identity) buffers of  *|
|* exactly the result shape. Each collective exists once per element type:   *|
|* the suffix (_f32, _f64, _i32, _i64, _bf16, _f16: ElementTypes.def) names *|
|* it. Backends that cannot reduce 16-bit floats natively (MPI) reduce them  *|
|* in f32 and round back.                                                     *|
|*                                                                            *|
|* Meshes are numbered by the order of their dtensor.mesh ops in the module;  *|
|* the host registers them before running compiled code. A group is a mesh   *|
|* and a bit mask of mesh axes (bit i = axis i); a process's index in the     *|
|* group is its row-major coordinate over those axes.                        *|
|*                                                                            *|
|* Reduce codes follow dtensor::ReduceKind: 0 sum, 1 avg, 2 product, 3 min,   *|
|* 4 max.                                                                     *|
|*                                                                            *|
|* Errors (MPI failures, unregistered meshes, shape mismatches) print         *|
|* "dtensor runtime: rank R: <what>" to stderr and abort the whole job.       *|
\*===----------------------------------------------------------------------===*/

#ifndef DTENSOR_RUNTIME_RUNTIME_H
#define DTENSOR_RUNTIME_RUNTIME_H

#include <stdint.h>

#include "dtensor/Runtime/RuntimeABI.def"

#ifdef __cplusplus
extern "C" {
#endif

/* Host side. */

/* Initializes backend `backend` ("mpi": CPU, "nccl": CUDA); NULL or ""
 * selects $DTENSOR_RT_BACKEND, else the library's default. Returns 0 on
 * success, non-zero with a message on stderr (unknown or unavailable
 * backend, no device, failed bootstrap). */
int dtensor_rt_init(const char *backend, int *argc, char ***argv);
/* Finalizes the backend. */
void dtensor_rt_finalize(void);
int64_t dtensor_rt_world_rank(void);
int64_t dtensor_rt_world_size(void);
/* Registers mesh `mesh` of `rank` dims with sizes `shape`; `devices` (may be
 * null) lists the world rank at each row-major mesh position. Returns 0 on
 * success, non-zero (with a message on stderr) if the mesh does not fit the
 * world. */
int dtensor_rt_register_mesh(int64_t mesh, int64_t rank, const int64_t *shape,
                             const int64_t *devices);
/* Blocks until every process arrives. */
void dtensor_rt_barrier(void);

/* Buffers of the compiled entry's arguments and results, in the memory
 * compiled code works on: the GPU's (stream-ordered on the rank's compute
 * stream) for the CUDA backend, the host's for MPI. A result the compiled
 * code allocated is released with dtensor_rt_buffer_free as well. write
 * copies `bytes` from host memory into a buffer and returns when `host` may
 * be reused; read copies a buffer to host memory and returns with the data
 * there, after everything enqueued before it. */
void *dtensor_rt_buffer_alloc(int64_t bytes);
void dtensor_rt_buffer_free(void *buffer);
void dtensor_rt_buffer_write(void *buffer, const void *host, int64_t bytes);
void dtensor_rt_buffer_read(void *host, const void *buffer, int64_t bytes);
/* Returns when everything this process enqueued is done (at once on CPU
 * ranks). */
void dtensor_rt_synchronize(void);

/* Compiled code. */

/* The functions compiled code calls (RuntimeABI.def): dtensor_rt_context,
 * dtensor_rt_coord, dtensor_rt_total_size, dtensor_rt_wait. */
#define DTENSOR_RT_DECLARE_FUNCTION(ENUM, NAME, RESULT, PARAMS)                \
  RESULT dtensor_rt_##NAME PARAMS;
DTENSOR_RT_FUNCTIONS(DTENSOR_RT_DECLARE_FUNCTION)

/* The collectives, per element type, from their one description
 * (RuntimeABI.def): dtensor_rt_<name>_<T> and dtensor_rt_start_<name>_<T>,
 * which returns a handle for dtensor_rt_wait; the input must stay unchanged
 * until the wait. */
#define DTENSOR_RT_DECLARE_COLLECTIVE(T, ENUM, NAME, IMPL, PARAMS, ARGS)       \
  void dtensor_rt_##NAME##_##T(DTENSOR_RT_CTX_PARAM int64_t inRank, void *in,  \
                               int64_t outRank, void *out,                     \
                               DTENSOR_RT_UNPAREN PARAMS);                     \
  int64_t dtensor_rt_start_##NAME##_##T(DTENSOR_RT_CTX_PARAM int64_t inRank,   \
                                        void *in, int64_t outRank, void *out,  \
                                        DTENSOR_RT_UNPAREN PARAMS);
#define DTENSOR_ELEMENT_TYPE(NAME, ENUM, BYTES)                                \
  DTENSOR_RT_COLLECTIVES(DTENSOR_RT_DECLARE_COLLECTIVE, NAME)
#include "dtensor/Runtime/ElementTypes.def"

#ifdef __cplusplus
}
#endif

#endif /* DTENSOR_RUNTIME_RUNTIME_H */
