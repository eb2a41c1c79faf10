// CUDA GroupNorm (+ SiLU) over channels-last activations (kernels/group_norm.h). Statistics in
// two passes (sum, then centred squares), each as per-chunk partial sums in shared memory
// combined in a fixed order, so results are bit-identical run to run (no atomics). Channels-
// last reads stay coalesced: a warp reads 32 consecutive channels of one pixel.
#include "kernels/group_norm.h"

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"

namespace dit::cuda {

constexpr int kPixelsPerChunk = 64;   // pixels one statistics block reduces
constexpr int kChannelLanes = 32;     // blockDim.x of the statistics kernel
constexpr int kPixelLanes = 8;        // blockDim.y of the statistics kernel
constexpr int kMaxChannels = 1536;    // kPixelLanes * C floats of shared memory <= 48 KiB
constexpr int kNormalizeThreads = 256;

static int64_t chunk_count(int64_t P) { return (P + kPixelsPerChunk - 1) / kPixelsPerChunk; }

size_t group_norm_workspace_floats(int N, int64_t P, int groups) {
  return static_cast<size_t>(N) * chunk_count(P) * groups + 2 * static_cast<size_t>(N) * groups;
}

// ---------------------------------------------------------------------------------------------
// Kernels

// Grid (chunks, N), block (32, 8). Writes partial[n, chunk, g] = sum over the chunk's pixels and
// group g's channels of x (kCentred == false) or of (x - mean[n, g])^2 (kCentred == true).
template <typename T, bool kCentred>
static __global__ void group_norm_partial_kernel(const T* __restrict__ x,  // [N, P, C]
                                                 const float* __restrict__ mean,  // [N, G]
                                                 float* __restrict__ partial,     // [N, chunks, G]
                                                 int64_t P, int C, int groups) {
  extern __shared__ float channel_sums[];  // [kPixelLanes, C]
  const int n = blockIdx.y;
  const int64_t chunk = blockIdx.x, chunks = gridDim.x;
  const int per_group = C / groups;
  const int64_t p_begin = chunk * kPixelsPerChunk;
  const int64_t p_end = min(P, p_begin + kPixelsPerChunk);
  const T* image = x + static_cast<int64_t>(n) * P * C;
  for (int c = threadIdx.x; c < C; c += kChannelLanes) {
    const float centre = kCentred ? mean[n * groups + c / per_group] : 0.0f;
    float sum = 0.0f;
    for (int64_t p = p_begin + threadIdx.y; p < p_end; p += kPixelLanes) {
      const float v = to_float(image[p * C + c]) - centre;
      sum += kCentred ? v * v : v;
    }
    channel_sums[threadIdx.y * C + c] = sum;
  }
  __syncthreads();
  const int thread = threadIdx.y * kChannelLanes + threadIdx.x;
  for (int g = thread; g < groups; g += kChannelLanes * kPixelLanes) {
    float sum = 0.0f;
    for (int lane = 0; lane < kPixelLanes; ++lane)
      for (int j = 0; j < per_group; ++j) sum += channel_sums[lane * C + g * per_group + j];
    partial[(static_cast<int64_t>(n) * chunks + chunk) * groups + g] = sum;
  }
}

// One thread per (n, g): combines the chunks in order. kCentred == false: stats[0] = mean;
// kCentred == true: stats[1] = 1 / sqrt(variance + eps).
template <bool kCentred>
static __global__ void group_norm_finish_kernel(const float* __restrict__ partial, float* __restrict__ mean,
                                                float* __restrict__ rstd, int N, int64_t chunks, int groups,
                                                double count, float eps) {
  const int index = blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= N * groups) return;
  const int n = index / groups, g = index % groups;
  double sum = 0.0;
  for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += partial[(n * chunks + chunk) * groups + g];
  if (kCentred)
    rstd[index] = static_cast<float>(1.0 / sqrt(sum / count + static_cast<double>(eps)));
  else
    mean[index] = static_cast<float>(sum / count);
}

