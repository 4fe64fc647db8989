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
|* the suffix _f32, _f64, _i32 or _i64 (and _bf16, _f16 in the context ABI)  *|
|* names it.                                                                  *|
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

#ifdef __cplusplus
extern "C" {
#endif

/* The execution-context ABI (DTENSOR_RT_CONTEXT_ABI defined): backend
 * selection at init, bf16/f16 collectives, and a context argument first in
 * every collective and in dtensor_rt_wait. The CUDA runtime library
 * (dtensor_runtime_cuda) is built with it. TRANSITIONAL: the CPU library
 * keeps the previous ABI until the lowering passes the context; then this
 * macro goes away and the context ABI is the only one. */
#ifdef DTENSOR_RT_CONTEXT_ABI
#define DTENSOR_RT_CTX_PARAM void *ctx,
#else
#define DTENSOR_RT_CTX_PARAM
#endif

/* Host side. */

#ifdef DTENSOR_RT_CONTEXT_ABI
/* Initializes backend `backend` ("mpi": CPU, "nccl": CUDA); NULL or ""
 * selects $DTENSOR_RT_BACKEND, else the library's default. Returns 0 on
 * success, non-zero with a message on stderr (unknown or unavailable
 * backend, no device, failed bootstrap). */
int dtensor_rt_init(const char *backend, int *argc, char ***argv);
/* The process's execution context, passed first to every collective and to
 * dtensor_rt_wait (opaque; for the CUDA backend: device, CUcontext and the
 * rank's compute stream). Null before init. */
void *dtensor_rt_context(void);
#else
/* Initializes the backend (MPI_Init if needed). Returns 0 on success. */
int dtensor_rt_init(int *argc, char ***argv);
#endif
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

/* Compiled code. */

/* The calling process's index in the group (mesh, axesMask). */
int64_t dtensor_rt_coord(int64_t mesh, int64_t axesMask);

#define DTENSOR_RT_DECLARE_COLLECTIVES(SUFFIX)                                 \
  void dtensor_rt_all_reduce_##SUFFIX(DTENSOR_RT_CTX_PARAM                     \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t reduce);                                                         \
  void dtensor_rt_all_gather_##SUFFIX(DTENSOR_RT_CTX_PARAM                     \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t gatherDim);                                                      \
  void dtensor_rt_reduce_scatter_##SUFFIX(DTENSOR_RT_CTX_PARAM                 \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t scatterDim, int64_t reduce);                                     \
  void dtensor_rt_all_to_all_##SUFFIX(DTENSOR_RT_CTX_PARAM                     \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t splitDim, int64_t concatDim);                                    \
  /* perm: rank-1 i64 memref; group index i sends to perm[i]. */               \
  void dtensor_rt_permute_##SUFFIX(DTENSOR_RT_CTX_PARAM                        \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t permRank, void *perm);                                           \
  void dtensor_rt_broadcast_##SUFFIX(DTENSOR_RT_CTX_PARAM                      \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t root);                                                           \
  /* Asynchronous forms: same arguments, return a handle for                   \
   * dtensor_rt_wait. The input must stay unchanged until the wait. */         \
  int64_t dtensor_rt_start_all_reduce_##SUFFIX(DTENSOR_RT_CTX_PARAM            \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t reduce);                                                         \
  int64_t dtensor_rt_start_all_gather_##SUFFIX(DTENSOR_RT_CTX_PARAM            \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t gatherDim);                                                      \
  int64_t dtensor_rt_start_reduce_scatter_##SUFFIX(DTENSOR_RT_CTX_PARAM        \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t scatterDim, int64_t reduce);                                     \
  int64_t dtensor_rt_start_all_to_all_##SUFFIX(DTENSOR_RT_CTX_PARAM            \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t splitDim, int64_t concatDim);                                    \
  int64_t dtensor_rt_start_permute_##SUFFIX(DTENSOR_RT_CTX_PARAM               \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t permRank, void *perm);                                           \
  int64_t dtensor_rt_start_broadcast_##SUFFIX(DTENSOR_RT_CTX_PARAM             \
      int64_t inRank, void *in,                                                \
      int64_t outRank, void *out, int64_t mesh, int64_t axesMask,              \
      int64_t root);

DTENSOR_RT_DECLARE_COLLECTIVES(f32)
DTENSOR_RT_DECLARE_COLLECTIVES(f64)
DTENSOR_RT_DECLARE_COLLECTIVES(i32)
DTENSOR_RT_DECLARE_COLLECTIVES(i64)
#ifdef DTENSOR_RT_CONTEXT_ABI
DTENSOR_RT_DECLARE_COLLECTIVES(bf16)
DTENSOR_RT_DECLARE_COLLECTIVES(f16)
#endif

/* Completes the asynchronous collective `handle`; its output is valid after
 * this returns. Each handle is waited exactly once. */
void dtensor_rt_wait(DTENSOR_RT_CTX_PARAM int64_t handle);

#ifdef __cplusplus
}
#endif

#endif /* DTENSOR_RUNTIME_RUNTIME_H */
