"""What the GPU benchmarks share to run dtensor artifacts from Python
(bench/gpu_rank/gpu_rank.py, bench/gpu_overlap/gpu_overlap.py): the CUDA
runtime library with its C signatures, an artifact's entry called through
its C interface on torch tensors (memref descriptors built once per call
site), views of the results, CUDA graphs of a call, CUDA-event timing, host
time per launch and a CUPTI trace. torch is
imported where it is used, so that scripts importing this module run their
--help and dry runs without it.
"""
import ctypes
import json
import os


def load_runtime(directory):
    """libdtensor_runtime_cuda.so from `directory`, with the signatures of
    the entry points the benchmarks call."""
    runtime = ctypes.CDLL(os.path.join(directory, "libdtensor_runtime_cuda.so"),
                          mode=ctypes.RTLD_GLOBAL)
    runtime.dtensor_rt_context.restype = ctypes.c_void_p
    runtime.dtensor_rt_cuda_stream.restype = ctypes.c_void_p
    runtime.dtensor_rt_cuda_stream.argtypes = [ctypes.c_void_p]
    runtime.dtensor_rt_graph_end.restype = ctypes.c_void_p
    runtime.dtensor_rt_graph_end.argtypes = [ctypes.c_void_p]
    runtime.dtensor_rt_graph_begin.argtypes = [ctypes.c_void_p]
    runtime.dtensor_rt_graph_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    runtime.dtensor_rt_graph_destroy.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    runtime.dtensor_rt_graph_describe.restype = ctypes.c_int64
    runtime.dtensor_rt_graph_describe.argtypes = [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64]
    runtime.dtensor_rt_attention_last.restype = ctypes.c_int32
    runtime.dtensor_rt_cuda_peak_bytes.restype = ctypes.c_uint64
    runtime.dtensor_rt_cuda_peak_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    runtime.dtensor_rt_matmul_best_ms.restype = ctypes.c_float
    runtime.dtensor_rt_matmul_best_ms.argtypes = [
        ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_int64,
        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
        ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32]
    runtime.dtensor_rt_buffer_free.argtypes = [ctypes.c_void_p]
    return runtime


# --- the artifact's C interface -------------------------------------------

_MEMREF_TYPES = {}


def memref_type(rank):
    if rank in _MEMREF_TYPES:
        return _MEMREF_TYPES[rank]

    class MemRef(ctypes.Structure):
        _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                    ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * rank),
                    ("strides", ctypes.c_int64 * rank)]
    _MEMREF_TYPES[rank] = MemRef
    return MemRef


def descriptor(t):
    """The memref descriptor of a tensor or a strided view (data_ptr is the
    view's first element)."""
    d = memref_type(t.dim())()
    d.allocated = d.aligned = t.data_ptr()
    d.offset = 0
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        d.sizes[i], d.strides[i] = s, st
    return d


class Artifact:
    def __init__(self, path, runtime):
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        self.lib.dtensor_artifact_manifest.restype = ctypes.c_char_p
        self.manifest = json.loads(self.lib.dtensor_artifact_manifest())
        self.entry = getattr(self.lib, "_mlir_ciface_" + self.manifest["entry"])
        self.entry.restype = None
        self.rt = runtime

    def prepare(self, args, result_shapes):
        return Call(self, args, result_shapes)

    def start_runtime(self, who):
        """Starts the runtime (one per process: the first artifact's
        dtensor_artifact_init, its communicators apart from PyTorch's, the
        meshes it registers); returns the context and the compute stream as
        a torch stream. Exits with "<who>: ..." if the runtime fails."""
        import sys
        import torch
        argc = ctypes.c_int(0)
        if self.lib.dtensor_artifact_init(ctypes.byref(argc), None) != 0:
            sys.exit(f"{who}: dtensor_artifact_init failed")
        ctx = ctypes.c_void_p(self.rt.dtensor_rt_context())
        stream = torch.cuda.ExternalStream(self.rt.dtensor_rt_cuda_stream(ctx))
        return ctx, stream