template <typename T, bool kSilu>
static __global__ void group_norm_apply_kernel(const T* x,  // may alias out
                                               const float* __restrict__ gamma,
                                               const float* __restrict__ beta, const float* __restrict__ mean,
                                               const float* __restrict__ rstd, T* out, int64_t total,
                                               int64_t P, int C, int groups) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int c = static_cast<int>(i % C);
  const int n = static_cast<int>(i / (P * C));
  const int stat = n * groups + c / (C / groups);
  float v = (to_float(x[i]) - mean[stat]) * rstd[stat] * gamma[c] + beta[c];
  if (kSilu) v = v / (1.0f + expf(-v));
  out[i] = from_float<T>(v);
}

// ---------------------------------------------------------------------------------------------
// Launcher

template <typename T>
static void launch_group_norm(const T* x, const float* gamma, const float* beta, T* out, int N, int64_t P, int C,
                              int groups, float eps, bool silu, float* workspace, cudaStream_t stream) {
  const int64_t chunks = chunk_count(P);
  float* partial = workspace;
  float* mean = partial + static_cast<size_t>(N) * chunks * groups;
  float* rstd = mean + static_cast<size_t>(N) * groups;
  const dim3 stats_grid(static_cast<unsigned>(chunks), N), stats_block(kChannelLanes, kPixelLanes);
  const size_t shared = sizeof(float) * kPixelLanes * C;
  const int finish_blocks = (N * groups + 127) / 128;
  const double count = static_cast<double>(P) * (C / groups);

  group_norm_partial_kernel<T, false><<<stats_grid, stats_block, shared, stream>>>(x, mean, partial, P, C, groups);
  DIT_LAUNCH_CHECK();
  group_norm_finish_kernel<false><<<finish_blocks, 128, 0, stream>>>(partial, mean, rstd, N, chunks, groups, count, eps);
  DIT_LAUNCH_CHECK();
  group_norm_partial_kernel<T, true><<<stats_grid, stats_block, shared, stream>>>(x, mean, partial, P, C, groups);
  DIT_LAUNCH_CHECK();
  group_norm_finish_kernel<true><<<finish_blocks, 128, 0, stream>>>(partial, mean, rstd, N, chunks, groups, count, eps);
  DIT_LAUNCH_CHECK();

  const int64_t total = static_cast<int64_t>(N) * P * C;
  const unsigned blocks = static_cast<unsigned>((total + kNormalizeThreads - 1) / kNormalizeThreads);
  if (silu)
    group_norm_apply_kernel<T, true><<<blocks, kNormalizeThreads, 0, stream>>>(x, gamma, beta, mean, rstd, out, total,
                                                                               P, C, groups);
  else
    group_norm_apply_kernel<T, false><<<blocks, kNormalizeThreads, 0, stream>>>(x, gamma, beta, mean, rstd, out,
                                                                                total, P, C, groups);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void group_norm(const void* x, const float* gamma, const float* beta, void* out, DeviceDtype dtype, int N,
                int64_t P, int C, int groups, float eps, bool silu, float* workspace, cudaStream_t stream) {
  const char* op = "dit::cuda::group_norm";
  require(N > 0 && P > 0 && C > 0 && groups > 0, op, "non-positive size");
  require(C % groups == 0, op, "C " + std::to_string(C) + " is not a multiple of groups " + std::to_string(groups));
  require(C <= kMaxChannels, op, "C " + std::to_string(C) + " > " + std::to_string(kMaxChannels));
  require(chunk_count(P) < (int64_t{1} << 31) && N < 65536, op, "too many pixels or images");
  require(static_cast<int64_t>(N) * P * C / kNormalizeThreads < (int64_t{1} << 31), op, "tensor too large");
  require(eps > 0.0f, op, "eps must be positive");
  require_aligned(x, dtype_bytes(dtype), op, "x");
  require_aligned(out, dtype_bytes(dtype), op, "out");
  require_aligned(gamma, alignof(float), op, "gamma");
  require_aligned(beta, alignof(float), op, "beta");
  require_aligned(workspace, alignof(float), op, "workspace");
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_group_norm(static_cast<const T*>(x), gamma, beta, static_cast<T*>(out), N, P, C, groups, eps, silu,
                      workspace, stream);
  });
}

}  // namespace dit::cuda
