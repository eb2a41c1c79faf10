// Tile shape: 64 keys per tile, K and V double-buffered in shared memory (tile j + 2 is fetched
// while tile j + 1 is computed; 36 KB at head size 72, so two blocks fit an sm_86 SM), and blocks
// of four warps with 16 or 32 query rows each (FlashForm::row_tiles, one or two m16 row tiles).
// At DiT-XL/2 256 with batch 2 (T = 256, 16 heads) 64-row blocks give 128 blocks, one per SM of
// an H200 (the A5500 has 80), where 128-row blocks would leave half the SMs idle; such a call is
// latency-bound: on an H200, at 14 us in the earlier single-buffered kernel, one warp per
// scheduler issued an instruction every 5.3 cycles. Splitting each block's keys over two or four
// warp groups, combined through shared memory, measured no faster than one group (9.7-10.2 us
// against 9.75 on an H200), so every warp walks all keys of its rows. Where 128-row blocks still
// fill every SM, two row tiles a warp make each K and V fragment serve two mma and halve the K/V
// traffic per row (at T = 1024 with batch 2, 44 us against 52 on an H200).
// The row tiles never change a row's arithmetic (the same key tiles, the same order), so the
// choice by shape (default_form) leaves every output bit as it is.
//
// Rows are 72 halves apart in shared memory for head sizes 64 and 72 (nine 16-byte chunks, odd,
// so ldmatrix's eight rows fall on distinct banks and K/V rows stay contiguous for cp.async);
// head size 72 is 4 k16 steps plus one m16n8k8 step in Q K^T and 9 n8 output tiles in P V, so no
// padding column is loaded or multiplied. The block's Q rows pass through the second K/V stage
// before its first key tiles do; the output leaves through the first stage as 16-byte rows.
//
// FlashAttention-2 (Dao, 2023): S = Q K^T and O += P V on mma.sync with float32 accumulators, the
// online softmax in registers (running max and sum per row, the scale folded into one FMA before
// exp2), P re-packed from the S accumulators as the A operand of P V, the row sums reduced across
// the quad only at the end.
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

constexpr int kFlashKeys = 64;  // keys per tile
constexpr int kBlockWarps = 4;
constexpr int kBlockThreads = kBlockWarps * 32;

template <int kHeadDim>
struct FlashShape {
  static constexpr int chunks = kHeadDim / 8;                                 // 16-byte chunks per row
  static constexpr int stride = (chunks % 2 == 1 ? chunks : chunks + 1) * 8;  // elements
  static constexpr int k16_steps = kHeadDim / 16;
  static constexpr bool k8_tail = kHeadDim % 16 != 0;  // one m16n8k8 step
  static constexpr int d_tiles = kHeadDim / 8;         // n8 tiles of the output
  static constexpr int tile_elements = kFlashKeys * stride;
  static constexpr size_t tile_bytes = tile_elements * 2;
  static_assert(kHeadDim % 8 == 0, "rows of 16-byte chunks");
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
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(shared_address(shared)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(shared)));
}
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned (&r)[2], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
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

// d = a (16x8, row) * b (8x8, col) + d, float32 accumulators.
template <typename T>
__device__ __forceinline__ void mma_1688(float (&d)[4], const unsigned (&a)[2], unsigned b) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(b));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(b));
  }
}

// 2^x in one MUFU instruction; 2^-inf = 0 (masked keys, the first tile's correction).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
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

// kRows rows of q, k or v of one head from token `start` into shared memory, rows past n zeroed.
// `part` points at token 0 of this part and head; rows are `token_stride` elements apart.
template <int kHeadDim, int kRows = kFlashKeys, typename T>
__device__ __forceinline__ void load_tile(T* tile, const T* part, int start, int n, size_t token_stride) {
  using Shape = FlashShape<kHeadDim>;
#pragma unroll
  for (int c = threadIdx.x; c < kRows * Shape::chunks; c += kBlockThreads) {
    const int row = c / Shape::chunks, chunk = c % Shape::chunks;
    const int token = start + row;
    const bool valid = token < n;
    const T* source = part + static_cast<size_t>(valid ? token : n - 1) * token_stride + chunk * 8;
    cp_async_16(tile + row * Shape::stride + chunk * 8, source, valid ? 16 : 0);
  }
}

// ---------------------------------------------------------------------------------------------
// One warp's 16 x kM query rows: Q fragments, output accumulators, softmax statistics

template <int kHeadDim, typename T, int kM>
struct WarpAttention {
  using Shape = FlashShape<kHeadDim>;
  unsigned q[kM][Shape::k16_steps][4];
  unsigned q_tail[kM][2];
  float o[kM][Shape::d_tiles][4];
  float row_max[kM][2];  // rows group and group + 8 of each m16 tile, raw scores (before the scale)
  float row_sum[kM][2];  // this thread's share of the row sums

