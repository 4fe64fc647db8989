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
// once before capturing it.
//
// Memory. Allocations during the capture (the program's buffers, the
// runtime's stages) do not become stream-ordered allocation nodes: they are
// blocks of the graph's own, allocated at capture time (cuMemAlloc), a
// block freed during the capture reused by a later allocation of it (at
// most twice the size asked; the capture is of one stream, so a later
// allocation's users follow the freed block's last users in the graph).
// A launch then replays kernels, matmuls and collectives only: allocation
// and free nodes cost about 0.3 µs of host time each per cuGraphLaunch (a
// transformer layer's graph had 19 of them among 35 nodes). The results
// are blocks of the graph too: every launch writes the same ones (read the
// results of one launch before the next), freeing them does nothing, and
// they go with dtensor_rt_graph_destroy, which waits for the compute
// stream.
//
// Memset nodes (cuBLASLt and cuDNN zero a workspace counter before their
// kernels) become kernel nodes before instantiation: see replaceMemsets.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "Kernels.h"

#pragma GCC visibility push(default)
#include "dtensor/Runtime/CUDARuntime.h"
#pragma GCC visibility pop

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using namespace dtensor::rt::cuda;

namespace {

/// The device blocks of one graph.
struct GraphBlocks {
  std::vector<CUdeviceptr> blocks;
  std::unordered_map<CUdeviceptr, size_t> sizes;
  /// Blocks freed during the capture, by size (reusable by it).
  std::multimap<size_t, CUdeviceptr> unused;
  std::unordered_set<CUdeviceptr> isUnused;
  /// What the graph holds (dtensor_rt_graph_describe).
  std::string summary;
  int64_t nodes = 0;
};

struct GraphMemory {
  std::mutex mutex;
  /// The graph being captured, if any.
  std::unique_ptr<GraphBlocks> capturing;
  std::unordered_map<CUgraphExec, std::unique_ptr<GraphBlocks>> graphs;
  /// Every block of every graph, captured or being captured.
  std::unordered_set<CUdeviceptr> owned;
};

GraphMemory &graphMemory() {
  static GraphMemory memory;
  return memory;
}

constexpr size_t kBlockAlignment = 256;

DeviceState &checkedDevice(void *ctx, const char *op) {
  DeviceState &dev = device(op);
  if (ctx != &dev)
    cudaFatal(op, ctx ? "context argument is not dtensor_rt_context() of "
                        "this process"
                      : "null context (dtensor_rt_init not called?)");
  return dev;
}

const char *nodeTypeName(CUgraphNodeType type) {
  switch (type) {
  case CU_GRAPH_NODE_TYPE_KERNEL:
    return "kernel";
  case CU_GRAPH_NODE_TYPE_MEMCPY:
    return "memcpy";
  case CU_GRAPH_NODE_TYPE_MEMSET:
    return "memset";
  case CU_GRAPH_NODE_TYPE_HOST:
    return "host";
  case CU_GRAPH_NODE_TYPE_GRAPH:
    return "child graph";
  case CU_GRAPH_NODE_TYPE_EMPTY:
    return "empty";
  case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    return "event wait";
  case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    return "event record";
  case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    return "allocation";
  case CU_GRAPH_NODE_TYPE_MEM_FREE:
    return "free";
  default:
    return "other";
  }
}

/// The nodes of `graph`.
std::vector<CUgraphNode> graphNodes(CUgraph graph, const char *op) {
  size_t n = 0;
  DTENSOR_CU(op, cuGraphGetNodes, graph, nullptr, &n);
  std::vector<CUgraphNode> nodes(n);
  if (n)
    DTENSOR_CU(op, cuGraphGetNodes, graph, nodes.data(), &n);
  nodes.resize(n);
  return nodes;
}

/// Replaces every memset node of `graph` with a kernel node doing the same
/// (Kernels.cpp's fill), on the same edges; returns how many. cuBLASLt and
/// cuDNN zero a 4-byte workspace counter before many of their kernels,
/// and each memset node costs about 1.5-2 µs of host time per
/// cuGraphLaunch on the H100 where a kernel node costs next to nothing
/// (bench/gpu_rank/graph_nodes.py: torch graphs of 9 kernels 7.4 µs, with 6
/// memsets among them 19.1 µs; our layer's graph 15.7 µs, 4.4 replaced).
int replaceMemsets(CUgraph graph, const char *op) {
  std::vector<CUgraphNode> nodes = graphNodes(graph, op);
  int replaced = 0;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type;
    DTENSOR_CU(op, cuGraphNodeGetType, node, &type);
    if (type != CU_GRAPH_NODE_TYPE_MEMSET)
      continue;
    CUDA_MEMSET_NODE_PARAMS params{};
    DTENSOR_CU(op, cuGraphMemsetNodeGetParams, node, &params);
    CUgraphNode fill = addFillNode(graph, params, op);
    // The memset's edges, with their data, moved to the fill.
    size_t in = 0, out = 0;
    DTENSOR_CU(op, cuGraphNodeGetDependencies, node, nullptr, nullptr, &in);
    DTENSOR_CU(op, cuGraphNodeGetDependentNodes, node, nullptr, nullptr, &out);
    std::vector<CUgraphNode> before(in), after(out);
    std::vector<CUgraphEdgeData> inData(in), outData(out);
    if (in)
      DTENSOR_CU(op, cuGraphNodeGetDependencies, node, before.data(),
                 inData.data(), &in);
    if (out)
      DTENSOR_CU(op, cuGraphNodeGetDependentNodes, node, after.data(),
                 outData.data(), &out);
    std::vector<CUgraphNode> self(std::max(in, out), fill);
    if (in)
      DTENSOR_CU(op, cuGraphAddDependencies, graph, before.data(), self.data(),
                 inData.data(), in);
    if (out)
      DTENSOR_CU(op, cuGraphAddDependencies, graph, self.data(), after.data(),
                 outData.data(), out);
    DTENSOR_CU(op, cuGraphDestroyNode, node);
    ++replaced;
  }
  return replaced;
}

