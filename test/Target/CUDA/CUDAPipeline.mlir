// The whole CUDA lowering on per-rank programs: tp_mlp (f32, partitioned by
// dtensor-spmd), a bf16 MLP rank and softmax/RMSNorm rows. The result is LLVM
// dialect host code plus gpu.binary ops, which mlir-translate takes to LLVM
// IR and llc to an object file.

// f32 tp_mlp, PTX embedded (no toolkit needed).
// RUN: dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --dtensor-spmd | dtensor-opt --dtensor-cuda-lowering=format=isa > %t.f32.mlir
// RUN: FileCheck %s --check-prefix=F32 < %t.f32.mlir
// RUN: FileCheck %s --check-prefix=ONLYLLVM < %t.f32.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.f32.mlir -o %t.f32.ll
// RUN: FileCheck %s --check-prefix=IR < %t.f32.ll
// RUN: FileCheck %s --check-prefix=NOSYNC < %t.f32.ll
// RUN: llc -filetype=obj -relocation-model=pic %t.f32.ll -o %t.f32.o
// RUN: llvm-nm %t.f32.o | FileCheck %s --check-prefix=SYMS

// bf16 rank program.
// RUN: dtensor-opt %S/Inputs/mlp_bf16_rank.mlir --dtensor-cuda-lowering=format=isa > %t.bf16.mlir
// RUN: FileCheck %s --check-prefix=BF16 < %t.bf16.mlir
// RUN: FileCheck %s --check-prefix=ONLYLLVM < %t.bf16.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.bf16.mlir | llc -filetype=obj -relocation-model=pic -o %t.bf16.o

// Rows: softmax and RMSNorm.
// RUN: dtensor-opt %S/Inputs/rows.mlir --dtensor-cuda-lowering=format=isa > %t.rows.mlir
// RUN: FileCheck %s --check-prefix=ROWS < %t.rows.mlir
// RUN: FileCheck %s --check-prefix=ONLYLLVM < %t.rows.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.rows.mlir | llc -filetype=obj -relocation-model=pic -o %t.rows.o

// The MoE layer (examples/moe.mlir): split sizes computed by kernels in
// device memory, the counts exchanged (all_to_all), each output sized by
// dtensor_rt_total_size before it is allocated, rows and ids dispatched and
// results combined by all_to_all_v.
// RUN: dtensor-opt %dtensor_src_root/examples/moe.mlir --dtensor-spmd | dtensor-opt --dtensor-cuda-lowering=format=isa > %t.moe.mlir
// RUN: FileCheck %s --check-prefix=MOE < %t.moe.mlir
// RUN: FileCheck %s --check-prefix=ONLYLLVM < %t.moe.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.moe.mlir | llc -filetype=obj -relocation-model=pic -o %t.moe.o
// MOE-LABEL: llvm.func @moe(
// MOE:         llvm.call @dtensor_rt_all_to_all_i64(
// MOE:         %[[TOTAL:.*]] = llvm.call @dtensor_rt_total_size(
// MOE:         llvm.mul %[[TOTAL]],
// MOE:         llvm.call @mgpuMemAlloc(
// MOE:         llvm.call @dtensor_rt_all_to_all_v_f32(
// MOE:         llvm.call @dtensor_rt_total_size(
// MOE:         llvm.call @dtensor_rt_all_to_all_v_i64(
// MOE:         llvm.call @dtensor_rt_total_size(
// MOE:         llvm.call @dtensor_rt_all_to_all_v_f32(

// Every contraction shape autodiff produces (test/e2e/contractions.mlir):
// five cuBLASLt calls (two k dims collapsed, copied or reordered, a batch
// in the middle, two n dims), the row dot and the matrix-vector product
// generated kernels with a remark each, never an error; down to PTX and an
// object file.
// RUN: dtensor-opt %dtensor_src_root/test/e2e/contractions.mlir --dtensor-spmd \
// RUN:   | dtensor-opt --dtensor-cuda-lowering=format=isa -mlir-print-op-on-diagnostic=false -o %t.contractions.mlir 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CONTRACTION-REMARKS --implicit-check-not=error
// RUN: FileCheck %s --check-prefix=CONTRACTIONS < %t.contractions.mlir
// RUN: FileCheck %s --check-prefix=ONLYLLVM < %t.contractions.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.contractions.mlir | llc -filetype=obj -relocation-model=pic -o %t.contractions.o
// CONTRACTION-REMARKS: remark: not a cuBLASLt matmul: the contraction has 2 batch, 0 m, 0 n and 1 k dimensions (a row dot; cuBLASLt needs one or more m, n and k dimensions); lowered as a generated reduction kernel
// CONTRACTION-REMARKS: remark: not a cuBLASLt matmul: the contraction has 0 batch, 1 m, 0 n and 1 k dimensions (a matrix-vector product; cuBLASLt needs one or more m, n and k dimensions); lowered as a generated reduction kernel
// CONTRACTIONS-LABEL: llvm.func @contractions(
// CONTRACTIONS-COUNT-5: llvm.call @dtensor_rt_matmul_f32(
// CONTRACTIONS-NOT:     llvm.call @dtensor_rt_matmul
// CONTRACTIONS:         gpu.binary