class Call:
    """One call of an artifact's entry on fixed arguments: descriptors built
    once, so that a call costs the program's own host time only."""

    def __init__(self, art, args, result_shapes):
        fields = [(f"r{i}", memref_type(len(shape))) for i, shape in
                  enumerate(result_shapes)]
        Results = type("Results", (ctypes.Structure,), {"_fields_": fields})
        self.results = Results()
        self.count = len(result_shapes)
        self.descs = [descriptor(a) for a in args]
        self.pointers = [ctypes.byref(self.results)] + [
            ctypes.byref(d) for d in self.descs]
        self.entry = art.entry
        self.rt = art.rt

    def __call__(self):
        self.entry(*self.pointers)

    def outputs(self):
        return [getattr(self.results, f"r{i}") for i in range(self.count)]

    # The allocated pointer of a result the program did not allocate: a
    # constant (a memref.global, as MLIR's memref lowering marks it).
    GLOBAL_ALLOCATED = 0xdeadbeef

    def free(self):
        """Releases the buffers the call allocated, once each: a result may
        be an argument passed through (a gradient that is its seed), a
        constant, or share its buffer with another result (as the
        launcher's MemRefCall does)."""
        arguments = {d.allocated for d in self.descs}
        released = set()
        for r in self.outputs():
            ptr = r.allocated
            if (not ptr or ptr in arguments or ptr == self.GLOBAL_ALLOCATED
                    or ptr in released):
                continue
            released.add(ptr)
            self.rt.dtensor_rt_buffer_free(r.allocated)


def as_tensor(desc, shape, dtype):
    """A torch view of a result descriptor (no copy)."""
    import torch

    class View:
        pass
    v = View()
    wide = dtype == torch.float32
    v.__cuda_array_interface__ = {
        "shape": tuple(shape), "typestr": "<f4" if wide else "<i2",
        "data": (desc.aligned + desc.offset * (4 if wide else 2), False),
        "version": 2}
    t = torch.as_tensor(v, device="cuda")
    return t.view(dtype) if dtype != torch.float32 else t


# --- timing -------------------------------------------------------------------

def median_ms(fn, iters, warmup=3, after=None, before=None):
    """Median of `iters` CUDA-event timings of fn() on the current stream,
    after `warmup` calls; after() runs after each call and before() before
    each, outside the timing (several ranks: a barrier, so that every
    timing starts with the ranks together)."""
    import torch
    for _ in range(warmup):
        fn()
        if after:
            after()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True),
               torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for a, b in events:
        if before:
            before()
        a.record()
        fn()
        b.record()
        if after:
            after()
    torch.cuda.synchronize()
    xs = sorted(a.elapsed_time(b) for a, b in events)
    return xs[len(xs) // 2]


def capture_graph(runtime, ctx, call):
    """The whole of call() as one CUDA graph of the compute stream: the
    graph, its node count and dtensor_rt_graph_describe's text."""
    runtime.dtensor_rt_graph_begin(ctx)
    call()
    graph = runtime.dtensor_rt_graph_end(ctx)
    text = ctypes.create_string_buffer(8192)
    nodes = runtime.dtensor_rt_graph_describe(ctx, graph, text, len(text))
    return graph, nodes, text.value.decode(errors="replace")


def launch_batch_us(launch):
    """Host µs per launch() in the steady state of a loop (the GPU busy, the
    launch queue short): 5 launches timed after an untimed one. 50 in a
    row can fill the launch queue (the host then waits for the GPU); a
    launch on an idle stream pays a wake-up (36 against 6 us for the MLP's
    graph on the H100)."""
    import time
    import torch
    torch.cuda.synchronize()
    launch()
    t0 = time.perf_counter()
    for _ in range(5):
        launch()
    return (time.perf_counter() - t0) / 5 * 1e6


def profile(call, path, free=None):
    """Kernels and copies of three calls (CUPTI sees the runtime's launches
    too): a Chrome trace at `path`, and the GPU time per kernel name.
    `free` (default call.free) runs after each call."""
    free = free or call.free
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            call()
            torch.cuda.synchronize()
            free()
        torch.cuda.synchronize()
    prof.export_chrome_trace(path)
    events = [e for e in prof.key_averages() if e.device_time_total > 0]
    events.sort(key=lambda e: -e.device_time_total)
    for e in events[:12]:
        print(f"    {e.device_time_total / 3 / 1e3:8.3f} ms/call  "
              f"{e.count // 3:3d}x  {e.key[:90]}")