/// "16 nodes (11 kernel, 5 memset), 15 edges, a straight line; kernels:
/// name xN, ...": what a launch of `graph` replays. A graph is a straight
/// line when no node has more than one predecessor or successor (a
/// capture of the compute stream alone is).
std::string summarize(CUgraph graph, int64_t &numNodes, const char *op) {
  const DriverTable &d = driver(op);
  std::vector<CUgraphNode> nodes = graphNodes(graph, op);
  size_t n = nodes.size();
  size_t e = 0;
  DTENSOR_CU(op, cuGraphGetEdges, graph, nullptr, nullptr, nullptr, &e);
  std::vector<CUgraphNode> from(e), to(e);
  // With the edges' data: without, a programmatic edge fails the query.
  std::vector<CUgraphEdgeData> data(e);
  if (e)
    DTENSOR_CU(op, cuGraphGetEdges, graph, from.data(), to.data(), data.data(),
               &e);
  std::map<std::string, int> types, kernels;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type;
    DTENSOR_CU(op, cuGraphNodeGetType, node, &type);
    ++types[nodeTypeName(type)];
    if (type != CU_GRAPH_NODE_TYPE_KERNEL)
      continue;
    CUDA_KERNEL_NODE_PARAMS params{};
    const char *name = nullptr;
    if (d.cuGraphKernelNodeGetParams(node, &params) != CUDA_SUCCESS ||
        d.cuFuncGetName(&name, params.func) != CUDA_SUCCESS || !name)
      name = "?";
    ++kernels[name];
  }
  std::unordered_map<CUgraphNode, int> in, out;
  for (size_t i = 0; i < e; ++i) {
    ++out[from[i]];
    ++in[to[i]];
  }
  bool line = true;
  for (auto &[node, count] : in)
    line &= count <= 1;
  for (auto &[node, count] : out)
    line &= count <= 1;
  std::string s = std::to_string(n) + " nodes (";
  const char *sep = "";
  for (auto &[type, count] : types) {
    s += sep + std::to_string(count) + " " + type;
    sep = ", ";
  }
  s += "), " + std::to_string(e) + " edges, " +
       (line ? "a straight line" : "branching") + "; kernels:";
  if (kernels.empty())
    s += " none";
  sep = " ";
  for (auto &[name, count] : kernels) {
    s += sep + name + (count > 1 ? " x" + std::to_string(count) : "");
    sep = ", ";
  }
  numNodes = static_cast<int64_t>(n);
  return s;
}

} // namespace

void *dtensor::rt::cuda::captureAllocate(size_t bytes, const char *op) {
  GraphMemory &memory = graphMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  if (!memory.capturing)
    return nullptr;
  GraphBlocks &graph = *memory.capturing;
  size_t size = (std::max<size_t>(bytes, 1) + kBlockAlignment - 1) /
                kBlockAlignment * kBlockAlignment;
  auto it = graph.unused.lower_bound(size);
  if (it != graph.unused.end() && it->first <= 2 * size) {
    CUdeviceptr block = it->second;
    graph.unused.erase(it);
    graph.isUnused.erase(block);
    return reinterpret_cast<void *>(block);
  }
  CUdeviceptr block = 0;
  CUresult rc = driver(op).cuMemAlloc(&block, size);
  if (rc != CUDA_SUCCESS)
    cudaFatal(op,
              "cuMemAlloc of " + std::to_string(size) +
                  " bytes for a graph being captured failed: " + describe(rc));
  graph.blocks.push_back(block);
  graph.sizes[block] = size;
  memory.owned.insert(block);
  return reinterpret_cast<void *>(block);
}

