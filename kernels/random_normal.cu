// CUDA seeded normal deviates (kernels/random_normal.h): one thread per Philox block of four,
// the arithmetic shared with the CPU reference through noise_math.h (round-to-nearest intrinsics,
// so the bits are identical), written in the output type.
#include "kernels/random_normal.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda_check.h"
#include "kernels/noise_math.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernel

template <typename T>
static __global__ void random_normal_kernel(uint32_t key0, uint32_t key1, uint32_t stream, uint32_t tag, float scale,
                                            T* __restrict__ out, int64_t n) {
  const int64_t groups = (n + 3) / 4;
  for (int64_t group = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; group < groups;
       group += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const noise_math::Philox4 bits = noise_math::philox4x32_10(
        noise_math::noise_counter(static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32), stream, tag), key0,
        key1);
    float z[4];
    noise_math::box_muller4(bits, z);
    for (int lane = 0; lane < 4 && group * 4 + lane < n; ++lane)
      out[group * 4 + lane] = from_float<T>(__fmul_rn(scale, z[lane]));
  }
}

// ---------------------------------------------------------------------------------------------
// Public entry (the launch is one grid-stride kernel of the output type)

void random_normal(uint64_t seed, uint32_t stream, uint32_t tag, float scale, void* out, DeviceDtype dtype, int64_t n,
                   cudaStream_t cuda_stream) {
  const char* op = "dit::cuda::random_normal";
  require(n > 0, op, "empty output");
  require_aligned(out, dtype_bytes(dtype), op, "out");
  constexpr int kThreads = 256;
  const int64_t groups = (n + 3) / 4;
  // A grid-stride loop: at most 65536 blocks, each thread taking several groups when n is large.
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((groups + kThreads - 1) / kThreads, 65536));
  const auto key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
  dispatch_dtype(dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    random_normal_kernel<T>
        <<<blocks, kThreads, 0, cuda_stream>>>(key0, key1, stream, tag, scale, static_cast<T*>(out), n);
  });
  DIT_LAUNCH_CHECK();
}

}  // namespace dit::cuda
