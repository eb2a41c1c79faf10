// CUDA activations (kernels/activations.h): SiLU and GELU(tanh), elementwise, float32 math.
#include "kernels/activations.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda_check.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernels

template <typename Out>
static __global__ void silu_kernel(const float* x, Out* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = x[i];
    out[i] = from_float<Out>(v / (1.0f + expf(-v)));
  }
}

template <typename T>
static __global__ void gelu_tanh_kernel(const T* x, T* out, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = to_float(x[i]);
    out[i] = from_float<T>(0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + 0.044715f * v * v * v))));
  }
}

// ---------------------------------------------------------------------------------------------
// Launchers

static unsigned elementwise_blocks(int64_t n, int threads) {
  return static_cast<unsigned>(std::min<int64_t>((n + threads - 1) / threads, 65535));
}

template <typename Out>
static void launch_silu(const float* x, Out* out, int64_t n, cudaStream_t stream) {
  constexpr int kThreads = 256;
  silu_kernel<Out><<<elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(x, out, n);
  DIT_LAUNCH_CHECK();
}

template <typename T>
static void launch_gelu_tanh(const T* x, T* out, int64_t n, cudaStream_t stream) {
  constexpr int kThreads = 256;
  gelu_tanh_kernel<T><<<elementwise_blocks(n, kThreads), kThreads, 0, stream>>>(x, out, n);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entries

void silu(const float* x, void* out, DeviceDtype out_dtype, int64_t n, cudaStream_t stream) {
  const char* op = "dit::cuda::silu";
  require(n > 0, op, "empty input");
  require_aligned(x, alignof(float), op, "x");
  require_aligned(out, dtype_bytes(out_dtype), op, "out");
  dispatch_dtype(out_dtype, [&](auto tag) {
    using Out = typename decltype(tag)::type;
    launch_silu(x, static_cast<Out*>(out), n, stream);
  });
}

void gelu_tanh(const void* x, void* out, DeviceDtype dtype, int64_t n, cudaStream_t stream) {
  const char* op = "dit::cuda::gelu_tanh";
  require(n > 0, op, "empty input");
  require_aligned(x, dtype_bytes(dtype), op, "x");
  require_aligned(out, dtype_bytes(dtype), op, "out");
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_gelu_tanh(static_cast<const T*>(x), static_cast<T*>(out), n, stream);
  });
}

}  // namespace dit::cuda