  // Q fragments of this warp's rows, 16 x kM rows of shared memory from q_rows.
  __device__ __forceinline__ void start(const T* q_rows) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      const T* q_lane = q_rows + (m * 16 + lane % 16) * Shape::stride;
#pragma unroll
      for (int kk = 0; kk < Shape::k16_steps; ++kk) ldmatrix_x4(q[m][kk], q_lane + kk * 16 + (lane / 16) * 8);
      if constexpr (Shape::k8_tail) ldmatrix_x2(q_tail[m], q_lane + Shape::k16_steps * 16);
#pragma unroll
      for (int dt = 0; dt < Shape::d_tiles; ++dt) o[m][dt][0] = o[m][dt][1] = o[m][dt][2] = o[m][dt][3] = 0.0f;
      row_max[m][0] = row_max[m][1] = -INFINITY;
      row_sum[m][0] = row_sum[m][1] = 0.0f;
    }
  }

  // The 64 keys of one K and V tile (shared memory), of which the first valid_keys count. Each
  // K and V fragment loaded serves all kM row tiles.
  __device__ __forceinline__ void attend(const T* k_tile, const T* v_tile, int valid_keys, float scale_log2) {
    const int lane = threadIdx.x % 32, matrix = lane / 8, quad_lane = lane % 4;

    // S = Q K^T: 16 x kM rows x 64 keys, 8 n8 tiles per row tile.
    float s[kM][kFlashKeys / 8][4];
#pragma unroll
    for (int m = 0; m < kM; ++m)
#pragma unroll
      for (int nt = 0; nt < kFlashKeys / 8; ++nt) s[m][nt][0] = s[m][nt][1] = s[m][nt][2] = s[m][nt][3] = 0.0f;
    const T* k_lane = k_tile + ((matrix / 2) * 8 + lane % 8) * Shape::stride + (matrix % 2) * 8;
#pragma unroll
    for (int kk = 0; kk < Shape::k16_steps; ++kk)
#pragma unroll
      for (int nt = 0; nt < kFlashKeys / 8; nt += 2) {
        unsigned b[4];
        ldmatrix_x4(b, k_lane + nt * 8 * Shape::stride + kk * 16);
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          mma_16816<T>(s[m][nt], q[m][kk], b[0], b[1]);
          mma_16816<T>(s[m][nt + 1], q[m][kk], b[2], b[3]);
        }
      }
    if constexpr (Shape::k8_tail) {
      const T* k_tail = k_tile + (matrix * 8 + lane % 8) * Shape::stride + Shape::k16_steps * 16;
#pragma unroll
      for (int nt = 0; nt < kFlashKeys / 8; nt += 4) {
        unsigned b[4];
        ldmatrix_x4(b, k_tail + nt * 8 * Shape::stride);
#pragma unroll
        for (int m = 0; m < kM; ++m)
#pragma unroll
          for (int i = 0; i < 4; ++i) mma_1688<T>(s[m][nt + i], q_tail[m], b[i]);
      }
    }

    // Online softmax; keys past valid_keys (the sequence end) are masked out.
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      if (valid_keys < kFlashKeys) {
#pragma unroll
        for (int nt = 0; nt < kFlashKeys / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (nt * 8 + quad_lane * 2 + (e % 2) >= valid_keys) s[m][nt][e] = -INFINITY;
      }
      float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int nt = 0; nt < kFlashKeys / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) tile_max[e / 2] = fmaxf(tile_max[e / 2], s[m][nt][e]);
      float scaled_max[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
        const float new_max = fmaxf(row_max[m][r], tile_max[r]);  // finite: every tile has a valid key
        const float correction = exp2_approx((row_max[m][r] - new_max) * scale_log2);  // 0 on the first tile
        row_max[m][r] = new_max;
        row_sum[m][r] *= correction;
#pragma unroll
        for (int dt = 0; dt < Shape::d_tiles; ++dt) {
          o[m][dt][2 * r] *= correction;
          o[m][dt][2 * r + 1] *= correction;
        }
        scaled_max[r] = new_max * scale_log2;
      }
#pragma unroll
      for (int nt = 0; nt < kFlashKeys / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[m][nt][e] = exp2_approx(fmaf(s[m][nt][e], scale_log2, -scaled_max[e / 2]));
          row_sum[m][e / 2] += s[m][nt][e];
        }
    }

    // O += P V: P (16 x 64 keys per row tile) from the S accumulators, V (64 keys x hd) via
    // ldmatrix.trans.
    const T* v_lane = v_tile + ((matrix % 2) * 8 + lane % 8) * Shape::stride + (matrix / 2) * 8;
    const T* v_tail = v_tile + (lane % 16) * Shape::stride + (Shape::d_tiles - 1) * 8;
