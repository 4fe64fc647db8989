//===- Passes.td - passes of the CUDA target ---------------*- tablegen -*-===//
//
// The project passes of the CUDA lowering (docs/cuda-target.md); the
// pipeline that strings them together with the upstream GPU passes is
// buildCUDALoweringPipeline (CUDAPipeline.h).
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_TARGET_CUDA_PASSES_TD
#define DTENSOR_TARGET_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def CUDAFuseElementwisePass
    : Pass<"dtensor-cuda-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "fuses elementwise linalg ops on tensors into one kernel each";
  let description = [{
    Upstream elementwise fusion (producer into consumer, on tensors, before
    bufferization), restricted so that contractions stay recognisable by
    `dtensor-cuda-matmul-to-runtime`: nothing is fused into or out of an op
    that implements a contraction (linalg.matmul, batch_matmul, a generic
    matmul), and fills are left alone (they fold into the matmul call).
    Named elementwise ops (all loops parallel, identity maps, not a fill or
    a copy: autodiff's `linalg.add` of gradient contributions) are
    generalized first, since upstream fusion takes generics only. Then
    sibling generics are merged: two elementwise generics in one block with
    the same static loop sizes and iterator types, reading one input value
    both, every operand of the later one defined before the earlier one,
    become one generic in the earlier one's place with the inputs of both
    (one operand per value and map), both inits and results, and the two
    bodies one after the other, CSE'd (a backward's gradients of several
    inputs of one forward body read the same operands: one kernel).
    Producer-consumer fusion and sibling merges alternate until neither
    changes anything. Last, the elementwise consumer of a row reduction
    (parallel then reduction loops; the consumer over the same loop sizes)
    moves right after it where its operands are defined before it
    (tensor.empty inits move along), so that `dtensor-cuda-map-to-gpu` runs
    both in one kernel.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def CUDASplitReductionPass
    : Pass<"dtensor-cuda-split-reduction", "::mlir::func::FuncOp"> {
  let summary = "column reductions with few outputs -> partial sums and a row reduction";
  let description = [{
    On tensors, after `dtensor-cuda-fuse-elementwise`: a reduction over an
    outer dimension of its input (a column sum: the gradient of an RMSNorm's
    gain or of a bias, summed over the tokens) runs as one thread per output
    element (`dtensor-cuda-map-to-gpu` puts its reduction loop innermost),
    and with few outputs (4096 for a gain) that is a few blocks on a GPU of
    more than a hundred SMs, each thread folding thousands of rows in turn.
    Such a reduction, where

    1. it is a linalg op on tensors with one init, one reduction loop that
       is not its innermost loop, and static loop sizes;
    2. it has fewer than `min-threads` outputs and reduces at least 256
       elements into each;
    3. upstream `linalg::splitReduction` takes it (a combiner of known
       identity, the reduced dimension a plain dimension of each input);

    is split by upstream `linalg::splitReduction` into `R` partial sums of
    contiguous runs of the reduced dimension (a fill of the partials and a
    generic with one more parallel loop: `R` times the threads) and the
    reduction of the partials, which are laid out last (`[outputs..., R]`)
    so that it is a row reduction, a warp per output. `R` is the largest
    power of two dividing the reduced size with at least 8 elements per
    partial, at most 64, and `R` times the outputs at most `min-threads` * 4
    (never below 2; nothing is split otherwise). The sum of the partials
    re-associates the reduction (as any parallel reduction does).
  }];
  let options = [
    Option<"minThreads", "min-threads", "int64_t", /*default=*/"65536",
           "split reductions with fewer outputs than this">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def CUDAFuseMatmulEpiloguePass
    : Pass<"dtensor-cuda-fuse-matmul-epilogue", "::mlir::func::FuncOp"> {
  let summary = "residual and bias adds of matmul results -> the matmul's epilogue";
  let description = [{
    On tensors, before `dtensor-cuda-fuse-elementwise`: a `linalg.generic`
    computing `v + c` (or `c + v`) elementwise, where

    1. its init and result have one ranked tensor type, `c` is read with the
       identity map, all its loops are parallel, and `v` is either of that
       type read with the identity map (a residual) or rank 1 of the
       output's last size read along the last loop only (a bias of the
       output's columns, nn.Linear's);
    2. its body is `yield addf(in0, in1)` in the element type, or
       `yield truncf(addf(extf in0, extf in1))` through a wider float;
    3. `c` is the only result of a contraction in the same block, used by
       this add only, whose init is a `linalg.fill` of zero;

    (or a `linalg.add` of such operands: autodiff sums gradient
    contributions with it) becomes that contraction accumulating onto `v`,
    in the add's place: onto `v` itself where `v` is computed by an op
    (not a function argument) and read by this add only (the sum of two
    products, a backward's dX = dA.W1^T + dB.W3^T: the second matmul
    accumulates into the first's buffer in place, accumulate = 1, beta =
    1), else onto `bufferization.alloc_tensor() copy(%v)` for a residual
    (`v` itself is never written), onto `linalg.broadcast` of `v` over the
    rows for a bias. `dtensor-cuda-matmul-to-runtime` then folds the copy or the
    broadcast into the call (`dtensor_rt_matmul_add_<T>`: cuBLASLt reads the
    residual in its epilogue, beta = 1; `dtensor_rt_matmul_bias_<T>`:
    cuBLASLt's bias epilogue). The sum is taken in f32 on the accumulator
    and rounded once. Anything else is left alone.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def CUDAFuseAttentionPass
    : Pass<"dtensor-cuda-fuse-attention", "::mlir::ModuleOp"> {
  let summary = "attention chains on tensors (and their backward) -> dtensor_rt_attention_* (fused)";
  let description = [{
    Recognises softmax(scale * q k^T [causal mask]) v written with linalg
    ops on tensors, before softmax is decomposed:

    1. scores: a contraction into a zero fill, [b?, h, s, t] from
       q [b?, s, h, e] and k [b?, t, h, e] (any loop order; `b` optional);
    2. optionally an elementwise op of the scores alone: x (or extf x)
       times a constant (or divided by one), optionally
       `select(t > s, -inf, ...)` on the last two loop indices (causal);
    3. `linalg.softmax` over the last dim;
    4. optionally an elementwise truncf/extf of the probabilities;
    5. a contraction into a zero fill, o [b?, s, h, e] from the
       probabilities and v [b?, t, h, e];

    every intermediate used once, q, k, v and o of one element type, bf16
    or f16, static shapes, head dim e 64 or 128, as many queries as keys
    under a causal mask. The chain becomes one call of
    `dtensor_rt_attention_<T>(ctx, q, k, v, o, scale, causal)` (the
    runtime's flash-attention kernel: no [h, s, t] scores in memory), q, k
    and v handed over by `bufferization.to_buffer` (read-only, any layout),
    o a fresh buffer returned by `bufferization.to_tensor` (restrict).

    Training: when the probabilities (the softmax's result and its cast)
    have other uses, they must be exactly the backward dtensor-autodiff
    emits for the chain, in the same block after p v, its intermediates
    used only within it:

    6. dV [b?, t, h, e] = p^T dO: a contraction of the probabilities p v
       takes and dO [b?, s, h, e] (the output's gradient, o's type);
    7. dP [b?, h, s, t] = dO v^T: a contraction of the same dO and v,
       optionally cast (extf);
    8. rowsum(dP * p) over t into a zero fill, and the softmax backward
       p * (dP - rowsum) (p the softmax's result);
    9. the backward of step 2: dS times the same scale (a constant
       expression, or a division by one), masked by
       `select(t > s, 0, ...)` exactly when the forward is causal,
       optionally truncated (absent when step 2 is);
    10. dQ = dS k and dK = dS^T q: contractions into zero fills, of q's
        and k's types.

    Forward and backward then become
    `dtensor_rt_attention_stats_<T>(ctx, q, k, v, o, stats, scale, causal)`
    (the same forward, also writing the softmax statistics, logsumexp of
    each row, f32 [b?, h, s], a fresh buffer) at p v, and one call of
    `dtensor_rt_attention_backward_<T>(ctx, q, k, v, o, dO, stats, dq, dk,
    dv, scale, causal)` before the backward's first op, writing fresh dQ,
    dK, dV: neither the scores nor their gradient are materialized. A
    forward whose probabilities have other uses than such a backward stays
    materialized, with a remark on the softmax naming what did not match.
    Chains that do not match are left alone: the materialized ops compute
    the same values.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def CUDAMatmulToRuntimePass
    : Pass<"dtensor-cuda-matmul-to-runtime", "::mlir::ModuleOp"> {
  let summary = "matmuls on buffers -> dtensor_rt_matmul_<T> calls (cuBLASLt)";
  let description = [{
    Replaces every matmul on memrefs (after bufferization) with a call of
    `dtensor_rt_matmul_<T>(ctx, A, B, C, accumulate)` (T: bf16, f16, f32;
    operands unranked memrefs; C = A·B or C += A·B). Recognised: any linalg
    op implementing a contraction (linalg.matmul, batch_matmul,
    batch_reduce_matmul, with or without transposing indexing_maps, and
    any linalg.generic with a multiply-add body) with one or more m, n and
    k dimensions and any number of batch dimensions, each operand indexed
    by exactly the dimensions of its roles (A: batch, m, k; B: batch, k, n;
    C: batch, m, n), in any order. The call takes
    C[batch, m, n] (+)= A[batch, m, k] · B[batch, k, n]: each role's
    dimensions are taken in one order by all operands (C's, else the
    order most operands have them in), and in each operand where they are
    consecutive in that order and the strides allow, they are collapsed
    into one by `memref.collapse_shape` (the weight gradient of a Linear
    on [batch, seq, hidden] activations reduces over batch and seq: two k
    dimensions, one after the collapse); the operand is then passed as a
    `memref.transpose` view in the call's order (the runtime takes A and B
    strided: a transposed operand is a column-major matrix for cuBLASLt,
    any batch stride is a strided batch, so batch dimensions may sit
    anywhere). An input whose m, n or k dimensions cannot be collapsed
    (not consecutive, in another order than the other operand's, or
    strided) is first copied into a dense buffer in the call's order by a
    `linalg.copy` (a kernel); batch dimensions that some operand cannot
    collapse (attention's heads in a [batch, seq, heads, dim] layout)
    become an `scf.for` over all but the last, one strided-batch call per
    iteration. A C laid out (batch..., n..., m...) (a weight gradient
    dW = X^T.dY into a weight stored [out, in]) is written in place by the
    call with the inputs exchanged, C = B'.A' (the plan with m and n
    swapped, taken where it needs fewer dense copies). A C that is still
    not dense row-major in (batch..., m..., n...) order gets a dense
    temporary in that order (of C's sizes, dynamic
    ones taken with `memref.dim`) and a `linalg.copy` into C's permuted
    view after the call (plus one from it before, when the product is
    accumulated onto C). A `linalg.fill` of zero into
    C that nothing reads or writes before the matmul is dropped and the call
    gets accumulate=0; otherwise accumulate=1. Where C (in (batch, m, n)
    order) is a fresh `memref.alloc` written just before the matmul by a
    `memref.copy` from an identity-layout buffer R of its type, or by a
    `linalg.broadcast` of a dense rank-1 bias over all dimensions but the
    last, n being one dimension (what `dtensor-cuda-fuse-matmul-epilogue`
    leaves), and nothing in
    between touches C, R or the bias, the copy or broadcast is dropped and
    the call is `dtensor_rt_matmul_add_<T>(ctx, A, B, R, C)` (C = A·B + R)
    or `dtensor_rt_matmul_bias_<T>(ctx, A, B, bias, C, 0)` (C = A·B +
    bias). An activation right after such a bias matmul (K static and
    non-zero) or after a plain one (C zero-filled) runs in the epilogue
    too: the next op but allocations and constants, a linalg.generic of
    identity maps reading C into a fresh allocation D of its type, where C
    has no other users, with its body either ReLU (`max(x, 0)` with
    arith.maximumf or maxnumf, also through extf/truncf) or GELU in its
    tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), however
    written (at most 32 smooth arith/math operations of the input with
    one tanh, evaluated op by op and equal to it to 1e-5 at 18 sample
    points in [-8, 8]; the erf form, off by up to 5e-4, is not taken). The call writes D with the activation
    code (1 ReLU, 2 GELU): `dtensor_rt_matmul_bias_<T>(..., activation)`
    (`CUBLASLT_EPILOGUE_RELU_BIAS`, `GELU_BIAS`) or
    `dtensor_rt_matmul_act_<T>(ctx, A, B, D, activation)` (`RELU`,
    `GELU`); the activation and C's allocation go.

    A contraction that cannot be mapped to cuBLASLt is left in place for
    the kernel path (`dtensor-cuda-map-to-gpu`), with a remark saying why
    (`not a cuBLASLt matmul: ...; lowered as a generated reduction
    kernel`), never an error: a row dot (no m and no n: softmax
    backward's sum(dy * y)), a matrix-vector product (no m or no n), an
    output broadcast along a dimension no input has, element types other
    than bf16/f16/f32 or not all equal. A matmul still on tensors is an
    error naming the op (the pass runs after bufferization).

    `ctx` is the runtime context, `dtensor_rt_context()`, fetched once per
    function; `with-context=false` leaves it out (the ABI before the
    context argument).
  }];
  let options = [
    Option<"withContext", "with-context", "bool", /*default=*/"true",
           "pass the runtime context (dtensor_rt_context()) first">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def CUDADeviceMemoryPass
    : Pass<"dtensor-cuda-device-memory", "::mlir::func::FuncOp"> {
  let summary = "puts every buffer of a bufferized program in device memory";
  let description = [{
    memref.alloc -> gpu.alloc, memref.dealloc -> gpu.dealloc (both made
    asynchronous on the rank's stream later), memref.copy -> linalg.copy
    (a kernel; a host memcpy of device pointers would fault).

    With `deallocate` (default), each allocation that does not escape
    (returned, yielded out of a region, stored, passed to a non-runtime
    call) gets a gpu.dealloc after its last use in its block; a buffer
    passed to an asynchronous collective (`dtensor_rt_start_*`) lives until
    the `dtensor_rt_wait` of the handle. Frees are stream-ordered like
    everything else, so no host synchronisation is needed. Buffers yielded
    out of loops are not freed (a known leak, as on the CPU target). Arguments are
    device pointers already. What would touch device memory from the host
    is an error naming the op: memref.alloca, and constant tensors
    (memref.get_global) used by anything but runtime calls.
  }];
  let options = [
    Option<"deallocate", "deallocate", "bool", /*default=*/"true",
           "free non-escaping buffers after their last use">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def CUDAMapToGPUPass
    : Pass<"dtensor-cuda-map-to-gpu", "::mlir::func::FuncOp"> {
  let summary = "linalg ops on device buffers -> scf.parallel mapped to a 1-D grid";
  let description = [{
    First, every linalg.generic gets its parallel loops outside its
    reduction loops (linalg::interchangeGenericOp): a column sum
    `[reduction, parallel]` would otherwise become a host loop launching a
    kernel per reduced index.

    An elementwise op on dense buffers of static shape (identity maps and
    layouts, scalars otherwise, a total size divisible by the lane count)
    becomes a flat parallel loop over vectors of `vector-bytes` bytes (of
    its widest element type): vector.load / vector.store with that
    alignment, which NVPTX emits as 16-byte ld/st.global.v4. Identity-layout
    buffers start an allocation (gpu.alloc, or an argument the host
    allocated), which is 256-byte aligned.

    A row reduction (one output indexed by the leading parallel loops, all
    reduction loops trailing, static sizes, at least 64 elements per row,
    each buffer input read along the innermost loop at its last,
    unit-stride index, a body `yield combiner(acc, f(inputs))` with a
    32-bit accumulator and an
    associative, commutative arith combiner of known identity: addf, mulf,
    max/min(imum|num)f, addi, muli, andi, ori, xori, maxsi, minsi) is spread
    over a warp per row: lane l folds elements l, l + 32, ... of its row
    (coalesced reads), the lanes are combined with gpu.shuffle xor, and
    lane 0 folds the result into the output. Needs a block size that is a
    multiple of 32 (rows never straddle warps); otherwise, and for other
    reductions, one thread per output element folds its row alone.

    Any other reduction with at least one parallel loop, outputs indexed
    by the parallel loops only and no output a view of an input becomes a
    parallel loop over its parallel dims, each thread folding its outputs
    over the reduction dims in scf.for loops with the values in registers
    (iter_args): loaded once (or a zero fill right before a single output,
    folded in) and stored once. A column sum (its parallel loop moved
    outside, as above) takes this path: neighbouring threads read
    neighbouring columns.

    Every other linalg op becomes a parallel loop nest
    (linalg-to-parallel-loops; an op with no parallel dimension is wrapped
    in a one-iteration parallel loop first, so that it runs on the device).
    Each outermost scf.parallel is collapsed to one dimension, tiled by
    `block-size`, and mapped: tiles to block x, the tile to thread x, and
    any nested scf.parallel to sequential loops. convert-parallel-loops-to-gpu
    then makes one gpu.launch per nest. After this pass, memref.load and
    memref.store outside a parallel loop (host code reading device memory)
    are an error naming the op.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "threads per block">,
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"16",
           "bytes per access of vectorized elementwise kernels (0: off)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect"];
}

def CUDAStreamOrderPass
    : Pass<"dtensor-cuda-stream-order", "::mlir::func::FuncOp"> {
  let summary = "every GPU op asynchronous on the rank's stream, no host waits";
  let description = [{
    Makes gpu.alloc, gpu.dealloc, gpu.memcpy, gpu.memset and
    gpu.launch_func asynchronous, each depending on a `gpu.wait async`
    right before it. gpu-to-llvm lowers that to `mgpuStreamCreate()`, which
    the CUDA runtime answers with the rank's persistent compute stream, so
    all launches, allocations and runtime calls (matmuls, collectives) are
    ordered by that one stream and the program never synchronises the host.
    Unlike upstream gpu-async-region no `gpu.wait` is placed before calls or
    returns. A synchronous `gpu.wait` already in the program is an error.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

#endif // DTENSOR_TARGET_CUDA_PASSES_TD
