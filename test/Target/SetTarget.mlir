// RUN: dtensor-opt %s --dtensor-set-target=target=cuda:h100 | FileCheck %s --check-prefix=CUDA
// RUN: dtensor-opt %s --target=cuda | FileCheck %s --check-prefix=CUDA-DEFAULT
// RUN: dtensor-opt %s --dtensor-set-target="cost-table=t.json hardware-file=hw.json" | FileCheck %s --check-prefix=FILES
// RUN: dtensor-opt %s --target=cpu:cpu --dtensor-set-target=cost-table=t.json | FileCheck %s --check-prefix=BOTH
// RUN: not dtensor-opt %s --target=cpu:tpu 2>&1 | FileCheck %s --check-prefix=ERR-HW
// RUN: not dtensor-opt %s --dtensor-set-target=target=gpu 2>&1 | FileCheck %s --check-prefix=ERR-BACKEND

// The module has no target: the default is cpu:h200; the command line sets
// backend and hardware, files are kept unless given.

// CUDA: module attributes {dtensor.target = #dtensor.target<cuda, "h100">}
// CUDA-DEFAULT: module attributes {dtensor.target = #dtensor.target<cuda, "h200">}
// FILES: module attributes {dtensor.target = #dtensor.target<cpu, "h200", hardware_file = "hw.json", cost_table = "t.json">}
// BOTH: module attributes {dtensor.target = #dtensor.target<cpu, "cpu", cost_table = "t.json">}
// ERR-HW: error: invalid target 'cpu:tpu': [TG2] unknown hardware preset 'tpu' (expected h100, h200 or cpu); expected <backend>[:<hardware>]
// ERR-BACKEND: error: invalid target 'gpu': [TG1] unknown backend 'gpu' (expected cpu or cuda); expected <backend>[:<hardware>]
module {
  func.func @f() {
    return
  }
}
