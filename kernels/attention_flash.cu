// Tile shape: 64 query rows per block (4 warps x 16 rows, one m16n8k16 row block each) and 64
// keys per step. At DiT-XL/2 256 (T = 256, 16 heads, batch 2) 64-row tiles give 128 blocks for
// the A5500's 80 SMs where 128-row tiles would leave SMs idle with 64; Q, K and V tiles
// single-buffered (K_{j+1} is fetched during softmax, V_{j+1} during the next Q K^T) take 33 KB
// at head size 72, so two blocks fit in sm_86's 100 KB per SM with no opt-in. Head size 72 is
// padded to 80 (five k16 steps) in shared memory with zero columns; rows are padded by 8 halves
// so ldmatrix's eight 16-byte rows fall on distinct banks.
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
constexpr int kFlashWarps = 4;      // 16 query rows each
constexpr int kFlashThreads = kFlashWarps * 32;

template <int kHeadDim>
struct FlashShape {
  static constexpr int padded = (kHeadDim + 15) / 16 * 16;  // k16 steps of Q K^T
  static constexpr int stride = padded + 8;                 // shared row stride in elements
  static constexpr int chunks = kHeadDim / 8;               // 16-byte chunks per global row
  static constexpr int k_steps = padded / 16;
  static constexpr int d_tiles = padded / 8;                // n8 tiles of the output (even)
  static constexpr int tile_elements = kFlashRows * stride;
  static constexpr size_t shared_bytes = 3 * tile_elements * 2;  // Q, K, V in 16-bit elements
  static_assert(kFlashRows == kFlashKeys, "one loader serves Q, K and V tiles");
  static_assert(d_tiles % 2 == 0, "ldmatrix.x4 loads output tiles in pairs");
  static_assert(shared_bytes <= 48 * 1024, "within the default dynamic shared memory limit");
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

// One 64-row tile of one part (q, k or v) of one head into shared memory, rows past n zeroed.
// `part` points at token 0 of this part and head; rows are `token_stride` elements apart.
template <int kHeadDim, typename T>
__device__ __forceinline__ void load_tile(T* tile, const T* part, int start, int n, size_t token_stride) {
  using Shape = FlashShape<kHeadDim>;
  for (int c = threadIdx.x; c < kFlashRows * Shape::chunks; c += kFlashThreads) {
    const int row = c / Shape::chunks, chunk = c % Shape::chunks;
    const int token = start + row;
    const bool valid = token < n;
    const T* source = part + static_cast<size_t>(valid ? token : n - 1) * token_stride + chunk * 8;
    cp_async_16(tile + row * Shape::stride + chunk * 8, source, valid ? 16 : 0);
  }
}

// ---------------------------------------------------------------------------------------------
// Kernel

// grid (ceil(N / 64), H, B), 128 threads; dynamic shared memory FlashShape::shared_bytes.
template <int kHeadDim, typename T>
static __global__ void __launch_bounds__(kFlashThreads)
    attention_flash_kernel(const T* __restrict__ qkv,  // [B, N, 3, H, hd]
                           T* __restrict__ out,        // [B, N, H, hd]
                           int N, int H, float scale_log2) {
  using Shape = FlashShape<kHeadDim>;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  T* q_tile = reinterpret_cast<T*>(shared_raw);
  T* k_tile = q_tile + Shape::tile_elements;
  T* v_tile = k_tile + Shape::tile_elements;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = lane / 4, quad_lane = lane % 4;  // mma fragment coordinates
  const int q_start = blockIdx.x * kFlashRows, head = blockIdx.y, b = blockIdx.z;
  const size_t token_stride = static_cast<size_t>(3) * H * kHeadDim;
  const T* q_part = qkv + static_cast<size_t>(b) * N * token_stride + static_cast<size_t>(head) * kHeadDim;
  const T* k_part = q_part + static_cast<size_t>(H) * kHeadDim;
  const T* v_part = k_part + static_cast<size_t>(H) * kHeadDim;

  // Zero the padding columns [hd, padded) once: cp.async never writes them, and Q K^T reads them.
  if constexpr (Shape::padded > kHeadDim) {
    constexpr int pad = Shape::padded - kHeadDim;
    for (int i = threadIdx.x; i < 3 * kFlashRows * pad; i += kFlashThreads) {
      const int row = i / pad, column = kHeadDim + i % pad;  // row over the three tiles
      q_tile[row * Shape::stride + column] = T(0.0f);
    }
  }

  const int key_tiles = (N + kFlashKeys - 1) / kFlashKeys;
  load_tile<kHeadDim>(q_tile, q_part, q_start, N, token_stride);
  load_tile<kHeadDim>(k_tile, k_part, 0, N, token_stride);
  cp_async_commit();  // group: Q, K_0
  load_tile<kHeadDim>(v_tile, v_part, 0, N, token_stride);
  cp_async_commit();  // group: V_0

  unsigned q_fragments[Shape::k_steps][4];
  float o[Shape::d_tiles][4];
  for (int dt = 0; dt < Shape::d_tiles; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY};  // rows group and group + 8, log2 domain
  float row_sum[2] = {0.0f, 0.0f};            // this thread's share of the row sums

  for (int tile = 0; tile < key_tiles; ++tile) {
    const int key_start = tile * kFlashKeys;
    cp_async_wait<1>();  // Q and K_tile have landed; V_tile may still be in flight
    __syncthreads();
    if (tile == 0) {
      for (int kk = 0; kk < Shape::k_steps; ++kk)
        ldmatrix_x4(q_fragments[kk], q_tile + (warp * 16 + lane % 16) * Shape::stride + kk * 16 + (lane / 16) * 8);
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
    __syncthreads();  // every warp is done with k_tile
    const bool prefetch = tile + 1 < key_tiles;
    if (prefetch) {
      load_tile<kHeadDim>(k_tile, k_part, key_start + kFlashKeys, N, token_stride);
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
      cp_async_wait<1>();  // V_tile has landed; K_{tile+1} may still be in flight
    else
      cp_async_wait<0>();
    __syncthreads();

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
    __syncthreads();  // every warp is done with v_tile
    if (prefetch) {
      load_tile<kHeadDim>(v_tile, v_part, key_start + kFlashKeys, N, token_stride);
      cp_async_commit();
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

template <int kHeadDim, typename T>
static void launch_attention_flash(const T* qkv, T* out, int B, int N, int H, cudaStream_t stream) {
  using Shape = FlashShape<kHeadDim>;
  const dim3 grid((N + kFlashRows - 1) / kFlashRows, H, B);
  const float scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(kHeadDim)));
  attention_flash_kernel<kHeadDim, T><<<grid, kFlashThreads, Shape::shared_bytes, stream>>>(qkv, out, N, H, scale_log2);
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
