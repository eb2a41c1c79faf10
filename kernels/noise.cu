// CUDA noise source (kernels/noise.h): one thread per Philox block of four deviates, the
// arithmetic shared with the CPU backend through noise_math.h (round-to-nearest intrinsics on
// the device, so the bits are identical).
#include "kernels/noise.h"

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"
#include "kernels/noise_math.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernel

// grid (ceil(groups / blockDim), rows); out [rows, n].
static __global__ void gaussian_noise_kernel(const uint64_t* __restrict__ seeds,    // [rows] or null
                                             const uint32_t* __restrict__ streams,  // [rows] or null
                                             uint64_t single_seed, uint32_t single_stream, uint32_t slot,
                                             float* __restrict__ out, int64_t n) {
  const int64_t group = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (group * 4 >= n) return;
  const int row = blockIdx.y;
  const uint64_t seed = seeds ? seeds[row] : single_seed;
  const uint32_t stream = streams ? streams[row] : single_stream;
  const noise_math::Philox4 bits =
      noise_math::philox4x32_10(noise_math::noise_counter(static_cast<uint32_t>(group), slot, stream, kNoiseDomainTag),
                                static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  float z[4];
  noise_math::box_muller4(bits, z);
  float* o = out + static_cast<size_t>(row) * n;
  for (int lane = 0; lane < 4 && group * 4 + lane < n; ++lane) o[group * 4 + lane] = z[lane];
}

// ---------------------------------------------------------------------------------------------
// Launcher

static void launch_gaussian_noise(const uint64_t* seeds, const uint32_t* streams, uint64_t single_seed,
                                  uint32_t single_stream, uint32_t slot, float* out, int rows, int64_t n,
                                  cudaStream_t cuda_stream) {
  constexpr int kThreads = 128;
  const int64_t groups = (n + 3) / 4;
  const dim3 grid(static_cast<unsigned>((groups + kThreads - 1) / kThreads), rows);
  gaussian_noise_kernel<<<grid, kThreads, 0, cuda_stream>>>(seeds, streams, single_seed, single_stream, slot, out, n);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entries

void gaussian_noise(uint64_t seed, uint32_t slot, uint32_t stream, float* out, int64_t n, cudaStream_t cuda_stream) {
  const char* op = "dit::cuda::gaussian_noise";
  require(n > 0, op, "empty output");
  // The counter holds the group index in 32 bits (kernels/noise.h).
  require((n + 3) / 4 <= int64_t{0xffffffff}, op, "more than 2^34 elements per image");
  require((n + 3) / 4 / 128 < int64_t{0x7fffffff}, op, "grid too large");
  require_aligned(out, alignof(float), op, "out");
  launch_gaussian_noise(nullptr, nullptr, seed, stream, slot, out, 1, n, cuda_stream);
}

void gaussian_noise_rows(const uint64_t* seeds, const uint32_t* streams, uint32_t slot, float* out, int rows, int64_t n,
                         cudaStream_t cuda_stream) {
  const char* op = "dit::cuda::gaussian_noise_rows";
  require(n > 0 && rows > 0, op, "empty output");
  require(rows <= 65535, op, "more than 65535 rows");
  require((n + 3) / 4 <= int64_t{0xffffffff}, op, "more than 2^34 elements per image");
  require_aligned(seeds, alignof(uint64_t), op, "seeds");
  require_aligned(streams, alignof(uint32_t), op, "streams");
  require_aligned(out, alignof(float), op, "out");
  launch_gaussian_noise(seeds, streams, 0, 0, slot, out, rows, n, cuda_stream);
}

}  // namespace dit::cuda
