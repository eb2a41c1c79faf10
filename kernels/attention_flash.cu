// Tile shape: 64 query rows per block (4 warps x 16 rows, one m16n8k16 row block each) and 64
// keys per step. At DiT-XL/2 256 (T = 256, 16 heads, batch 2) 64-row tiles give 128 blocks for
// the A5500's 80 SMs where 128-row tiles would leave SMs idle with 64; Q, K and V tiles
// single-buffered (K_{j+1} is fetched during softmax, V_{j+1} during the next Q K^T) take 33 KB
// at head size 72, so two blocks fit in sm_86's 100 KB per SM with no opt-in. Head size 72 is
// padded to 80 (five k16 steps) in shared memory with zero columns; rows are padded by 8 halves
// so ldmatrix's eight 16-byte rows fall on distinct banks.
//
// Sequences of at most 512 keys (8 tiles) split the keys of a block over two groups of four
// warps: the same 64 query rows, alternate key tiles, one combine at the end. At T = 256 each
// warp then walks 2 tiles instead of 4; one call took 14 us on an H200 unsplit, latency-bound
// with 128 blocks of 4 warps (bench/results/h200-2026-12-01-40082a8/ncu_f16b2.txt). To keep two
// such blocks on an sm_86 SM (the A5500 would otherwise run 128 blocks in two waves on its 80
// SMs) the split form keeps no Q tile: its Q fragments come from global memory into registers,
// so K and V of both groups take 45 KB, and it is held to 128 registers a thread. The split is
// chosen by the sequence length alone, so a row's result never depends on the batch beside it.
//
// FlashAttention-2 (Dao, 2023): S = Q K^T and O += P V on mma.sync with float32 accumulators, the
// online softmax in registers (running max and sum per row, in the log2 domain), P re-packed from
// the S accumulators as the A operand of P V, the row sums reduced across the quad only at the end.
#include "kernels/attention_flash.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/attention_tiled.h"
#include "kernels/cuda_check.h"

namespace dit::cuda {

constexpr int kFlashRows = 64;      // query rows per block
constexpr int kFlashKeys = 64;      // keys per step
constexpr int kFlashWarps = 4;      // 16 query rows each, per key group
constexpr int kFlashThreads = kFlashWarps * 32;
constexpr int kSplitMaxKeyTiles = 8;  // sequences of at most 512 keys split them over two groups

template <int kHeadDim>
struct FlashShape {
  static constexpr int padded = (kHeadDim + 15) / 16 * 16;  // k16 steps of Q K^T
  static constexpr int stride = padded + 8;                 // shared row stride in elements
  static constexpr int chunks = kHeadDim / 8;               // 16-byte chunks per global row
  static constexpr int k_steps = padded / 16;
  static constexpr int d_tiles = padded / 8;                // n8 tiles of the output (even)
  static constexpr int tile_elements = kFlashRows * stride;
  // Tiles in shared memory: Q, K and V with one key group; K and V per group with two (whose Q
  // fragments come straight from global memory).
  static constexpr int tiles(int split) { return split == 1 ? 3 : 2 * split; }
  static constexpr size_t shared_bytes(int split) { return tiles(split) * tile_elements * 2; }
  static_assert(kFlashRows == kFlashKeys, "one loader serves Q, K and V tiles");
  static_assert(d_tiles % 2 == 0, "ldmatrix.x4 loads output tiles in pairs");
  static_assert(shared_bytes(1) <= 48 * 1024 && shared_bytes(2) <= 48 * 1024,
                "within the default dynamic shared memory limit (two blocks per sm_86 SM)");
  // The two-group combine exchanges each thread's accumulators and row statistics.
  static_assert((d_tiles * 4 + 4) * kFlashThreads * 4 <= shared_bytes(2), "the exchange fits");
};

// ---------------------------------------------------------------------------------------------
// Device helpers: cp.async, ldmatrix, mma.sync (PTX ISA, sm_80)

__device__ __forceinline__ unsigned shared_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

// 16 bytes global -> shared; src_bytes = 0 writes zeros (rows past the sequence end).
__device__ __forceinline__ void cp_async_16(void* shared, const void* global, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)), "l"(global),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(shared)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(shared)));
}

