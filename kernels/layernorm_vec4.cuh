// The float4 row form of LayerNorm + adaLN modulation, shared by residual_layernorm.cu and
// patch_embed.cu: one row of at most kVecFormMaxD elements (D % 4 == 0) per block of kVecThreads
// threads, each thread holding three float4 (d = 4 (thread + 96 j) .. + 3) in registers from the
// producer of the row (a gated residual, a patch embedding) to the output, every access 8 or 16
// bytes wide. The statistics take one block exchange: each warp computes its own two-pass mean
// and sum of squared deviations over the elements it holds, and the three partials are combined
// with Chan's pairwise formula (the same two-pass accuracy, one __syncthreads).
#pragma once

#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

#include "kernels/cuda_reduce.cuh"
#include "kernels/cuda_types.h"

namespace dit::cuda {

constexpr int kVecThreads = 96;  // threads per row
constexpr int kVecWarps = kVecThreads / 32;
constexpr int kVecPerThread = 3;  // float4 per thread
constexpr int kVecFormMaxD = 4 * kVecThreads * kVecPerThread;

// Four consecutive outputs in one store (8 bytes for 16-bit types, 16 for float).
template <typename Out>
struct alignas(4 * sizeof(Out)) Out4 {
  Out v[4];
};

// Four consecutive values as floats: one 16-byte load for float, one 8-byte for 16-bit types.
template <typename Y>
__device__ __forceinline__ float4 load4(const Y* __restrict__ row, int quad) {
  if constexpr (std::is_same_v<Y, float>) {
    return reinterpret_cast<const float4*>(row)[quad];
  } else {
    const uint2 bits = reinterpret_cast<const uint2*>(row)[quad];
    Y v[4];
    memcpy(v, &bits, sizeof bits);
    return make_float4(to_float(v[0]), to_float(v[1]), to_float(v[2]), to_float(v[3]));
  }
}

// Stores four consecutive floats as Y: one 16-byte store for float, one 8-byte store (each value
// rounded to nearest) for 16-bit types.
template <typename Y>
__device__ __forceinline__ void store4(Y* __restrict__ row, int quad, float4 v) {
  if constexpr (std::is_same_v<Y, float>) {
    reinterpret_cast<float4*>(row)[quad] = v;
  } else {
    Out4<Y> r;
    r.v[0] = from_float<Y>(v.x);
    r.v[1] = from_float<Y>(v.y);
    r.v[2] = from_float<Y>(v.z);
    r.v[3] = from_float<Y>(v.w);
    reinterpret_cast<Out4<Y>*>(row)[quad] = r;
  }
}

// Elements of the row that warp `warp` holds: for each j, the quads 32 warp + 96 j + [0, 32)
// that lie in the row.
__device__ __forceinline__ int vec4_warp_elements(int warp, int quads) {
  int n = 0;
#pragma unroll
  for (int j = 0; j < kVecPerThread; ++j) n += 4 * min(max(quads - (32 * warp + kVecThreads * j), 0), 32);
  return n;
}

// Every thread of the block calls it, v[t][j] holding quad threadIdx.x + 96 j of row t of the
// block's kRows rows (zeros beyond D), shifts and scales the same quads of the modulation rows,
// which the rows share. Writes o[t quads + q] = (v - mean) / sqrt(variance + eps) * (1 + scale) +
// shift for the quads q < quads: each row with the arithmetic of a block of one row, the rows'
// reductions interleaved and one barrier for all of them.
template <typename Out, int kRows>
__device__ __forceinline__ void vec4_layernorm_modulate_rows(const float4 (&v)[kRows][kVecPerThread],
                                                             const float4 (&shifts)[kVecPerThread],
                                                             const float4 (&scales)[kVecPerThread], Out4<Out>* o,
                                                             int quads, float inv_d, float eps) {
  __shared__ float2 partials[kRows][kVecWarps];  // per row and warp: (sum, sum of squared deviations from its mean)
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int held = vec4_warp_elements(warp, quads);
  float sum[kRows], squares[kRows];
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    sum[t] = 0.0f;
#pragma unroll
    for (int j = 0; j < kVecPerThread; ++j)
      sum[t] += (v[t][j].x + v[t][j].y) + (v[t][j].z + v[t][j].w);  // zero beyond D
  }
#pragma unroll
  for (int t = 0; t < kRows; ++t) sum[t] = warp_sum(sum[t]);
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    const float warp_mean = held > 0 ? sum[t] * __frcp_rn(static_cast<float>(held)) : 0.0f;
    squares[t] = 0.0f;
#pragma unroll
    for (int j = 0; j < kVecPerThread; ++j) {
      if (threadIdx.x + kVecThreads * j < quads) {
        const float a = v[t][j].x - warp_mean, c = v[t][j].y - warp_mean, e = v[t][j].z - warp_mean,
                    f = v[t][j].w - warp_mean;
        squares[t] += (a * a + c * c) + (e * e + f * f);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kRows; ++t) squares[t] = warp_sum(squares[t]);
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < kRows; ++t) partials[t][warp] = make_float2(sum[t], squares[t]);
  }
  __syncthreads();
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
    // Chan et al.: M2 = sum_w M2_w + n_w (mean_w - mean)^2 over the warps holding elements.
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kVecWarps; ++w) total += partials[t][w].x;
    const float mean = total * inv_d;
    float m2 = 0.0f;
#pragma unroll
    for (int w = 0; w < kVecWarps; ++w) {
      const int n = vec4_warp_elements(w, quads);
      if (n > 0) {
        const float delta = partials[t][w].x * __frcp_rn(static_cast<float>(n)) - mean;
        m2 += partials[t][w].y + static_cast<float>(n) * delta * delta;
      }
    }
    const float inv_std = rsqrtf(m2 * inv_d + eps);
#pragma unroll
    for (int j = 0; j < kVecPerThread; ++j) {
      const int q = threadIdx.x + kVecThreads * j;
      if (q < quads) {
        Out4<Out> r;
        r.v[0] = from_float<Out>((v[t][j].x - mean) * inv_std * (1.0f + scales[j].x) + shifts[j].x);
        r.v[1] = from_float<Out>((v[t][j].y - mean) * inv_std * (1.0f + scales[j].y) + shifts[j].y);
        r.v[2] = from_float<Out>((v[t][j].z - mean) * inv_std * (1.0f + scales[j].z) + shifts[j].z);
        r.v[3] = from_float<Out>((v[t][j].w - mean) * inv_std * (1.0f + scales[j].w) + shifts[j].w);
        o[static_cast<size_t>(t) * quads + q] = r;
      }
    }
  }
}

// One row per block: v[j] holding quad threadIdx.x + 96 j of the row.
template <typename Out>
__device__ __forceinline__ void vec4_layernorm_modulate(const float4 (&v)[kVecPerThread],
                                                        const float4 (&shifts)[kVecPerThread],
                                                        const float4 (&scales)[kVecPerThread], Out4<Out>* o, int quads,
                                                        float inv_d, float eps) {
  vec4_layernorm_modulate_rows<Out, 1>(reinterpret_cast<const float4(&)[1][kVecPerThread]>(v), shifts, scales, o, quads,
                                       inv_d, eps);
}

}  // namespace dit::cuda
