// Tile shape: 32 query rows per block (8 row groups of 4 rows x 16 lanes = 128 threads) against
// 32-key tiles (16 above head size 96), because at DiT-XL/2 256 (T = 256, 16 heads, batch 2) that
// makes 256 blocks (3.2 per SM of the A5500's 80, 1.9 of the H200's 132) where 64-row tiles give
// 128 and leave SMs idle, while Q^T, K^T, V and P^T stay within 48 KB at every head size up to
// 128 (no opt-in) and take 32 KB at head size 72, so three blocks fit in an sm_86 SM's 100 KB.
//
// FlashAttention-style blocking on CUDA cores in float32: the block keeps its queries (scaled by
// log2(e) / sqrt(hd)) transposed in shared memory, walks the keys a tile at a time (K transposed,
// V as rows), keeps a 4 x 2 score tile and a 4 x ceil(hd / 16) output tile per thread in
// registers, and applies the online softmax (running max and sum per row, log2 domain) before P
// goes through shared memory for O += P V. Row sums are reduced across the 16 lanes at the end.
#include "kernels/attention_tiled.h"

#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "kernels/cuda_check.h"

namespace dit::cuda {

constexpr int kTiledRows = 32;          // query rows per block
constexpr int kTiledRowsPerThread = 4;  // one float4 of transposed Q or P per step
constexpr int kTiledLanes = 16;         // threads sharing a row group (a half-warp)
constexpr int kTiledThreads = kTiledRows / kTiledRowsPerThread * kTiledLanes;
constexpr int kTiledMaxHeadDim = 128;

// kColumnGroups = ceil(hd / 16): each lane owns output columns lane + 16 c, c < kColumnGroups.
template <int kColumnGroups>
struct TiledShape {
  static constexpr int padded = kColumnGroups * kTiledLanes;  // V row stride, zero columns past hd
  static constexpr int keys = kColumnGroups <= 6 ? 32 : 16;   // keys per tile
  static constexpr int keys_per_thread = keys / kTiledLanes;
  // Q^T [hd][rows], K^T [hd][keys], V [keys][padded], P^T [keys][rows]: every size a multiple of
  // four floats, so every buffer starts 16-byte aligned.
  static constexpr size_t shared_bytes(int hd) {
    return static_cast<size_t>(hd * kTiledRows + hd * keys + keys * padded + keys * kTiledRows) * sizeof(float);
  }
  static_assert(shared_bytes(padded) <= 48 * 1024, "within the default dynamic shared memory limit");
  static_assert(keys_per_thread == 1 || keys_per_thread == 2, "one float or float2 of K^T per step");
};

// ---------------------------------------------------------------------------------------------
// Device helpers: tile loads (plain loads, so K and Q can be transposed on the way in)

// Rows [start, start + kTileRows) of one part (q or k) of one head, times `scale`, transposed
// into tile[d * kTileRows + row]; rows past n are zero. Consecutive threads take consecutive
// rows, so the transposed stores hit distinct banks.
template <int kTileRows>
__device__ __forceinline__ void load_transposed(float* tile, const float* __restrict__ part, int start, int n, int hd,
                                                size_t token_stride, float scale, bool vector_loads) {
  if (vector_loads) {
    const int chunks = kTileRows * (hd / 4);
    for (int c = threadIdx.x; c < chunks; c += kTiledThreads) {
      const int row = c % kTileRows, d = (c / kTileRows) * 4;
      const int token = start + row;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (token < n) v = *reinterpret_cast<const float4*>(part + static_cast<size_t>(token) * token_stride + d);
      tile[(d + 0) * kTileRows + row] = v.x * scale;
      tile[(d + 1) * kTileRows + row] = v.y * scale;
      tile[(d + 2) * kTileRows + row] = v.z * scale;
      tile[(d + 3) * kTileRows + row] = v.w * scale;
    }
  } else {
    for (int e = threadIdx.x; e < kTileRows * hd; e += kTiledThreads) {
      const int row = e % kTileRows, d = e / kTileRows;
      const int token = start + row;
      tile[d * kTileRows + row] = token < n ? part[static_cast<size_t>(token) * token_stride + d] * scale : 0.0f;
    }
  }
}

// Rows [start, start + kTileRows) of the v part of one head into tile[row * kStride + d], d < hd;
// rows past n are zero.
template <int kTileRows, int kStride>
__device__ __forceinline__ void load_rows(float* tile, const float* __restrict__ part, int start, int n, int hd,
                                          size_t token_stride, bool vector_loads) {
  if (vector_loads) {
    const int per_row = hd / 4;
    for (int c = threadIdx.x; c < kTileRows * per_row; c += kTiledThreads) {
      const int row = c / per_row, d = (c % per_row) * 4;
      const int token = start + row;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (token < n) v = *reinterpret_cast<const float4*>(part + static_cast<size_t>(token) * token_stride + d);
      *reinterpret_cast<float4*>(tile + row * kStride + d) = v;
    }
  } else {
    for (int e = threadIdx.x; e < kTileRows * hd; e += kTiledThreads) {
      const int row = e / hd, d = e % hd;
      const int token = start + row;
      tile[row * kStride + d] = token < n ? part[static_cast<size_t>(token) * token_stride + d] : 0.0f;
    }
  }
}

// Maximum and sum over the 16 lanes of a row group (xor offsets below 16 stay in the half-warp).
__device__ __forceinline__ float row_group_max(float v) {
  for (int offset = kTiledLanes / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
__device__ __forceinline__ float row_group_sum(float v) {
  for (int offset = kTiledLanes / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Kernel

// grid (ceil(N / 32), H, B), 128 threads; dynamic shared memory TiledShape::shared_bytes(hd).
// Thread (row_group, lane) owns query rows row_group * 4 + i (i < 4), the keys
// lane * keys_per_thread + j of each tile, and output columns lane + 16 c.
template <int kColumnGroups>
static __global__ void __launch_bounds__(kTiledThreads)
    attention_tiled_kernel(const float* __restrict__ qkv,  // [B, N, 3, H, hd]
                           float* __restrict__ out,        // [B, N, H, hd]
                           int N, int H, int hd, float scale_log2, bool vector_loads) {
  using Shape = TiledShape<kColumnGroups>;
  constexpr int kKeys = Shape::keys;
  constexpr int kKeysPerThread = Shape::keys_per_thread;
  constexpr int kRows = kTiledRowsPerThread;
  extern __shared__ __align__(16) float shared[];
  float* q_t = shared;                          // [hd][kTiledRows], scaled by scale_log2
  float* k_t = q_t + hd * kTiledRows;           // [hd][kKeys]
  float* v_tile = k_t + hd * kKeys;             // [kKeys][padded]
  float* p_t = v_tile + kKeys * Shape::padded;  // [kKeys][kTiledRows]

  const int lane = threadIdx.x % kTiledLanes, row_group = threadIdx.x / kTiledLanes;
  const int q_start = blockIdx.x * kTiledRows, head = blockIdx.y, b = blockIdx.z;
  const size_t token_stride = static_cast<size_t>(3) * H * hd;
  const float* q_part = qkv + static_cast<size_t>(b) * N * token_stride + static_cast<size_t>(head) * hd;
  const float* k_part = q_part + static_cast<size_t>(H) * hd;
  const float* v_part = k_part + static_cast<size_t>(H) * hd;

  // V's columns [hd, padded) are read by P V but never loaded: zero them once.
  const int pad = Shape::padded - hd;
  for (int i = threadIdx.x; i < kKeys * pad; i += kTiledThreads)
    v_tile[(i / pad) * Shape::padded + hd + i % pad] = 0.0f;
  load_transposed<kTiledRows>(q_t, q_part, q_start, N, hd, token_stride, scale_log2, vector_loads);

  float o[kRows][kColumnGroups];
  float row_max[kRows], row_sum[kRows];  // log2 domain; row_sum is this lane's share
  for (int i = 0; i < kRows; ++i) {
    row_max[i] = -INFINITY;
    row_sum[i] = 0.0f;
    for (int c = 0; c < kColumnGroups; ++c) o[i][c] = 0.0f;
  }

  const int key_tiles = (N + kKeys - 1) / kKeys;
  for (int tile = 0; tile < key_tiles; ++tile) {
    const int key_start = tile * kKeys;
    load_transposed<kKeys>(k_t, k_part, key_start, N, hd, token_stride, 1.0f, vector_loads);
    load_rows<kKeys, Shape::padded>(v_tile, v_part, key_start, N, hd, token_stride, vector_loads);
    __syncthreads();

    // S = (Q scale_log2) K^T for this thread's 4 rows and keys.
    float s[kRows][kKeysPerThread];
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kKeysPerThread; ++j) s[i][j] = 0.0f;
#pragma unroll 4
    for (int d = 0; d < hd; ++d) {
      const float4 q = *reinterpret_cast<const float4*>(q_t + d * kTiledRows + row_group * kRows);
      float k[kKeysPerThread];
      if constexpr (kKeysPerThread == 2) {
        const float2 pair = *reinterpret_cast<const float2*>(k_t + d * kKeys + lane * 2);
        k[0] = pair.x;
        k[1] = pair.y;
      } else {
        k[0] = k_t[d * kKeys + lane];
      }
      for (int j = 0; j < kKeysPerThread; ++j) {
        s[0][j] = fmaf(q.x, k[j], s[0][j]);
        s[1][j] = fmaf(q.y, k[j], s[1][j]);
        s[2][j] = fmaf(q.z, k[j], s[2][j]);
        s[3][j] = fmaf(q.w, k[j], s[3][j]);
      }
    }

    // Online softmax; keys past N are masked out (every tile holds at least one valid key,
    // so each new maximum is finite and the first tile's correction is exp2(-inf) = 0).
    for (int i = 0; i < kRows; ++i) {
      float tile_max = -INFINITY;
      for (int j = 0; j < kKeysPerThread; ++j) {
        if (key_start + lane * kKeysPerThread + j >= N) s[i][j] = -INFINITY;
        tile_max = fmaxf(tile_max, s[i][j]);
      }
      const float new_max = fmaxf(row_max[i], row_group_max(tile_max));
      const float correction = exp2f(row_max[i] - new_max);
      row_max[i] = new_max;
      float tile_sum = 0.0f;
      for (int j = 0; j < kKeysPerThread; ++j) {
        s[i][j] = exp2f(s[i][j] - new_max);
        tile_sum += s[i][j];
      }
      row_sum[i] = row_sum[i] * correction + tile_sum;
      for (int c = 0; c < kColumnGroups; ++c) o[i][c] *= correction;
    }
    for (int j = 0; j < kKeysPerThread; ++j)
      *reinterpret_cast<float4*>(p_t + (lane * kKeysPerThread + j) * kTiledRows + row_group * kRows) =
          make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
    __syncthreads();

    // O += P V for this thread's 4 rows and columns.
#pragma unroll 4
    for (int key = 0; key < kKeys; ++key) {
      const float4 p = *reinterpret_cast<const float4*>(p_t + key * kTiledRows + row_group * kRows);
      for (int c = 0; c < kColumnGroups; ++c) {
        const float v = v_tile[key * Shape::padded + lane + c * kTiledLanes];
        o[0][c] = fmaf(p.x, v, o[0][c]);
        o[1][c] = fmaf(p.y, v, o[1][c]);
        o[2][c] = fmaf(p.z, v, o[2][c]);
        o[3][c] = fmaf(p.w, v, o[3][c]);
      }
    }
    __syncthreads();  // every thread is done with k_t, v_tile and p_t before the next tile
  }

  for (int i = 0; i < kRows; ++i) {
    const float total = row_group_sum(row_sum[i]);
    const int query = q_start + row_group * kRows + i;
    if (query >= N) continue;
    const float inverse = 1.0f / total;
    float* o_row = out + (static_cast<size_t>(b) * N + query) * H * hd + static_cast<size_t>(head) * hd;
    for (int c = 0; c < kColumnGroups; ++c) {
      const int column = lane + c * kTiledLanes;
      if (column < hd) o_row[column] = o[i][c] * inverse;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Launcher

template <int kColumnGroups>
static void launch_attention_tiled(const float* qkv, float* out, int B, int N, int H, int hd, cudaStream_t stream) {
  using Shape = TiledShape<kColumnGroups>;
  const dim3 grid((N + kTiledRows - 1) / kTiledRows, H, B);
  const float scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(hd)));
  const bool vector_loads = hd % 4 == 0 && reinterpret_cast<uintptr_t>(qkv) % 16 == 0;
  attention_tiled_kernel<kColumnGroups>
      <<<grid, kTiledThreads, Shape::shared_bytes(hd), stream>>>(qkv, out, N, H, hd, scale_log2, vector_loads);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entries

bool attention_tiled_supported(DeviceDtype dtype, int head_dim) {
  return dtype == DeviceDtype::f32 && head_dim >= 1 && head_dim <= kTiledMaxHeadDim;
}

void attention_tiled(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, cudaStream_t stream) {
  const char* op = "dit::cuda::attention_tiled";
  require(attention_tiled_supported(dtype, hd), op,
          std::string("needs f32 and head size 1 to 128, got ") + dtype_name(dtype) + " and " + std::to_string(hd));
  require(B > 0 && T > 0 && H > 0, op, "non-positive size");
  require(B <= 65535 && H <= 65535, op, "grid too large");
  require_aligned(qkv, sizeof(float), op, "qkv");
  require_aligned(out, sizeof(float), op, "out");
  const auto* q = static_cast<const float*>(qkv);
  auto* o = static_cast<float*>(out);
  switch ((hd + kTiledLanes - 1) / kTiledLanes) {
    case 1: launch_attention_tiled<1>(q, o, B, T, H, hd, stream); return;
    case 2: launch_attention_tiled<2>(q, o, B, T, H, hd, stream); return;
    case 3: launch_attention_tiled<3>(q, o, B, T, H, hd, stream); return;
    case 4: launch_attention_tiled<4>(q, o, B, T, H, hd, stream); return;
    case 5: launch_attention_tiled<5>(q, o, B, T, H, hd, stream); return;
    case 6: launch_attention_tiled<6>(q, o, B, T, H, hd, stream); return;
    case 7: launch_attention_tiled<7>(q, o, B, T, H, hd, stream); return;
    default: launch_attention_tiled<8>(q, o, B, T, H, hd, stream); return;
  }
}

}  // namespace dit::cuda