// d = a (16x16, row) * b (16x8, col) + d, float32 accumulators.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats as one register of two 16-bit values, the first in the low half.
template <typename T>
__device__ __forceinline__ unsigned pack2(float low, float high) {
  unsigned bits;
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 v = __floats2half2_rn(low, high);
    memcpy(&bits, &v, sizeof bits);
  } else {
    const __nv_bfloat162 v = __floats2bfloat162_rn(low, high);
    memcpy(&bits, &v, sizeof bits);
  }
  return bits;
}

// One 64-row tile of one part (q, k or v) of one head into shared memory, rows past n zeroed,
// by `threads` threads of which this is `thread`. `part` points at token 0 of this part and head;
// rows are `token_stride` elements apart.
template <int kHeadDim, typename T>
__device__ __forceinline__ void load_tile(T* tile, const T* part, int start, int n, size_t token_stride, int thread,
                                          int threads) {
  using Shape = FlashShape<kHeadDim>;
  for (int c = thread; c < kFlashRows * Shape::chunks; c += threads) {
    const int row = c / Shape::chunks, chunk = c % Shape::chunks;
    const int token = start + row;
    const bool valid = token < n;
    const T* source = part + static_cast<size_t>(valid ? token : n - 1) * token_stride + chunk * 8;
    cp_async_16(tile + row * Shape::stride + chunk * 8, source, valid ? 16 : 0);
  }
}

// This warp's Q fragments (the A operands of S = Q K^T, m16n8k16 layout: registers 0 to 3 hold
// rows r and r + 8 at columns c, c + 1 and c + 8, c + 9) read straight from global memory: rows
// past n and the padding columns [hd, padded) are zeros.
template <int kHeadDim, typename T>
__device__ __forceinline__ void load_q_fragments(unsigned (&fragments)[FlashShape<kHeadDim>::k_steps][4],
                                                 const T* q_part, int first_row, int n, size_t token_stride,
                                                 int lane) {
  const int group = lane / 4, quad_lane = lane % 4;
  for (int kk = 0; kk < FlashShape<kHeadDim>::k_steps; ++kk)
    for (int i = 0; i < 4; ++i) {
      const int row = first_row + group + (i % 2) * 8, column = kk * 16 + quad_lane * 2 + (i / 2) * 8;
      // 4-byte aligned: qkv is 16-byte aligned, and token_stride, the head's offset and column are even.
      fragments[kk][i] = row < n && column < kHeadDim
                             ? *reinterpret_cast<const unsigned*>(q_part + static_cast<size_t>(row) * token_stride + column)
                             : 0u;
    }
}

// Synchronises the 128 threads of one key group: the whole block when there is one group, else
// named barrier 1 + group (barrier 0 is __syncthreads'), so that groups with different numbers of
// key tiles never wait for each other.
template <int kSplit>
__device__ __forceinline__ void group_sync(int group) {
  if constexpr (kSplit == 1)
    __syncthreads();
  else
    asm volatile("bar.sync %0, %1;\n" ::"r"(1 + group), "r"(kFlashThreads));
}

// ---------------------------------------------------------------------------------------------
// Kernel