#pragma unroll
    for (int kj = 0; kj < kFlashKeys / 16; ++kj) {
      unsigned p[kM][4];
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        p[m][0] = pack2<T>(s[m][2 * kj][0], s[m][2 * kj][1]);
        p[m][1] = pack2<T>(s[m][2 * kj][2], s[m][2 * kj][3]);
        p[m][2] = pack2<T>(s[m][2 * kj + 1][0], s[m][2 * kj + 1][1]);
        p[m][3] = pack2<T>(s[m][2 * kj + 1][2], s[m][2 * kj + 1][3]);
      }
#pragma unroll
      for (int dt = 0; dt + 1 < Shape::d_tiles; dt += 2) {
        unsigned b[4];
        ldmatrix_x4_trans(b, v_lane + kj * 16 * Shape::stride + dt * 8);
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          mma_16816<T>(o[m][dt], p[m], b[0], b[1]);
          mma_16816<T>(o[m][dt + 1], p[m], b[2], b[3]);
        }
      }
      if constexpr (Shape::d_tiles % 2 == 1) {
        unsigned b[2];
        ldmatrix_x2_trans(b, v_tail + kj * 16 * Shape::stride);
#pragma unroll
        for (int m = 0; m < kM; ++m) mma_16816<T>(o[m][Shape::d_tiles - 1], p[m], b[0], b[1]);
      }
    }
  }

  // Normalises by the full row sums and stores the rows: through `staging` (16 x kM rows of
  // shared memory for this warp alone) so that each row leaves as 16-byte chunks.
  __device__ __forceinline__ void finish(T* staging, T* out, int first_query, int n, size_t out_stride) {
    const int lane = threadIdx.x % 32, group = lane / 4, quad_lane = lane % 4;
#pragma unroll
    for (int m = 0; m < kM; ++m)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float sum = row_sum[m][r];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const float inverse = 1.0f / sum;
        T* row = staging + (m * 16 + group + r * 8) * Shape::stride + quad_lane * 2;
#pragma unroll
        for (int dt = 0; dt < Shape::d_tiles; ++dt) {
          const unsigned bits = pack2<T>(o[m][dt][2 * r] * inverse, o[m][dt][2 * r + 1] * inverse);
          memcpy(row + dt * 8, &bits, sizeof bits);
        }
      }
    __syncwarp();
    for (int c = lane; c < 16 * kM * Shape::chunks; c += 32) {
      const int row = c / Shape::chunks, chunk = c % Shape::chunks;
      if (first_query + row >= n) continue;
      const uint4 bits = *reinterpret_cast<const uint4*>(staging + row * Shape::stride + chunk * 8);
      *reinterpret_cast<uint4*>(out + static_cast<size_t>(first_query + row) * out_stride + chunk * 8) = bits;
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Kernel

// grid (ceil(N / (64 kM)), H, B), 128 threads; dynamic shared memory: two stages of a K and a V
// tile (FlashShape::tile_bytes each, stage s at 2 s tiles, its V tile after its K tile). The
// block's Q rows (kM tiles) pass through stage 1 before its first K/V tiles do, and stage 0
// stages the output at the end.
template <int kHeadDim, typename T, int kM>
static __global__ void __launch_bounds__(kBlockThreads)
    attention_flash_kernel(const T* __restrict__ qkv,  // [B, N, 3, H, hd]
                           T* __restrict__ out,        // [B, N, H, hd]
                           int N, int H, float scale_log2) {
  using Shape = FlashShape<kHeadDim>;
  static_assert(kM <= 2, "the Q rows fit one stage");
  extern __shared__ __align__(16) unsigned char shared_raw[];
  T* stages = reinterpret_cast<T*>(shared_raw);
  auto k_tile = [&](int stage) { return stages + 2 * stage * Shape::tile_elements; };
  auto v_tile = [&](int stage) { return stages + (2 * stage + 1) * Shape::tile_elements; };

  const int warp = threadIdx.x / 32, head = blockIdx.y, b = blockIdx.z;
  const int block_query = blockIdx.x * 64 * kM, first_query = block_query + warp * 16 * kM;
  const size_t token_stride = static_cast<size_t>(3) * H * kHeadDim, out_stride = static_cast<size_t>(H) * kHeadDim;
  const T* q_part = qkv + static_cast<size_t>(b) * N * token_stride + static_cast<size_t>(head) * kHeadDim;
  const T* k_part = q_part + static_cast<size_t>(H) * kHeadDim;
  const T* v_part = k_part + static_cast<size_t>(H) * kHeadDim;
  const int key_tiles = (N + kFlashKeys - 1) / kFlashKeys;
  auto fetch = [&](int j) {
    load_tile<kHeadDim>(k_tile(j % 2), k_part, j * kFlashKeys, N, token_stride);
    load_tile<kHeadDim>(v_tile(j % 2), v_part, j * kFlashKeys, N, token_stride);
    cp_async_commit();
  };

  load_tile<kHeadDim, 64 * kM>(k_tile(1), q_part, block_query, N, token_stride);
  fetch(0);  // with Q
  cp_async_wait<0>();
  __syncthreads();
  WarpAttention<kHeadDim, T, kM> state;
  state.start(k_tile(1) + warp * 16 * kM * Shape::stride);
  __syncthreads();  // every warp holds its Q fragments: stage 1 is free
  if (key_tiles > 1) fetch(1);

  for (int j = 0; j < key_tiles; ++j) {
    if (j > 0) {
      if (j + 1 < key_tiles)
        cp_async_wait<1>();  // tile j has landed; tile j + 1 may be in flight
      else
        cp_async_wait<0>();
      __syncthreads();
    }
    state.attend(k_tile(j % 2), v_tile(j % 2), min(kFlashKeys, N - j * kFlashKeys), scale_log2);
    __syncthreads();  // every warp is done with this stage
    if (j + 2 < key_tiles) fetch(j + 2);
  }
  state.finish(k_tile(0) + warp * 16 * kM * Shape::stride,
               out + static_cast<size_t>(b) * N * out_stride + static_cast<size_t>(head) * kHeadDim, first_query, N,
               out_stride);
}

// ---------------------------------------------------------------------------------------------
// Launcher

template <int kHeadDim, typename T>
static void launch_attention_flash(const T* qkv, T* out, int B, int N, int H, FlashForm form, cudaStream_t stream) {
  using Shape = FlashShape<kHeadDim>;
  constexpr size_t shared = 4 * Shape::tile_bytes;
  static_assert(shared <= 48 * 1024, "within the default dynamic shared memory limit (two blocks per sm_86 SM)");
  static_assert(2 * kFlashKeys >= kBlockWarps * 16 * 2, "one stage holds the Q rows and the output of a block");
  const int rows = 64 * form.row_tiles;
  const dim3 grid((N + rows - 1) / rows, H, B);
  const float scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(kHeadDim)));
  if (form.row_tiles == 1)
    attention_flash_kernel<kHeadDim, T, 1><<<grid, kBlockThreads, shared, stream>>>(qkv, out, N, H, scale_log2);
  else
    attention_flash_kernel<kHeadDim, T, 2><<<grid, kBlockThreads, shared, stream>>>(qkv, out, N, H, scale_log2);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entries