// The backward of a bf16 SwiGLU MLP (dtensor-autodiff's joint function,
// forward recomputed): two kernels, the forward's silu(a) * b and one for
// the backward's elementwise body, whose gradients of a and b read the same
// operands (two sibling generics, merged into one of two results); nine
// cuBLASLt calls, the weight gradients on transposed views (no transposing
// copy kernel), dX = dA.W1^T + dB.W3^T the second call accumulating onto
// the first's product (no add kernel).
// RUN: dtensor-opt %S/Inputs/swiglu_mlp_bf16.mlir --dtensor-autodiff | dtensor-opt --dtensor-spmd \
// RUN:   | dtensor-opt --verify-each --dtensor-cuda-lowering=format=isa > %t.mlpgrad.mlir
// RUN: FileCheck %s --check-prefix=MLPGRAD < %t.mlpgrad.mlir
// RUN: FileCheck %s --check-prefix=MLPGRAD-CALLS < %t.mlpgrad.mlir
// RUN: FileCheck %s --check-prefix=ONLYLLVM < %t.mlpgrad.mlir
// MLPGRAD-LABEL: llvm.func @mlp_grad(
// MLPGRAD-COUNT-2: gpu.launch_func
// MLPGRAD-NOT:     gpu.launch_func
// MLPGRAD:         llvm.return
// MLPGRAD-CALLS-LABEL: llvm.func @mlp_grad(
// MLPGRAD-CALLS-COUNT-9: llvm.call @dtensor_rt_matmul_bf16(
// MLPGRAD-CALLS-NOT:     llvm.call @dtensor_rt_matmul
// MLPGRAD-CALLS:         llvm.return

// The backward of the sequence-parallel block (RMSNorm, the MLP, the
// residual add): seven kernels. Forward: the RMSNorm's row sums with the
// normalize and the residual add (siblings reading x), silu(a) * b.
// Backward: the MLP's elementwise body; the RMSNorm's row dot with the input
// gradient (moved right after it, past the gain's gradient); the gain's
// gradient, a sum over the 512 rows for 64 outputs, as 64 partial sums per
// output (their zero fill folded in), their row reduction, and its rounding
// to bf16 (before: one kernel per row, launched from a host loop).
// RUN: dtensor-opt %S/Inputs/sp_mlp_bf16.mlir --dtensor-autodiff | dtensor-opt --dtensor-spmd \
// RUN:   | dtensor-opt --verify-each --dtensor-cuda-lowering=format=isa > %t.spgrad.mlir
// RUN: FileCheck %s --check-prefix=SPGRAD < %t.spgrad.mlir
// RUN: FileCheck %s --check-prefix=ONLYLLVM < %t.spgrad.mlir
// SPGRAD-LABEL: llvm.func @sp_mlp_grad(
// SPGRAD-COUNT-7: gpu.launch_func
// SPGRAD-NOT:     gpu.launch_func
// SPGRAD:         llvm.return

// A missing toolkit falls back to PTX with a warning.
// RUN: dtensor-opt %S/Inputs/rows.mlir --dtensor-cuda-lowering=toolkit=%t.nonexistent 2>&1 -o /dev/null | FileCheck %s --check-prefix=FALLBACK
// Bad options.
// RUN: not dtensor-opt %S/Inputs/rows.mlir --dtensor-cuda-lowering=format=ptx 2>&1 | FileCheck %s --check-prefix=BADFORMAT
// RUN: not dtensor-opt %S/Inputs/rows.mlir --dtensor-cuda-lowering=block-size=2048 2>&1 | FileCheck %s --check-prefix=BADBLOCK
// RUN: not dtensor-opt %S/Inputs/rows.mlir --dtensor-cuda-lowering=vector-bytes=12 2>&1 | FileCheck %s --check-prefix=BADVEC
// Errors of the pipeline.
// RUN: dtensor-opt %S/Inputs/pipeline-errors.mlir -split-input-file --dtensor-cuda-lowering=format=isa -verify-diagnostics -o /dev/null