bool dtensor::rt::cuda::captureRelease(void *ptr) {
  GraphMemory &memory = graphMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  auto block = reinterpret_cast<CUdeviceptr>(ptr);
  if (!memory.owned.count(block))
    return false;
  if (memory.capturing) {
    GraphBlocks &graph = *memory.capturing;
    auto it = graph.sizes.find(block);
    if (it != graph.sizes.end() && graph.isUnused.insert(block).second)
      graph.unused.emplace(it->second, block);
  }
  return true;
}

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
  {
    GraphMemory &memory = graphMemory();
    std::lock_guard<std::mutex> lock(memory.mutex);
    memory.capturing = std::make_unique<GraphBlocks>();
  }
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
  // DTENSOR_RT_GRAPH_MEMSETS=keep leaves them (for comparisons).
  const char *keep = std::getenv("DTENSOR_RT_GRAPH_MEMSETS");
  int memsets =
      keep && std::string(keep) == "keep" ? 0 : replaceMemsets(graph, op);
  int64_t nodes = 0;
  std::string summary = summarize(graph, nodes, op);
  if (memsets)
    summary += "; " + std::to_string(memsets) +
               " memset node(s) replaced by fill kernels";
  if (const char *path = std::getenv("DTENSOR_RT_GRAPH_DOT"); path && *path) {
    CUresult dot = driver(op).cuGraphDebugDotPrint(
        graph, path, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE);
    if (dot != CUDA_SUCCESS)
      cudaFatal(op, std::string("DTENSOR_RT_GRAPH_DOT: cannot write ") + path +
                        ": " + describe(dot));
  }
  CUgraphExec exec = nullptr;
  CUresult rc = driver(op).cuGraphInstantiateWithFlags(
      &exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
  driver(op).cuGraphDestroy(graph);
  if (rc != CUDA_SUCCESS)
    cudaFatal(op, "cuGraphInstantiateWithFlags failed: " + describe(rc));
  GraphMemory &memory = graphMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  memory.capturing->unused.clear();
  memory.capturing->isUnused.clear();
  memory.capturing->summary = std::move(summary);
  memory.capturing->nodes = nodes;
  memory.graphs[exec] = std::move(memory.capturing);
  return exec;
}

void dtensor_rt_graph_launch(void *ctx, void *graph) {
  const char *op = "graph_launch";
  DeviceState &dev = checkedDevice(ctx, op);
  if (!graph)
    cudaFatal(op, "null graph");
  DTENSOR_CU(op, cuGraphLaunch, static_cast<CUgraphExec>(graph), dev.compute);
}

int64_t dtensor_rt_graph_describe(void *ctx, void *graph, char *text,
                                  int64_t capacity) {
  const char *op = "graph_describe";
  checkedDevice(ctx, op);
  GraphMemory &memory = graphMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  auto it = memory.graphs.find(static_cast<CUgraphExec>(graph));
  if (it == memory.graphs.end())
    cudaFatal(op, "not a graph of dtensor_rt_graph_end (or destroyed)");
  const std::string &summary = it->second->summary;
  if (text && capacity > 0) {
    size_t n = std::min(summary.size(), size_t(capacity - 1));
    std::memcpy(text, summary.data(), n);
    text[n] = '\0';
  }
  return it->second->nodes;
}

void dtensor_rt_graph_destroy(void *ctx, void *graph) {
  const char *op = "graph_destroy";
  DeviceState &dev = checkedDevice(ctx, op);
  if (!graph)
    return;
  auto exec = static_cast<CUgraphExec>(graph);
  DTENSOR_CU(op, cuGraphExecDestroy, exec);
  std::unique_ptr<GraphBlocks> blocks;
  {
    GraphMemory &memory = graphMemory();
    std::lock_guard<std::mutex> lock(memory.mutex);
    auto it = memory.graphs.find(exec);
    if (it == memory.graphs.end())
      return;
    blocks = std::move(it->second);
    memory.graphs.erase(it);
    for (CUdeviceptr block : blocks->blocks)
      memory.owned.erase(block);
  }
  // Launches of the graph may still run on the compute stream.
  DTENSOR_CU(op, cuStreamSynchronize, dev.compute);
  for (CUdeviceptr block : blocks->blocks)
    DTENSOR_CU(op, cuMemFree, block);
}

} // extern "C"