// grid (ceil(N / 64), H, B), 128 * kSplit threads; dynamic shared memory
// FlashShape::shared_bytes(kSplit). With kSplit == 2 the block's two key groups of four warps take
// the same 64 query rows over alternate key tiles (group g: tiles g, g + 2, ...), each with its
// own K and V buffers, and combine their partial results at the end: half the sequential tile
// steps per block, for short sequences whose few blocks leave SMs idle (DiT-XL/2 at 256: 128
// blocks, 4 key tiles).
template <int kHeadDim, typename T, int kSplit>
static __global__ void __launch_bounds__(kFlashThreads * kSplit, kSplit == 1 ? 4 : 2)
    attention_flash_kernel(const T* __restrict__ qkv,  // [B, N, 3, H, hd]
                           T* __restrict__ out,        // [B, N, H, hd]
                           int N, int H, float scale_log2) {
  using Shape = FlashShape<kHeadDim>;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  const int key_group = threadIdx.x / kFlashThreads, group_thread = threadIdx.x % kFlashThreads;
  T* q_tile = reinterpret_cast<T*>(shared_raw);  // with one key group only
  T* k_tile = q_tile + (kSplit == 1 ? 1 : 2 * key_group) * Shape::tile_elements;
  T* v_tile = k_tile + Shape::tile_elements;

  const int warp = group_thread / 32, lane = threadIdx.x % 32;  // warp within the key group
  const int group = lane / 4, quad_lane = lane % 4;  // mma fragment coordinates
  const int q_start = blockIdx.x * kFlashRows, head = blockIdx.y, b = blockIdx.z;
  const size_t token_stride = static_cast<size_t>(3) * H * kHeadDim;
  const T* q_part = qkv + static_cast<size_t>(b) * N * token_stride + static_cast<size_t>(head) * kHeadDim;
  const T* k_part = q_part + static_cast<size_t>(H) * kHeadDim;
  const T* v_part = k_part + static_cast<size_t>(H) * kHeadDim;

  // Zero the padding columns [hd, padded) once: cp.async never writes them, and Q K^T reads them.
  if constexpr (Shape::padded > kHeadDim) {
    constexpr int pad = Shape::padded - kHeadDim;
    for (int i = threadIdx.x; i < Shape::tiles(kSplit) * kFlashRows * pad; i += kFlashThreads * kSplit) {
      const int row = i / pad, column = kHeadDim + i % pad;  // row over all the tiles
      q_tile[row * Shape::stride + column] = T(0.0f);
    }
  }

  const int key_tiles = (N + kFlashKeys - 1) / kFlashKeys;
  if constexpr (kSplit == 1) load_tile<kHeadDim>(q_tile, q_part, q_start, N, token_stride, threadIdx.x, kFlashThreads);
  load_tile<kHeadDim>(k_tile, k_part, key_group * kFlashKeys, N, token_stride, group_thread, kFlashThreads);
  cp_async_commit();  // group: Q, K of the first tile
  load_tile<kHeadDim>(v_tile, v_part, key_group * kFlashKeys, N, token_stride, group_thread, kFlashThreads);
  cp_async_commit();  // group: V of the first tile

  unsigned q_fragments[Shape::k_steps][4];
  float o[Shape::d_tiles][4];
  for (int dt = 0; dt < Shape::d_tiles; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY};  // rows group and group + 8, log2 domain
  float row_sum[2] = {0.0f, 0.0f};            // this thread's share of the row sums

  if constexpr (kSplit == 1) {
    cp_async_wait<1>();  // Q and the first K tile have landed; V may still be in flight
    __syncthreads();
    for (int kk = 0; kk < Shape::k_steps; ++kk)
      ldmatrix_x4(q_fragments[kk], q_tile + (warp * 16 + lane % 16) * Shape::stride + kk * 16 + (lane / 16) * 8);
  } else {
    load_q_fragments<kHeadDim>(q_fragments, q_part, q_start + warp * 16, N, token_stride, lane);
    cp_async_wait<1>();  // the first K tile has landed; V may still be in flight
    __syncthreads();     // and the padding columns are zero
  }

  for (int tile = key_group; tile < key_tiles; tile += kSplit) {
    const int key_start = tile * kFlashKeys;
    if (tile != key_group) {
      cp_async_wait<1>();  // K_tile has landed; V_tile may still be in flight
      group_sync<kSplit>(key_group);
    }

    // S = Q K^T for this warp's 16 rows and the tile's 64 keys: 8 n8 tiles.
    float s[kFlashKeys / 8][4];
    for (int nt = 0; nt < kFlashKeys / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
    for (int kk = 0; kk < Shape::k_steps; ++kk)
      for (int nt = 0; nt < kFlashKeys / 8; nt += 2) {
        const int matrix = lane / 8;
        const int key = (nt + matrix / 2) * 8 + lane % 8;
        unsigned k_fragments[4];
        ldmatrix_x4(k_fragments, k_tile + key * Shape::stride + kk * 16 + (matrix % 2) * 8);
        mma_16816<T>(s[nt], q_fragments[kk], k_fragments[0], k_fragments[1]);
        mma_16816<T>(s[nt + 1], q_fragments[kk], k_fragments[2], k_fragments[3]);
      }
    group_sync<kSplit>(key_group);  // every warp of the group is done with k_tile
    const bool prefetch = tile + kSplit < key_tiles;
    if (prefetch) {
      load_tile<kHeadDim>(k_tile, k_part, key_start + kSplit * kFlashKeys, N, token_stride, group_thread,
                          kFlashThreads);
      cp_async_commit();
    }

    // Online softmax in the log2 domain; keys past N are masked out.
    float tile_max[2] = {-INFINITY, -INFINITY};
    for (int nt = 0; nt < kFlashKeys / 8; ++nt)
      for (int e = 0; e < 4; ++e) {
        const int key = key_start + nt * 8 + quad_lane * 2 + (e % 2);
        s[nt][e] = key < N ? s[nt][e] * scale_log2 : -INFINITY;
        tile_max[e / 2] = fmaxf(tile_max[e / 2], s[nt][e]);
      }
    float correction[2];
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      const float new_max = fmaxf(row_max[r], tile_max[r]);  // finite: every tile has a valid key
      correction[r] = exp2f(row_max[r] - new_max);           // 0 on the first tile
      row_max[r] = new_max;
      row_sum[r] *= correction[r];
    }
    for (int dt = 0; dt < Shape::d_tiles; ++dt) {
      o[dt][0] *= correction[0];
      o[dt][1] *= correction[0];
      o[dt][2] *= correction[1];
      o[dt][3] *= correction[1];
    }
    for (int nt = 0; nt < kFlashKeys / 8; ++nt)
      for (int e = 0; e < 4; ++e) {
        s[nt][e] = exp2f(s[nt][e] - row_max[e / 2]);
        row_sum[e / 2] += s[nt][e];
      }

    if (prefetch)
      cp_async_wait<1>();  // V_tile has landed; the next K tile may still be in flight
    else
      cp_async_wait<0>();
    group_sync<kSplit>(key_group);

    // O += P V: P (16 x 64 keys) from the S accumulators, V (64 keys x padded) via ldmatrix.trans.
    for (int kj = 0; kj < kFlashKeys / 16; ++kj) {
      const unsigned p[4] = {pack2<T>(s[2 * kj][0], s[2 * kj][1]), pack2<T>(s[2 * kj][2], s[2 * kj][3]),
                             pack2<T>(s[2 * kj + 1][0], s[2 * kj + 1][1]),
                             pack2<T>(s[2 * kj + 1][2], s[2 * kj + 1][3])};
      for (int dt = 0; dt < Shape::d_tiles; dt += 2) {
        const int matrix = lane / 8;
        const int key = kj * 16 + (matrix % 2) * 8 + lane % 8;
        unsigned v_fragments[4];
        ldmatrix_x4_trans(v_fragments, v_tile + key * Shape::stride + (dt + matrix / 2) * 8);
        mma_16816<T>(o[dt], p, v_fragments[0], v_fragments[1]);
        mma_16816<T>(o[dt + 1], p, v_fragments[2], v_fragments[3]);
      }
    }
    group_sync<kSplit>(key_group);  // every warp of the group is done with v_tile
    if (prefetch) {
      load_tile<kHeadDim>(v_tile, v_part, key_start + kSplit * kFlashKeys, N, token_stride, group_thread,
                          kFlashThreads);
      cp_async_commit();
    }
  }

  if constexpr (kSplit == 2) {
    // Group 1 hands its accumulators and row statistics to group 0 through shared memory, thread
    // for thread (the same warp and lane hold the same rows and columns in both groups); group 0
    // rescales both to the larger running maximum and adds them. A group without tiles (N <= 64)
    // hands over a maximum of -inf, whose weight exp2(-inf) is 0.
    constexpr int kValues = Shape::d_tiles * 4 + 4;
    float* exchange = reinterpret_cast<float*>(shared_raw);  // [kValues][kFlashThreads]
    cp_async_wait<0>();  // a group without tiles still has its first K and V loads in flight
    __syncthreads();     // every group is done with its tiles: the buffers may be overwritten
    if (key_group == 1) {
      for (int dt = 0; dt < Shape::d_tiles; ++dt)
        for (int e = 0; e < 4; ++e) exchange[(dt * 4 + e) * kFlashThreads + group_thread] = o[dt][e];
      for (int r = 0; r < 2; ++r) {
        exchange[(Shape::d_tiles * 4 + r) * kFlashThreads + group_thread] = row_max[r];
        exchange[(Shape::d_tiles * 4 + 2 + r) * kFlashThreads + group_thread] = row_sum[r];
      }
    }
    __syncthreads();
    if (key_group == 1) return;
    for (int r = 0; r < 2; ++r) {
      const float other_max = exchange[(Shape::d_tiles * 4 + r) * kFlashThreads + group_thread];
      const float other_sum = exchange[(Shape::d_tiles * 4 + 2 + r) * kFlashThreads + group_thread];
      const float new_max = fmaxf(row_max[r], other_max);  // finite: group 0 always has tile 0
      const float mine = exp2f(row_max[r] - new_max), theirs = exp2f(other_max - new_max);
      row_sum[r] = row_sum[r] * mine + other_sum * theirs;
      for (int dt = 0; dt < Shape::d_tiles; ++dt)
        for (int e = 2 * r; e < 2 * r + 2; ++e)
          o[dt][e] = o[dt][e] * mine + exchange[(dt * 4 + e) * kFlashThreads + group_thread] * theirs;
    }
  }

  // Normalise by the full row sums (reduced across the quad) and store the valid columns.
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
  }
  for (int r = 0; r < 2; ++r) {
    const int query = q_start + warp * 16 + group + r * 8;
    if (query >= N) continue;
    const float inverse = 1.0f / row_sum[r];
    T* o_row = out + (static_cast<size_t>(b) * N + query) * H * kHeadDim + static_cast<size_t>(head) * kHeadDim;
    for (int dt = 0; dt < Shape::d_tiles; ++dt) {
      const int column = dt * 8 + quad_lane * 2;
      if (column >= kHeadDim) continue;
      const unsigned bits = pack2<T>(o[dt][2 * r] * inverse, o[dt][2 * r + 1] * inverse);
      memcpy(o_row + column, &bits, sizeof bits);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Launcher

// Two key groups for sequences of at most kSplitMaxKeyTiles tiles: chosen by the sequence length
// alone, never by the batch or the GPU, so that a row's result does not depend on how many rows
// run beside it (one GPU or two give the same bits).
template <int kHeadDim, typename T>
static void launch_attention_flash(const T* qkv, T* out, int B, int N, int H, cudaStream_t stream) {
  using Shape = FlashShape<kHeadDim>;
  const dim3 grid((N + kFlashRows - 1) / kFlashRows, H, B);
  const float scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(kHeadDim)));
  if ((N + kFlashKeys - 1) / kFlashKeys <= kSplitMaxKeyTiles)
    attention_flash_kernel<kHeadDim, T, 2><<<grid, 2 * kFlashThreads, Shape::shared_bytes(2), stream>>>(qkv, out, N, H,
                                                                                                      scale_log2);
  else
    attention_flash_kernel<kHeadDim, T, 1><<<grid, kFlashThreads, Shape::shared_bytes(1), stream>>>(qkv, out, N, H,
                                                                                                  scale_log2);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entries

bool attention_flash_supported(DeviceDtype dtype, int head_dim) {
  return dtype != DeviceDtype::f32 && (head_dim == 64 || head_dim == 72);
}

void attention_flash(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd,
                     cudaStream_t stream) {
  const char* op = "dit::cuda::attention_flash";
  require(attention_flash_supported(dtype, hd), op,
          std::string("needs f16 or bf16 and head size 64 or 72, got ") + dtype_name(dtype) + " and " +
              std::to_string(hd));
  require(B > 0 && T > 0 && H > 0, op, "non-positive size");
  require(B <= 65535 && H <= 65535, op, "grid too large");
  require_aligned(qkv, 16, op, "qkv");  // cp.async moves 16-byte chunks; hd * 2 bytes is a multiple of 16
  require_aligned(out, 4, op, "out");   // stores pairs of 16-bit values
  auto run = [&](auto tag) {
    using E = typename decltype(tag)::type;
    if (hd == 64)
      launch_attention_flash<64>(static_cast<const E*>(qkv), static_cast<E*>(out), B, T, H, stream);
    else
      launch_attention_flash<72>(static_cast<const E*>(qkv), static_cast<E*>(out), B, T, H, stream);
  };
  if (dtype == DeviceDtype::f16)
    run(std::type_identity<__half>{});
  else
    run(std::type_identity<__nv_bfloat16>{});
}

void attention(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, cudaStream_t stream) {
  if (attention_flash_supported(dtype, hd))
    attention_flash(qkv, out, dtype, B, T, H, hd, stream);
  else if (attention_tiled_supported(dtype, hd))
    attention_tiled(qkv, out, dtype, B, T, H, hd, stream);
  else
    attention_naive(qkv, out, dtype, B, T, H, hd, stream);
}

}  // namespace dit::cuda
