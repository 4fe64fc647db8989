//===- Graph.cpp - CUDA graphs and other device-level entry points --------===//
//
// The compute stream, the peak of stream-ordered device memory, and CUDA
// graphs of the compute stream.
//
// dtensor_rt_graph_begin/end capture everything a program enqueues on the
// compute stream (kernels, cuBLASLt matmuls, stream-ordered allocations and
// frees, and the collectives, whose NCCL streams fork from and join back to
// the compute stream through events) into one CUDA graph; launching it
// replays the whole program with one host call.
//
// Capture mode is relaxed: the runtime's own bookkeeping calls (pointer
// attribute queries of mgpuMemFree) stay legal during the capture. What
// must not happen during a capture is a first call of a matmul shape (its
// plan is built and, with autotuning, timed with events): run the program
// once before capturing it. Allocations made by the graph and not freed in
// it (the program's results) are freed when the graph is launched again
// (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH): read the results of
// one launch before the next.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#pragma GCC visibility push(default)
#include "dtensor/Runtime/CUDARuntime.h"
#pragma GCC visibility pop

using namespace dtensor::rt::cuda;

namespace {

DeviceState &checkedDevice(void *ctx, const char *op) {
  DeviceState &dev = device(op);
  if (ctx != &dev)
    cudaFatal(op, ctx ? "context argument is not dtensor_rt_context() of "
                        "this process"
                      : "null context (dtensor_rt_init not called?)");
  return dev;
}

} // namespace

extern "C" {

void *dtensor_rt_cuda_stream(void *ctx) {
  return checkedDevice(ctx, "cuda_stream").compute;
}

uint64_t dtensor_rt_cuda_peak_bytes(void *ctx, int32_t reset) {
  const char *op = "cuda_peak_bytes";
  DeviceState &dev = checkedDevice(ctx, op);
  CUmemoryPool pool = nullptr;
  DTENSOR_CU(op, cuDeviceGetDefaultMemPool, &pool, dev.device);
  cuuint64_t high = 0;
  DTENSOR_CU(op, cuMemPoolGetAttribute, pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH,
             &high);
  if (reset) {
    cuuint64_t zero = 0;
    DTENSOR_CU(op, cuMemPoolSetAttribute, pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH,
               &zero);
  }
  return high;
}

void dtensor_rt_graph_begin(void *ctx) {
  const char *op = "graph_begin";
  DeviceState &dev = checkedDevice(ctx, op);
  if (computeStreamCapturing(op))
    cudaFatal(op, "the compute stream is already being captured "
                  "(dtensor_rt_graph_begin twice without graph_end)");
  DTENSOR_CU(op, cuStreamBeginCapture, dev.compute,
             CU_STREAM_CAPTURE_MODE_RELAXED);
}

void *dtensor_rt_graph_end(void *ctx) {
  const char *op = "graph_end";
  DeviceState &dev = checkedDevice(ctx, op);
  if (!computeStreamCapturing(op))
    cudaFatal(op, "the compute stream is not being captured "
                  "(dtensor_rt_graph_end without graph_begin)");
  CUgraph graph = nullptr;
  DTENSOR_CU(op, cuStreamEndCapture, dev.compute, &graph);
  CUgraphExec exec = nullptr;
  CUresult rc = driver(op).cuGraphInstantiateWithFlags(
      &exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
  driver(op).cuGraphDestroy(graph);
  if (rc != CUDA_SUCCESS)
    cudaFatal(op, "cuGraphInstantiateWithFlags failed: " + describe(rc));
  return exec;
}

void dtensor_rt_graph_launch(void *ctx, void *graph) {
  const char *op = "graph_launch";
  DeviceState &dev = checkedDevice(ctx, op);
  if (!graph)
    cudaFatal(op, "null graph");
  DTENSOR_CU(op, cuGraphLaunch, static_cast<CUgraphExec>(graph), dev.compute);
}

void dtensor_rt_graph_destroy(void *ctx, void *graph) {
  const char *op = "graph_destroy";
  checkedDevice(ctx, op);
  if (graph)
    DTENSOR_CU(op, cuGraphExecDestroy, static_cast<CUgraphExec>(graph));
}

} // extern "C"
