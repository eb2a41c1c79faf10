// CUDA GroupNorm (+ SiLU) over channels-last activations (kernels/group_norm.h). Statistics in
// two passes (sum, then centred squares), each as per-chunk partial sums combined in a fixed
// order, so results are bit-identical run to run (no atomics).
//
// Layout of the work, chosen from an H200 profile of the SD VAE decode at 256 (fp16), where the
// first version's GroupNorm took 2.6 ms of 4.2 ms of kernels: one thread per (image, group)
// combining 1024 chunk sums one after another (19 us a launch), a normalisation with a 64-bit
// division per element (27 us), and 2-byte statistics loads (13 us).
//   - statistics: a block per (chunk of 64 pixels, image); each thread owns a vector of
//     consecutive channels (16 bytes: 8 halves or 4 floats) and walks the chunk's pixels, so a
//     warp reads whole 512-byte rows; the block then sums each group's channels in a fixed order;
//   - finish: a warp per (image, group), lanes striding over the chunks in float64, then a fixed
//     butterfly across the warp;
//   - normalisation: one 16-byte vector per thread, 32-bit indices inside one image.
#include "kernels/group_norm.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda_check.h"

namespace dit::cuda {

constexpr int kPixelsPerChunk = 64;  // pixels one statistics block reduces
constexpr int kStatsThreads = 256;
constexpr int kMaxChannels = 1536;
constexpr int kFinishWarps = 4;          // (image, group) pairs per finish block
constexpr int kNormalizeThreads = 256;

static int64_t chunk_count(int64_t P) { return (P + kPixelsPerChunk - 1) / kPixelsPerChunk; }

size_t group_norm_workspace_floats(int N, int64_t P, int groups) {
  return static_cast<size_t>(N) * chunk_count(P) * groups + 2 * static_cast<size_t>(N) * groups;
}

// Threads of a statistics block that share one pixel: the largest power of two <= the vectors
// of a pixel, at most the block.
static int vector_lanes_of(int vectors) {
  int lanes = 1;
  while (lanes * 2 <= vectors && lanes * 2 <= kStatsThreads) lanes *= 2;
  return lanes;
}

// ---------------------------------------------------------------------------------------------
// Kernels

template <typename T, int kWidth>
struct alignas(sizeof(T) * kWidth) Vector {
  T v[kWidth];
};

// Channel vectors one statistics thread may own: C / kWidth vectors over at most 256 vector
// lanes, and at least half as many lanes as vectors below that.
template <int kWidth>
constexpr int kMaxVectorsPerThread = std::max(2, (kMaxChannels + kWidth * kStatsThreads - 1) / (kWidth * kStatsThreads));

// Grid (chunks, N), kStatsThreads threads. Thread t owns the channel vectors
// (t % lanes) + lanes * j (j < kMaxVectorsPerThread, below C / kWidth) of the pixels
// p_begin + t / lanes + k * (threads / lanes). Writes partial[n, chunk, g] = sum over the chunk's
// pixels and group g's channels of x (kCentred == false) or of (x - mean[n, g])^2.
template <typename T, int kWidth, bool kCentred>
static __global__ void __launch_bounds__(kStatsThreads)
    group_norm_partial_kernel(const T* __restrict__ x,         // [N, P, C]
                              const float* __restrict__ mean,  // [N, G]
                              float* __restrict__ partial,     // [N, chunks, G]
                              int64_t P, int C, int groups, int lanes) {
  extern __shared__ float channel_sums[];  // [pixel lanes, C]
  const int n = blockIdx.y;
  const int64_t chunk = blockIdx.x, chunks = gridDim.x;
  const int per_group = C / groups, vectors = C / kWidth;
  const int pixel_lanes = kStatsThreads / lanes;
  const int vector_lane = threadIdx.x % lanes, pixel_lane = threadIdx.x / lanes;
  const int64_t p_begin = chunk * kPixelsPerChunk;
  const int64_t p_end = min(P, p_begin + kPixelsPerChunk);
  const T* image = x + static_cast<int64_t>(n) * P * C;

  constexpr int kVectors = kMaxVectorsPerThread<kWidth>;
  float sums[kVectors][kWidth] = {};
  float centres[kVectors][kWidth] = {};
#pragma unroll
  for (int j = 0; j < kVectors; ++j) {
    const int vector = vector_lane + lanes * j;
    if (kCentred && vector < vectors)
#pragma unroll
      for (int k = 0; k < kWidth; ++k) centres[j][k] = mean[n * groups + (vector * kWidth + k) / per_group];
  }
  for (int64_t p = p_begin + pixel_lane; p < p_end; p += pixel_lanes) {
    const T* pixel = image + p * C;
#pragma unroll
    for (int j = 0; j < kVectors; ++j) {
      const int vector = vector_lane + lanes * j;
      if (vector >= vectors) continue;
      const Vector<T, kWidth> loaded = reinterpret_cast<const Vector<T, kWidth>*>(pixel)[vector];
#pragma unroll
      for (int k = 0; k < kWidth; ++k) {
        const float v = to_float(loaded.v[k]) - centres[j][k];
        sums[j][k] += kCentred ? v * v : v;
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kVectors; ++j) {
    const int vector = vector_lane + lanes * j;
    if (vector < vectors)
#pragma unroll
      for (int k = 0; k < kWidth; ++k) channel_sums[pixel_lane * C + vector * kWidth + k] = sums[j][k];
  }
  __syncthreads();
  for (int g = threadIdx.x; g < groups; g += kStatsThreads) {
    float sum = 0.0f;
    for (int lane = 0; lane < pixel_lanes; ++lane)
      for (int c = 0; c < per_group; ++c) sum += channel_sums[lane * C + g * per_group + c];
    partial[(static_cast<int64_t>(n) * chunks + chunk) * groups + g] = sum;
  }
}

// A warp per (n, g): lane l sums chunks l, l + 32, ... in float64, then a fixed butterfly.
// kCentred == false: mean[n, g]; kCentred == true: rstd[n, g] = 1 / sqrt(variance + eps).
template <bool kCentred>
static __global__ void group_norm_finish_kernel(const float* __restrict__ partial, float* __restrict__ mean,
                                                float* __restrict__ rstd, int N, int64_t chunks, int groups,
                                                double count, float eps) {
  const int index = blockIdx.x * kFinishWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (index >= N * groups) return;  // whole warps leave together
  const int n = index / groups, g = index % groups;
  double sum = 0.0;
  for (int64_t chunk = lane; chunk < chunks; chunk += 32) sum += partial[(n * chunks + chunk) * groups + g];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane != 0) return;
  if (kCentred)
    rstd[index] = static_cast<float>(1.0 / sqrt(sum / count + static_cast<double>(eps)));
  else
    mean[index] = static_cast<float>(sum / count);
}

// Grid (blocks over one image's vectors, N); one kWidth-channel vector per thread.
template <typename T, int kWidth, bool kSilu>
static __global__ void __launch_bounds__(kNormalizeThreads)
    group_norm_apply_kernel(const T* x,  // may alias out
                            const float* __restrict__ gamma, const float* __restrict__ beta,
                            const float* __restrict__ mean, const float* __restrict__ rstd, T* out,
                            int image_vectors, int C, int groups) {
  const int i = blockIdx.x * kNormalizeThreads + threadIdx.x;
  if (i >= image_vectors) return;
  const int n = blockIdx.y;
  const int vectors = C / kWidth, per_group = C / groups;
  const int c0 = (i % vectors) * kWidth;
  const int64_t at = static_cast<int64_t>(n) * image_vectors + i;
  Vector<T, kWidth> value = reinterpret_cast<const Vector<T, kWidth>*>(x)[at];
#pragma unroll
  for (int k = 0; k < kWidth; ++k) {
    const int c = c0 + k, stat = n * groups + c / per_group;
    float v = (to_float(value.v[k]) - mean[stat]) * rstd[stat] * gamma[c] + beta[c];
    if (kSilu) v = v / (1.0f + expf(-v));
    value.v[k] = from_float<T>(v);
  }
  reinterpret_cast<Vector<T, kWidth>*>(out)[at] = value;
}

// ---------------------------------------------------------------------------------------------
// Launcher

template <typename T, int kWidth>
static void launch_group_norm(const T* x, const float* gamma, const float* beta, T* out, int N, int64_t P, int C,
                              int groups, float eps, bool silu, float* workspace, cudaStream_t stream) {
  const int64_t chunks = chunk_count(P);
  float* partial = workspace;
  float* mean = partial + static_cast<size_t>(N) * chunks * groups;
  float* rstd = mean + static_cast<size_t>(N) * groups;
  const int vectors = C / kWidth, lanes = vector_lanes_of(vectors);
  require((vectors + lanes - 1) / lanes <= kMaxVectorsPerThread<kWidth>, "dit::cuda::group_norm",
          "C " + std::to_string(C) + " has too many channel vectors per thread");
  const dim3 stats_grid(static_cast<unsigned>(chunks), N);
  const size_t shared = sizeof(float) * (kStatsThreads / lanes) * C;
  const int finish_blocks = (N * groups + kFinishWarps - 1) / kFinishWarps;
  const double count = static_cast<double>(P) * (C / groups);

  group_norm_partial_kernel<T, kWidth, false><<<stats_grid, kStatsThreads, shared, stream>>>(x, mean, partial, P, C,
                                                                                           groups, lanes);
  DIT_LAUNCH_CHECK();
  group_norm_finish_kernel<false><<<finish_blocks, kFinishWarps * 32, 0, stream>>>(partial, mean, rstd, N, chunks,
                                                                                   groups, count, eps);
  DIT_LAUNCH_CHECK();
  group_norm_partial_kernel<T, kWidth, true><<<stats_grid, kStatsThreads, shared, stream>>>(x, mean, partial, P, C,
                                                                                          groups, lanes);
  DIT_LAUNCH_CHECK();
  group_norm_finish_kernel<true><<<finish_blocks, kFinishWarps * 32, 0, stream>>>(partial, mean, rstd, N, chunks,
                                                                                  groups, count, eps);
  DIT_LAUNCH_CHECK();

  const int image_vectors = static_cast<int>(P * C / kWidth);
  const dim3 apply_grid(static_cast<unsigned>((image_vectors + kNormalizeThreads - 1) / kNormalizeThreads), N);
  if (silu)
    group_norm_apply_kernel<T, kWidth, true><<<apply_grid, kNormalizeThreads, 0, stream>>>(
        x, gamma, beta, mean, rstd, out, image_vectors, C, groups);
  else
    group_norm_apply_kernel<T, kWidth, false><<<apply_grid, kNormalizeThreads, 0, stream>>>(
        x, gamma, beta, mean, rstd, out, image_vectors, C, groups);
  DIT_LAUNCH_CHECK();
}

// The widest vector (at most 16 bytes) that divides C and the pointers' alignment.
template <typename T>
static void dispatch_width(const T* x, const float* gamma, const float* beta, T* out, int N, int64_t P, int C,
                           int groups, float eps, bool silu, float* workspace, cudaStream_t stream) {
  auto fits = [&](int width) {
    const uintptr_t bytes = static_cast<uintptr_t>(width) * sizeof(T);
    return C % width == 0 && reinterpret_cast<uintptr_t>(x) % bytes == 0 && reinterpret_cast<uintptr_t>(out) % bytes == 0;
  };
  constexpr int kWide = 16 / static_cast<int>(sizeof(T));
  if (fits(kWide))
    launch_group_norm<T, kWide>(x, gamma, beta, out, N, P, C, groups, eps, silu, workspace, stream);
  else if (fits(2))
    launch_group_norm<T, 2>(x, gamma, beta, out, N, P, C, groups, eps, silu, workspace, stream);
  else
    launch_group_norm<T, 1>(x, gamma, beta, out, N, P, C, groups, eps, silu, workspace, stream);
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
  require(P * C < (int64_t{1} << 31), op, "one image has 2^31 or more elements");
  require(eps > 0.0f, op, "eps must be positive");
  require_aligned(x, dtype_bytes(dtype), op, "x");
  require_aligned(out, dtype_bytes(dtype), op, "out");
  require_aligned(gamma, alignof(float), op, "gamma");
  require_aligned(beta, alignof(float), op, "beta");
  require_aligned(workspace, alignof(float), op, "workspace");
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_width(static_cast<const T*>(x), gamma, beta, static_cast<T*>(out), N, P, C, groups, eps, silu, workspace,
                   stream);
  });
}

}  // namespace dit::cuda
