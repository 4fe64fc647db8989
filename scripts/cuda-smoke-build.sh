#!/usr/bin/env bash
# Builds the CUDA target's manual smoke test into build/gpu-carry/ (no GPU
# needed here): test/Target/CUDA/smoke/smoke.mlir through
# dtensor-cuda-lowering, mlir-translate, llc, linked into
# libdtensor_cuda_smoke.so with the CUDA runtime, plus the driver
# test/Target/CUDA/smoke-driver.cpp as build/gpu-carry/cuda-smoke.
#
# The runtime: $DTENSOR_CUDA_RUNTIME (path of libdtensor_runtime_cuda.so) if
# set, otherwise the TEST SHIM test/Target/CUDA/smoke/mgpu-test-shim.cu
# (mgpu* + a naive matmul; compiled with nvcc, static cudart).
#
# On a machine with a GPU (sm_90), carry build/gpu-carry/ and run
#   build/gpu-carry/cuda-smoke [tolerance]
# It needs only libcuda.so.1 (the driver) and the libraries in the folder.
# Expect one PASS line per entry point and "smoke: all passed".
set -euo pipefail
cd "$(dirname "$0")/.."

CUDA=${CUDA_HOME:-/usr/local/cuda}
LLVM_BIN=${LLVM_BIN:-/usr/lib/llvm-22/bin}
OUT=build/gpu-carry
SRC=test/Target/CUDA
OPT=build/bin/dtensor-opt

[ -x "$OPT" ] || { echo "cuda-smoke-build: build $OPT first (cmake --build build --target dtensor-opt)" >&2; exit 1; }
mkdir -p "$OUT"

echo "cuda-smoke-build: lowering $SRC/smoke/smoke.mlir"
"$OPT" "$SRC/smoke/smoke.mlir" \
  --dtensor-cuda-lowering="toolkit=$CUDA chip=sm_90" -o "$OUT/smoke.llvm.mlir"
"$LLVM_BIN/mlir-translate" --mlir-to-llvmir "$OUT/smoke.llvm.mlir" -o "$OUT/smoke.ll"
"$LLVM_BIN/llc" -O2 -filetype=obj -relocation-model=pic "$OUT/smoke.ll" -o "$OUT/smoke.o"

if [ -n "${DTENSOR_CUDA_RUNTIME:-}" ]; then
  echo "cuda-smoke-build: runtime $DTENSOR_CUDA_RUNTIME"
  cp -f "$DTENSOR_CUDA_RUNTIME" "$OUT/"
  RUNTIME_LIB=$(basename "$DTENSOR_CUDA_RUNTIME")
else
  echo "cuda-smoke-build: runtime = TEST SHIM ($SRC/smoke/mgpu-test-shim.cu)"
  "$CUDA/bin/nvcc" -O2 -std=c++17 -arch=sm_90 -shared -Xcompiler -fPIC \
    "$SRC/smoke/mgpu-test-shim.cu" -o "$OUT/libdtensor_cuda_test_shim.so" \
    -Xlinker -soname=libdtensor_cuda_test_shim.so -L"$CUDA/lib64/stubs" -lcuda
  RUNTIME_LIB=libdtensor_cuda_test_shim.so
fi

# The compiled program as a shared library over the runtime.
g++ -shared "$OUT/smoke.o" -o "$OUT/libdtensor_cuda_smoke.so" \
  -Wl,-soname,libdtensor_cuda_smoke.so -L"$OUT" -l:"$RUNTIME_LIB" \
  -Wl,-rpath,'$ORIGIN'
# The driver; libcuda from the stubs at link time, the driver's at run time.
g++ -O2 -std=c++17 -I"$CUDA/include" "$SRC/smoke-driver.cpp" \
  -o "$OUT/cuda-smoke" -L"$OUT" -l:libdtensor_cuda_smoke.so \
  -L"$CUDA/lib64/stubs" -lcuda -Wl,-rpath,'$ORIGIN'

echo "cuda-smoke-build: built $OUT/cuda-smoke; it needs:"
readelf -d "$OUT/cuda-smoke" "$OUT/libdtensor_cuda_smoke.so" | grep NEEDED | sort -u
echo "cuda-smoke-build: on the GPU machine run: $OUT/cuda-smoke"
