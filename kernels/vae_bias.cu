// CUDA per-channel bias (kernels/vae_bias.h): one thread per pair of channels of one pixel.
#include "kernels/vae_bias.h"

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"

namespace dit::cuda {

constexpr int kBiasThreads = 256;

// ---------------------------------------------------------------------------------------------
// Kernel

template <typename T>
static __global__ void vae_add_bias_kernel(T* __restrict__ x,               // [rows, C]
                                           const float* __restrict__ bias,  // [C]
                                           int64_t pairs, int half_channels) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= pairs) return;
  const int c = 2 * static_cast<int>(i % half_channels);
  T* pair = x + 2 * i;
  pair[0] = from_float<T>(to_float(pair[0]) + bias[c]);
  pair[1] = from_float<T>(to_float(pair[1]) + bias[c + 1]);
}

// ---------------------------------------------------------------------------------------------
// Launcher

template <typename T>
static void launch_vae_add_bias(T* x, const float* bias, int64_t rows, int C, cudaStream_t stream) {
  const int64_t pairs = rows * (C / 2);
  const unsigned blocks = static_cast<unsigned>((pairs + kBiasThreads - 1) / kBiasThreads);
  vae_add_bias_kernel<T><<<blocks, kBiasThreads, 0, stream>>>(x, bias, pairs, C / 2);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void vae_add_bias(void* x, const float* bias, DeviceDtype dtype, int64_t rows, int C, cudaStream_t stream) {
  const char* op = "dit::cuda::vae_add_bias";
  require(rows > 0 && C > 0, op, "non-positive size");
  require(C % 2 == 0, op, "C " + std::to_string(C) + " is odd");
  require(rows * (C / 2) / kBiasThreads < (int64_t{1} << 31), op, "tensor too large");
  require_aligned(x, dtype_bytes(dtype), op, "x");
  require_aligned(bias, alignof(float), op, "bias");
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_vae_add_bias(static_cast<T*>(x), bias, rows, C, stream);
  });
}

}  // namespace dit::cuda
