// CUDA adaLN-Zero gated residual (kernels/gated_residual.h): x += gate * y, elementwise.
#include "kernels/gated_residual.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda_check.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernel

static __global__ void gated_residual_kernel(float* __restrict__ x,           // [B, T, D]
                                             const float* __restrict__ y,     // [B, T, D]
                                             const float* __restrict__ gate,  // [B, gate_stride]
                                             int gate_stride, int T, int D, size_t total) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t row = i / D;
    const int d = static_cast<int>(i - row * D);
    const size_t b = row / T;
    x[i] += gate[b * gate_stride + d] * y[i];
  }
}

// ---------------------------------------------------------------------------------------------
// Launcher

static void launch_gated_residual(float* x, const float* y, const float* gate, int gate_stride, int B, int T, int D,
                                  cudaStream_t stream) {
  constexpr int kThreads = 256;
  const size_t total = static_cast<size_t>(B) * T * D;
  const size_t blocks = std::min<size_t>((total + kThreads - 1) / kThreads, 65535);
  gated_residual_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, gate, gate_stride, T, D, total);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void gated_residual(float* x, const float* y, const float* gate, int gate_stride, int B, int T, int D,
                    cudaStream_t stream) {
  const char* op = "dit::cuda::gated_residual";
  require(B > 0 && T > 0 && D > 0, op, "non-positive size");
  require(gate_stride >= D, op, "gate_stride " + std::to_string(gate_stride) + " < D " + std::to_string(D));
  require_aligned(x, alignof(float), op, "x");
  require_aligned(y, alignof(float), op, "y");
  require_aligned(gate, alignof(float), op, "gate");
  launch_gated_residual(x, y, gate, gate_stride, B, T, D, stream);
}

}  // namespace dit::cuda
