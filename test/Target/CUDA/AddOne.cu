// A kernel for dtensor-cuda-rt-test to load through mgpuModuleLoad (as PTX,
// JIT-compiled by the driver) and launch through mgpuLaunchKernel.
extern "C" __global__ void dtensor_test_add_one(float *data, long long n) {
  long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] += 1.0f;
}
