// CUDA row softmax for the VAE attention (kernels/vae_softmax.h): one block per row, three
// sweeps over the row (max, sum of exponentials, normalise) with float32 arithmetic and
// shuffle-then-shared-memory reductions in a fixed order, so results repeat bit for bit.
#include "kernels/vae_softmax.h"

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"

namespace dit::cuda {

constexpr int kSoftmaxThreads = 256;

// ---------------------------------------------------------------------------------------------
// Kernel

template <bool kMax>
static __device__ float softmax_block_reduce(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // scratch may still be in use by the previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float result = scratch[0];
  for (int w = 1; w < kSoftmaxThreads / 32; ++w) result = kMax ? fmaxf(result, scratch[w]) : result + scratch[w];
  return result;
}

template <typename T>
static __global__ void vae_softmax_kernel(const T* in, T* out, int64_t L) {  // in may alias out
  __shared__ float scratch[kSoftmaxThreads / 32];
  const T* row = in + static_cast<int64_t>(blockIdx.x) * L;
  T* row_out = out + static_cast<int64_t>(blockIdx.x) * L;
  float peak = -INFINITY;
  for (int64_t j = threadIdx.x; j < L; j += kSoftmaxThreads) peak = fmaxf(peak, to_float(row[j]));
  peak = softmax_block_reduce<true>(peak, scratch);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < L; j += kSoftmaxThreads) sum += expf(to_float(row[j]) - peak);
  const float inverse = 1.0f / softmax_block_reduce<false>(sum, scratch);
  for (int64_t j = threadIdx.x; j < L; j += kSoftmaxThreads)
    row_out[j] = from_float<T>(expf(to_float(row[j]) - peak) * inverse);
}

// ---------------------------------------------------------------------------------------------
// Launcher

template <typename T>
static void launch_vae_softmax(const T* in, T* out, int64_t R, int64_t L, cudaStream_t stream) {
  vae_softmax_kernel<T><<<static_cast<unsigned>(R), kSoftmaxThreads, 0, stream>>>(in, out, L);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void vae_softmax(const void* in, void* out, DeviceDtype dtype, int64_t R, int64_t L, cudaStream_t stream) {
  const char* op = "dit::cuda::vae_softmax";
  require(R > 0 && L > 0, op, "non-positive size");
  require(R < (int64_t{1} << 31), op, "too many rows");
  require_aligned(in, dtype_bytes(dtype), op, "in");
  require_aligned(out, dtype_bytes(dtype), op, "out");
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_vae_softmax(static_cast<const T*>(in), static_cast<T*>(out), R, L, stream);
  });
}

}  // namespace dit::cuda
