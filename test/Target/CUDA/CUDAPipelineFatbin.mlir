// REQUIRES: cuda-toolkit
// The default format: a fatbin with SASS for sm_90 and the PTX, built by the
// toolkit's ptxas and fatbinary.
// RUN: dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --dtensor-spmd | dtensor-opt --dtensor-cuda-lowering=toolkit=%cuda_toolkit > %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir | llc -filetype=obj -relocation-model=pic -o %t.o
// RUN: llvm-nm %t.o | FileCheck %s --check-prefix=SYMS

// CHECK: gpu.binary @mlp_kernel  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{.*}}, "P\ED
// SYMS-DAG: r mlp_kernel_binary
// SYMS-DAG: U mgpuModuleLoad{{$}}
