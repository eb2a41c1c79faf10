// CUDA bias + optional GELU-tanh on a GEMM output (kernels/bias_activation.h), elementwise.
#include "kernels/bias_activation.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda_check.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernel

template <typename T, bool kGelu>
static __global__ void bias_activation_kernel(T* out,         // [M, N]
                                              const T* bias,  // [N]
                                              int N, size_t total) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float v = to_float(out[i]) + to_float(bias[i % N]);
    if constexpr (kGelu) v = 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
    out[i] = from_float<T>(v);
  }
}

// ---------------------------------------------------------------------------------------------
// Launcher

template <typename T>
static void launch_bias_activation(T* out, const T* bias, int M, int N, bool gelu, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const size_t total = static_cast<size_t>(M) * N;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((total + kThreads - 1) / kThreads, 65535));
  if (gelu)
    bias_activation_kernel<T, true><<<blocks, kThreads, 0, stream>>>(out, bias, N, total);
  else
    bias_activation_kernel<T, false><<<blocks, kThreads, 0, stream>>>(out, bias, N, total);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void bias_activation(void* out, const void* bias, DeviceDtype dtype, int M, int N, bool gelu, cudaStream_t stream) {
  const char* op = "dit::cuda::bias_activation";
  require(M > 0 && N > 0, op, "non-positive size");
  require_aligned(out, dtype_bytes(dtype), op, "out");
  require_aligned(bias, dtype_bytes(dtype), op, "bias");
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_bias_activation(static_cast<T*>(out), static_cast<const T*>(bias), M, N, gelu, stream);
  });
}

}  // namespace dit::cuda
