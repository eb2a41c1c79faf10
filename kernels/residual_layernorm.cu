// CUDA gated residual + LayerNorm + modulation (kernels/residual_layernorm.h): one warp per
// row, four rows per block. Rows of at most 1152 elements stay in registers between the
// residual update and the two-pass statistics (kernels/layernorm_row.cuh); longer rows are
// written back and re-read. At DiT-XL/2 (512 rows
// of 1152 at batch 2) the register form reads each input once with every load of a lane in
// flight together, where the loop that writes the row back and re-reads it leaves few loads in
// flight per lane and is latency-bound (about 21 us per call on an H200, 40% of an fp16 forward
// pass: knowledge/handbook/03_single_gpu/04_fusion.md).
#include "kernels/residual_layernorm.h"

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"
#include "kernels/layernorm_row.cuh"

namespace dit::cuda {

constexpr int kResidualLayerNormWarps = 4;  // rows per block

// ---------------------------------------------------------------------------------------------
// Kernel

template <typename Out>
static __global__ void residual_layernorm_modulate_kernel(float* __restrict__ x,            // [B, T, D]
                                                          const float* __restrict__ y,      // [B, T, D]
                                                          const float* __restrict__ gate,   // [B, gate_stride]
                                                          int gate_stride,
                                                          const float* __restrict__ shift,  // [B, mod_stride]
                                                          const float* __restrict__ scale,  // [B, mod_stride]
                                                          int mod_stride, Out* __restrict__ out,  // [B, T, D]
                                                          int rows, int T, int D, float eps) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kResidualLayerNormWarps + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps leave together
  const int b = row / T;
  float* xr = x + static_cast<size_t>(row) * D;
  const float* yr = y + static_cast<size_t>(row) * D;
  const float* g = gate + static_cast<size_t>(b) * gate_stride;
  const float* sh = shift + static_cast<size_t>(b) * mod_stride;
  const float* sc = scale + static_cast<size_t>(b) * mod_stride;
  Out* o = out + static_cast<size_t>(row) * D;
  if (kRegisterRows<Out> && D <= 32 * kRowRegisters) {
    float v[kRowRegisters];
#pragma unroll
    for (int j = 0; j < kRowRegisters; ++j) {
      const int d = lane + 32 * j;
      v[j] = d < D ? xr[d] + g[d] * yr[d] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kRowRegisters; ++j)
      if (lane + 32 * j < D) xr[lane + 32 * j] = v[j];
    layernorm_modulate_registers(v, sh, sc, o, D, eps, lane);
    return;
  }
  float sum = 0.0f;
  for (int d = lane; d < D; d += 32) {
    const float updated = xr[d] + g[d] * yr[d];
    xr[d] = updated;  // read back below by this same lane only
    sum += updated;
  }
  layernorm_modulate_row(xr, sum, sh, sc, o, D, eps, lane);
}

// ---------------------------------------------------------------------------------------------
// Launcher

template <typename Out>
static void launch_residual_layernorm_modulate(float* x, const float* y, const float* gate, int gate_stride,
                                               const float* shift, const float* scale, int mod_stride, Out* out,
                                               int B, int T, int D, float eps, cudaStream_t stream) {
  const int rows = B * T;
  const int blocks = (rows + kResidualLayerNormWarps - 1) / kResidualLayerNormWarps;
  residual_layernorm_modulate_kernel<Out><<<blocks, kResidualLayerNormWarps * 32, 0, stream>>>(
      x, y, gate, gate_stride, shift, scale, mod_stride, out, rows, T, D, eps);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void residual_layernorm_modulate(float* x, const float* y, const float* gate, int gate_stride, const float* shift,
                                 const float* scale, int mod_stride, void* out, DeviceDtype out_dtype, int B, int T,
                                 int D, float eps, cudaStream_t stream) {
  const char* op = "dit::cuda::residual_layernorm_modulate";
  require(B > 0 && T > 0 && D > 0, op, "non-positive size");
  require(static_cast<int64_t>(B) * T < (int64_t{1} << 31), op, "too many rows");
  require(gate_stride >= D && mod_stride >= D, op, "a modulation stride is smaller than D");
  require(eps > 0.0f, op, "eps must be positive");
  require_aligned(x, alignof(float), op, "x");
  require_aligned(y, alignof(float), op, "y");
  require_aligned(gate, alignof(float), op, "gate");
  require_aligned(shift, alignof(float), op, "shift");
  require_aligned(scale, alignof(float), op, "scale");
  require_aligned(out, dtype_bytes(out_dtype), op, "out");
  dispatch_dtype(out_dtype, [&](auto tag) {
    using Out = typename decltype(tag)::type;
    launch_residual_layernorm_modulate(x, y, gate, gate_stride, shift, scale, mod_stride, static_cast<Out*>(out), B,
                                       T, D, eps, stream);
  });
}

}  // namespace dit::cuda