bool attention_flash_supported(DeviceDtype dtype, int head_dim) {
  return dtype != DeviceDtype::f32 && (head_dim == 64 || head_dim == 72);
}

std::vector<FlashForm> attention_flash_forms() { return {{1}, {2}}; }

FlashForm attention_flash_default_form(int B, int T, int H) {
  int device = 0, sms = 0;
  DIT_CUDA_CHECK(cudaGetDevice(&device));
  DIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const long long wide_blocks = static_cast<long long>((T + 127) / 128) * H * B;
  return {wide_blocks >= sms ? 2 : 1};
}

std::string flash_form_name(FlashForm form) { return "rows" + std::to_string(64 * form.row_tiles); }

void attention_flash(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, FlashForm form,
                     cudaStream_t stream) {
  const char* op = "dit::cuda::attention_flash";
  require(
      attention_flash_supported(dtype, hd), op,
      std::string("needs f16 or bf16 and head size 64 or 72, got ") + dtype_name(dtype) + " and " + std::to_string(hd));
  require(B > 0 && T > 0 && H > 0, op, "non-positive size");
  require(B <= 65535 && H <= 65535, op, "grid too large");
  require(form.row_tiles == 1 || form.row_tiles == 2, op, "row_tiles must be 1 or 2");
  require_aligned(qkv, 16, op, "qkv");  // cp.async moves 16-byte chunks; hd * 2 bytes is a multiple of 16
  require_aligned(out, 16, op, "out");  // rows leave as 16-byte chunks
  auto run = [&](auto tag) {
    using E = typename decltype(tag)::type;
    if (hd == 64)
      launch_attention_flash<64>(static_cast<const E*>(qkv), static_cast<E*>(out), B, T, H, form, stream);
    else
      launch_attention_flash<72>(static_cast<const E*>(qkv), static_cast<E*>(out), B, T, H, form, stream);
  };
  if (dtype == DeviceDtype::f16)
    run(std::type_identity<__half>{});
  else
    run(std::type_identity<__nv_bfloat16>{});
}

void attention_flash(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, cudaStream_t stream) {
  attention_flash(qkv, out, dtype, B, T, H, hd, attention_flash_default_form(B, T, H), stream);
}

}  // namespace dit::cuda
