// CUDA gated residual + LayerNorm + modulation (kernels/residual_layernorm.h).
//   - Rows of at most 1152 elements (DiT-XL/2's hidden size and every smaller one): a block of
//     128 threads per row, each thread holding 9 elements (d = thread + 128 j) in registers from
//     the residual update to the output, with the shift and scale loads issued before the two
//     block reductions wait. At DiT-XL/2 batch 2 (512 rows) that is 2048 warps in flight where
//     the warp-per-row form had 512: the earlier form (one warp per row, 36 elements a lane) took
//     7.7 us a launch on an H200, still latency-bound, about twice its bytes' time
//     (knowledge/handbook/03_single_gpu/04_fusion.md).
//   - Longer rows: one warp per row, four rows per block; the updated row is written back and
//     re-read for the two-pass statistics (kernels/layernorm_row.cuh).
#include "kernels/residual_layernorm.h"

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"
#include "kernels/cuda_reduce.cuh"
#include "kernels/layernorm_row.cuh"

namespace dit::cuda {

constexpr int kResidualLayerNormWarps = 4;  // rows per block of the warp-per-row form
constexpr int kRowThreads = 128;            // threads per row of the block form
constexpr int kRowValues = 9;               // elements per thread of the block form
constexpr int kBlockFormMaxD = kRowThreads * kRowValues;

// ---------------------------------------------------------------------------------------------
// Kernel

// Block form: one row per block of kRowThreads threads (D <= kBlockFormMaxD).
template <typename Out>
static __global__ void __launch_bounds__(kRowThreads)
    residual_layernorm_block_kernel(float* __restrict__ x,            // [B, T, D]
                                    const float* __restrict__ y,      // [B, T, D]
                                    const float* __restrict__ gate,   // [B, gate_stride]
                                    int gate_stride,
                                    const float* __restrict__ shift,  // [B, mod_stride]
                                    const float* __restrict__ scale,  // [B, mod_stride]
                                    int mod_stride, Out* __restrict__ out,  // [B, T, D]
                                    int T, int D, float inv_d, float eps) {
  __shared__ float scratch[32];
  const int row = blockIdx.x, b = row / T;
  float* xr = x + static_cast<size_t>(row) * D;
  const float* yr = y + static_cast<size_t>(row) * D;
  const float* g = gate + static_cast<size_t>(b) * gate_stride;
  const float* sh = shift + static_cast<size_t>(b) * mod_stride;
  const float* sc = scale + static_cast<size_t>(b) * mod_stride;
  Out* o = out + static_cast<size_t>(row) * D;
  float v[kRowValues], shifts[kRowValues], scales[kRowValues];
#pragma unroll
  for (int j = 0; j < kRowValues; ++j) {
    const int d = threadIdx.x + kRowThreads * j;
    v[j] = d < D ? xr[d] + g[d] * yr[d] : 0.0f;
    shifts[j] = d < D ? sh[d] : 0.0f;
    scales[j] = d < D ? sc[d] : 0.0f;
  }
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kRowValues; ++j) {
    const int d = threadIdx.x + kRowThreads * j;
    if (d < D) xr[d] = v[j];
    sum += v[j];  // zero beyond D
  }
  // inv_d = 1 / D and rsqrtf: no division subroutine, whose calls made the compiler spill a
  // register of the 27 held across them to a stack frame.
  const float mean = block_reduce<false>(sum, scratch) * inv_d;
  float squares = 0.0f;
#pragma unroll
  for (int j = 0; j < kRowValues; ++j) {
    const float centred = v[j] - mean;
    if (threadIdx.x + kRowThreads * j < D) squares += centred * centred;
  }
  const float variance = block_reduce<false>(squares, scratch) * inv_d;
  const float inv_std = rsqrtf(variance + eps);
#pragma unroll
  for (int j = 0; j < kRowValues; ++j) {
    const int d = threadIdx.x + kRowThreads * j;
    if (d < D) o[d] = from_float<Out>((v[j] - mean) * inv_std * (1.0f + scales[j]) + shifts[j]);
  }
}

// Warp-per-row form for rows longer than kBlockFormMaxD.
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
  if (D <= kBlockFormMaxD) {
    residual_layernorm_block_kernel<Out><<<rows, kRowThreads, 0, stream>>>(x, y, gate, gate_stride, shift, scale,
                                                                          mod_stride, out, T, D,
                                                                          1.0f / static_cast<float>(D), eps);
  } else {
    const int blocks = (rows + kResidualLayerNormWarps - 1) / kResidualLayerNormWarps;
    residual_layernorm_modulate_kernel<Out><<<blocks, kResidualLayerNormWarps * 32, 0, stream>>>(
        x, y, gate, gate_stride, shift, scale, mod_stride, out, rows, T, D, eps);
  }
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
