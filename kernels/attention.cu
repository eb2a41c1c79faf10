// CUDA naive attention (kernels/attention.h): one block per (query, head, batch); the block
// holds the query and that query's T scores in shared memory, so any head size works. Float32
// scores, softmax and sums whatever the storage dtype. The reference for the fast kernels.
#include "kernels/attention.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/attention_flash.h"
#include "kernels/attention_tiled.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_reduce.cuh"

namespace dit::cuda {

constexpr int kNaiveAttentionThreads = 128;
constexpr size_t kNaiveAttentionMaxShared = 48 * 1024;  // no opt-in needed below this

// Each shared buffer starts on a 16-byte boundary, whatever the head size and token count.
__host__ __device__ constexpr int64_t round_up4(int64_t n) { return (n + 3) / 4 * 4; }

// ---------------------------------------------------------------------------------------------
// Kernel

template <typename T>
static __global__ void attention_naive_kernel(const T* __restrict__ qkv,  // [B, N, 3, H, hd]
                                              T* __restrict__ out,        // [B, N, H, hd]
                                              int N, int H, int hd, float softmax_scale) {
  extern __shared__ float shared[];
  float* q = shared;                       // [hd]
  float* scores = q + round_up4(hd);       // [N], 16-byte aligned
  float* scratch = scores + round_up4(N);  // [32], 16-byte aligned
  const int query = blockIdx.x, head = blockIdx.y, b = blockIdx.z;
  const size_t token_stride = static_cast<size_t>(3) * H * hd;
  const T* base = qkv + static_cast<size_t>(b) * N * token_stride + static_cast<size_t>(head) * hd;
  const T* q_row = base + static_cast<size_t>(query) * token_stride;  // part 0
  const T* k_rows = base + static_cast<size_t>(H) * hd;               // part 1
  const T* v_rows = base + static_cast<size_t>(2) * H * hd;           // part 2

  for (int d = threadIdx.x; d < hd; d += blockDim.x) q[d] = to_float(q_row[d]);
  __syncthreads();

  float local_max = -INFINITY;
  for (int j = threadIdx.x; j < N; j += blockDim.x) {
    const T* k = k_rows + static_cast<size_t>(j) * token_stride;
    float dot = 0.0f;
    for (int d = 0; d < hd; ++d) dot += q[d] * to_float(k[d]);
    const float score = dot * softmax_scale;
    scores[j] = score;
    local_max = fmaxf(local_max, score);
  }
  const float row_max = block_reduce<true>(local_max, scratch);

  float local_sum = 0.0f;
  for (int j = threadIdx.x; j < N; j += blockDim.x) {
    const float p = expf(scores[j] - row_max);
    scores[j] = p;
    local_sum += p;
  }
  const float row_sum = block_reduce<false>(local_sum, scratch);  // also orders the score writes
  const float inv_sum = 1.0f / row_sum;

  T* o = out + (static_cast<size_t>(b) * N + query) * H * hd + static_cast<size_t>(head) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < N; ++j) acc += scores[j] * to_float(v_rows[static_cast<size_t>(j) * token_stride + d]);
    o[d] = from_float<T>(acc * inv_sum);
  }
}

// ---------------------------------------------------------------------------------------------
// Launcher

static size_t naive_attention_shared_bytes(int N, int hd) {
  return static_cast<size_t>(round_up4(hd) + round_up4(N) + 32) * sizeof(float);
}

template <typename T>
static void launch_attention_naive(const T* qkv, T* out, int B, int N, int H, int hd, cudaStream_t stream) {
  const dim3 grid(N, H, B);
  const float softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  attention_naive_kernel<T><<<grid, kNaiveAttentionThreads, naive_attention_shared_bytes(N, hd), stream>>>(
      qkv, out, N, H, hd, softmax_scale);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void attention_naive(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, cudaStream_t stream) {
  const char* op = "dit::cuda::attention_naive";
  require(B > 0 && T > 0 && H > 0 && hd > 0, op, "non-positive size");
  require(T <= 0x7fffffff && H <= 65535 && B <= 65535, op, "grid too large");
  require(naive_attention_shared_bytes(T, hd) <= kNaiveAttentionMaxShared, op,
          "T + hd too large for the scores in shared memory (T = " + std::to_string(T) + ")");
  require_aligned(qkv, dtype_bytes(dtype), op, "qkv");
  require_aligned(out, dtype_bytes(dtype), op, "out");
  dispatch_dtype(dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    launch_attention_naive(static_cast<const E*>(qkv), static_cast<E*>(out), B, T, H, hd, stream);
  });
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
