// CUDA unpatchify (kernels/unpatchify.h): a gather, one thread per output element.
#include "kernels/unpatchify.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda_check.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernel

static __global__ void unpatchify_kernel(const float* __restrict__ tokens,  // [B, g*g, p, p, C]
                                         float* __restrict__ out,           // [B, C, g*p, g*p]
                                         int g, int p, int C, size_t total) {
  const int S = g * p;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int xcol = static_cast<int>(i % S);
    const int yrow = static_cast<int>((i / S) % S);
    const int c = static_cast<int>((i / (static_cast<size_t>(S) * S)) % C);
    const size_t b = i / (static_cast<size_t>(S) * S * C);
    const int h = yrow / p, r = yrow % p, w = xcol / p, q = xcol % p;
    const size_t token = b * g * g + static_cast<size_t>(h) * g + w;
    out[i] = tokens[(token * p * p + static_cast<size_t>(r) * p + q) * C + c];
  }
}

// ---------------------------------------------------------------------------------------------
// Launcher

static void launch_unpatchify(const float* tokens, float* out, int B, int g, int p, int C, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const size_t total = static_cast<size_t>(B) * C * g * p * g * p;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((total + kThreads - 1) / kThreads, 65535));
  unpatchify_kernel<<<blocks, kThreads, 0, stream>>>(tokens, out, g, p, C, total);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void unpatchify(const float* tokens, float* out, int B, int g, int p, int C, cudaStream_t stream) {
  const char* op = "dit::cuda::unpatchify";
  require(B > 0 && g > 0 && p > 0 && C > 0, op, "non-positive size");
  require_aligned(tokens, alignof(float), op, "tokens");
  require_aligned(out, alignof(float), op, "out");
  launch_unpatchify(tokens, out, B, g, p, C, stream);
}

}  // namespace dit::cuda