// F32-LABEL: llvm.func @mlp(
// F32:         %[[CTX:.*]] = llvm.call @dtensor_rt_context() : () -> !llvm.ptr
// F32:         llvm.call @mgpuStreamCreate()
// F32:         llvm.call @mgpuMemAlloc(
// F32:         llvm.call @dtensor_rt_matmul_f32(%[[CTX]], {{.*}}) : (!llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64) -> ()
// F32:         gpu.launch_func <%{{.*}} : !llvm.ptr> @mlp_kernel::@mlp_kernel blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) : i64
// F32:         llvm.call @dtensor_rt_matmul_f32(%[[CTX]], {{.*}})
// F32:         llvm.call @mgpuMemFree(
// The all_reduce reduces the dying product in place
// (dtensor-reuse-collective-buffers): that buffer is the result, nothing is
// left to free after it.
// F32:         llvm.call @dtensor_rt_all_reduce_f32(
// F32-NOT:     mgpuMemFree
// F32-NOT:     mgpuStreamSynchronize
// F32-NOT:     mgpuStreamDestroy
// F32:         llvm.return
// F32:       llvm.func @_mlir_ciface_mlp(
// Only the ReLU is a kernel (the zero fills folded into the matmuls), with
// 16-byte loads and stores.
// F32:       gpu.binary @mlp_kernel  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{.*}}, assembly = "{{.*}}.target sm_90{{.*}}ld.global.v4.b32{{.*}}st.global.v4.b32
// F32-NOT:   gpu.binary

// Nothing but the LLVM dialect and the gpu ops that the translation lowers.
// ONLYLLVM-NOT: {{^ *(%[^ ]+ = )?"?(affine|arith|bufferization|cf|func|index|linalg|math|memref|scf|tensor|ub|dtensor)\.}}
// ONLYLLVM-NOT: memref<
// ONLYLLVM-NOT: gpu.module
// ONLYLLVM-NOT: gpu.alloc

// The kernels' module is loaded by a global constructor when the library
// loads; the launch goes to the stream mgpuStreamCreate returned.
// IR-DAG: @llvm.global_ctors
// IR-DAG: call ptr @mgpuModuleLoadJIT(ptr @mlp_kernel_binary, i32 3)
// The ReLU over 8x8 elements: one block of 256 threads.
// IR-DAG: call ptr @mgpuStreamCreate()
// IR-DAG: call void @mgpuLaunchKernel(ptr %{{[0-9]+}}, i64 1, i64 1, i64 1, i64 256, i64 1, i64 1, i32 0, ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, ptr null, i64 {{[0-9]+}})
// NOSYNC-NOT: mgpuStreamSynchronize
// NOSYNC-NOT: mgpuStreamDestroy

// SYMS-DAG: T _mlir_ciface_mlp
// SYMS-DAG: U dtensor_rt_all_reduce_f32
// SYMS-DAG: U dtensor_rt_context
// SYMS-DAG: U dtensor_rt_matmul_f32
// SYMS-DAG: U mgpuLaunchKernel
// SYMS-DAG: U mgpuMemAlloc
// SYMS-DAG: U mgpuMemFree
// SYMS-DAG: U mgpuModuleLoadJIT
// SYMS-DAG: U mgpuStreamCreate

// BF16-LABEL: llvm.func @mlp_bf16(
// BF16:         llvm.call @dtensor_rt_matmul_bf16(
// BF16:         gpu.launch_func
// BF16:         llvm.call @dtensor_rt_matmul_bf16(
// BF16:         gpu.launch_func
// BF16:         llvm.call @dtensor_rt_all_reduce_f32(
// BF16:       gpu.binary @mlp_bf16_kernel  [#gpu.object<#nvvm.target<{{.*}}chip = "sm_90"
// BF16:       gpu.binary @mlp_bf16_kernel_0  [#gpu.object<#nvvm.target<{{.*}}chip = "sm_90"

// Softmax: two kernels, the row max with exp(x - max) in its kernel, and
// the row sum with the divide in its kernel (each warp applies its consumer
// to the row it just reduced); both reductions start from their fill's
// value, folded in (the sum's fill had also kept exp out of the max's
// kernel). RMSNorm: one kernel, the sum of squares from zero with the
// normalize-and-scale.
// ROWS-LABEL: llvm.func @softmax_rows(
// ROWS-COUNT-2: gpu.launch_func
// ROWS-NOT:     gpu.launch_func
// ROWS-NOT:     dtensor_rt_matmul
// ROWS:       llvm.func @_mlir_ciface_softmax_rows(
// ROWS:       gpu.binary @softmax_rows_kernel
// ROWS-LABEL: llvm.func @rmsnorm_rows(
// ROWS-COUNT-1: gpu.launch_func
// ROWS-NOT:     gpu.launch_func
// ROWS:       llvm.func @_mlir_ciface_rmsnorm_rows(
// ROWS:       gpu.binary @rmsnorm_rows_kernel

// FALLBACK: warning: dtensor-cuda-lowering: no ptxas/fatbinary under '{{.*}}nonexistent/bin'; embedding PTX (format=isa) instead of fatbin: the driver JIT-compiles it at load

// BADFORMAT: dtensor-cuda-lowering: format must be fatbin, bin or isa, got 'ptx'
// BADBLOCK: dtensor-cuda-lowering: block-size must be in [1, 1024]
// BADVEC: dtensor-cuda-lowering: vector-bytes must be 0 or a power of two up to 16
