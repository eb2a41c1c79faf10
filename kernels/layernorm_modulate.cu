// CUDA LayerNorm + adaLN modulation (kernels/layernorm_modulate.h): one warp per row, four rows
// per block, two-pass float32 mean and variance (no E[x^2] - E[x]^2 cancellation); rows of at
// most 1152 elements are read once into registers (kernels/layernorm_row.cuh).
#include "kernels/layernorm_modulate.h"

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"
#include "kernels/layernorm_row.cuh"

namespace dit::cuda {

constexpr int kLayerNormWarps = 4;  // rows per block

// ---------------------------------------------------------------------------------------------
// Kernel

template <typename Out>
static __global__ void layernorm_modulate_kernel(const float* __restrict__ x,            // [B, T, D]
                                                 const float* __restrict__ shift,        // [B, stride]
                                                 const float* __restrict__ scale,        // [B, stride]
                                                 int mod_stride, Out* __restrict__ out,  // [B, T, D]
                                                 int rows, int T, int D, float eps) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kLayerNormWarps + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps leave together
  const float* xr = x + static_cast<size_t>(row) * D;
  const int b = row / T;
  const float* sh = shift + static_cast<size_t>(b) * mod_stride;
  const float* sc = scale + static_cast<size_t>(b) * mod_stride;
  Out* o = out + static_cast<size_t>(row) * D;
  if (kRegisterRows<Out> && D <= 32 * kRowRegisters) {
    float v[kRowRegisters];
#pragma unroll
    for (int j = 0; j < kRowRegisters; ++j) v[j] = lane + 32 * j < D ? xr[lane + 32 * j] : 0.0f;
    layernorm_modulate_registers(v, sh, sc, o, D, eps, lane);
    return;
  }
  float sum = 0.0f;
  for (int d = lane; d < D; d += 32) sum += xr[d];
  layernorm_modulate_row(xr, sum, sh, sc, o, D, eps, lane);
}

// ---------------------------------------------------------------------------------------------
// Launcher

template <typename Out>
static void launch_layernorm_modulate(const float* x, const float* shift, const float* scale, int mod_stride, Out* out,
                                      int B, int T, int D, float eps, cudaStream_t stream) {
  const int rows = B * T;
  const int blocks = (rows + kLayerNormWarps - 1) / kLayerNormWarps;
  layernorm_modulate_kernel<Out>
      <<<blocks, kLayerNormWarps * 32, 0, stream>>>(x, shift, scale, mod_stride, out, rows, T, D, eps);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void layernorm_modulate(const float* x, const float* shift, const float* scale, int mod_stride, void* out,
                        DeviceDtype out_dtype, int B, int T, int D, float eps, cudaStream_t stream) {
  const char* op = "dit::cuda::layernorm_modulate";
  require(B > 0 && T > 0 && D > 0, op, "non-positive size");
  require(static_cast<int64_t>(B) * T < (int64_t{1} << 31), op, "too many rows");
  require(mod_stride >= D, op, "mod_stride " + std::to_string(mod_stride) + " < D " + std::to_string(D));
  require(eps > 0.0f, op, "eps must be positive");
  require_aligned(x, alignof(float), op, "x");
  require_aligned(shift, alignof(float), op, "shift");
  require_aligned(scale, alignof(float), op, "scale");
  require_aligned(out, dtype_bytes(out_dtype), op, "out");
  dispatch_dtype(out_dtype, [&](auto tag) {
    using Out = typename decltype(tag)::type;
    launch_layernorm_modulate(x, shift, scale, mod_stride, static_cast<Out*>(out), B, T, D, eps, stream);
  });
}

}  // namespace dit::cuda
