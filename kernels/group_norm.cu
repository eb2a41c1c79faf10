// CUDA GroupNorm (+ SiLU) over channels-last activations (kernels/group_norm.h). Statistics per
// chunk of pixels in two passes over the chunk (its sum, then its squares about its own mean),
// combined per (image, group) in a fixed order, so results are bit-identical run to run (no
// atomics). Three launches: statistics, finish, normalisation.
//
// Layout of the work, chosen from an H200 profile of the SD VAE decode at 256 (fp16), where the
// first version's GroupNorm took 2.6 ms of 4.2 ms of kernels: one thread per (image, group)
// combining 1024 chunk sums one after another (19 us a launch), a normalisation with a 64-bit
// division per element (27 us), and 2-byte statistics loads (13 us).
//   - statistics: a block per (chunk of 64 pixels, image); each thread owns a vector of
//     consecutive channels (16 bytes: 8 halves or 4 floats) and walks the chunk's pixels, so a
//     warp reads whole 512-byte rows; the block then sums each group's channels in a fixed order.
//     The second pass re-reads the chunk right after the first, from L2 on the H200 (50 MB); on
//     the A5500's 6 MB L2 part of it may come from DRAM again. (The first rewrite ran the whole
//     tensor twice, mean then centred squares, in five launches: 0.66 of its 1.03 ms per decode
//     at 256 on the H200 were those statistics.)
//   - finish: a warp per (image, group), lanes striding over the chunks in float64, then a fixed
//     butterfly across the warp; the chunks' squares are moved to the group's mean by Chan,
//     Golub and LeVeque's pairwise update;
//   - normalisation: one 16-byte vector per thread, 32-bit indices inside one image.
#include "kernels/group_norm.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda_check.h"

namespace dit::cuda {

constexpr int kPixelsPerChunk = 64;  // pixels one statistics block reduces
constexpr int kStatsThreads = 256;
constexpr int kMaxChannels = 1536;
constexpr int kFinishWarps = 4;  // (image, group) pairs per finish block
constexpr int kNormalizeThreads = 256;

static int64_t chunk_count(int64_t P) { return (P + kPixelsPerChunk - 1) / kPixelsPerChunk; }

size_t group_norm_workspace_floats(int N, int64_t P, int groups) {
  return 2 * static_cast<size_t>(N) * chunk_count(P) * groups + 2 * static_cast<size_t>(N) * groups;
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
constexpr int kMaxVectorsPerThread = std::max(2,
                                              (kMaxChannels + kWidth * kStatsThreads - 1) / (kWidth * kStatsThreads));

// Sums over one chunk of this thread's channel vectors: of x (kCentred == false) or of
// (x - centre)^2, centre the block's mean of the channel's group (block_mean[g]).
template <typename T, int kWidth, bool kCentred>
__device__ __forceinline__ void chunk_channel_sums(const T* __restrict__ image, const float* block_mean,
                                                   float (&sums)[kMaxVectorsPerThread<kWidth>][kWidth], int64_t p_begin,
                                                   int64_t p_end, int C, int per_group, int lanes) {
  constexpr int kVectors = kMaxVectorsPerThread<kWidth>;
  const int vectors = C / kWidth, pixel_lanes = kStatsThreads / lanes;
  const int vector_lane = threadIdx.x % lanes, pixel_lane = threadIdx.x / lanes;
  float centres[kVectors][kWidth] = {};
#pragma unroll
  for (int j = 0; j < kVectors; ++j) {
    const int vector = vector_lane + lanes * j;
#pragma unroll
    for (int k = 0; k < kWidth; ++k) {
      sums[j][k] = 0.0f;
      if (kCentred && vector < vectors) centres[j][k] = block_mean[(vector * kWidth + k) / per_group];
    }
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
}

// The block's per-group totals of `sums` (every thread's), in a fixed order: written to
// group_totals[g] for g < groups. Ends with the block synchronised.
template <int kWidth>
__device__ __forceinline__ void block_group_totals(const float (&sums)[kMaxVectorsPerThread<kWidth>][kWidth],
                                                   float* channel_sums, float* group_totals, int C, int groups,
                                                   int lanes) {
  const int vectors = C / kWidth, per_group = C / groups, pixel_lanes = kStatsThreads / lanes;
  const int vector_lane = threadIdx.x % lanes, pixel_lane = threadIdx.x / lanes;
#pragma unroll
  for (int j = 0; j < kMaxVectorsPerThread<kWidth>; ++j) {
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
    group_totals[g] = sum;
  }
  __syncthreads();
}

// Grid (chunks, N), kStatsThreads threads. Thread t owns the channel vectors
// (t % lanes) + lanes * j (j < kMaxVectorsPerThread, below C / kWidth) of the pixels
// p_begin + t / lanes + k * (threads / lanes). For each group g of image n, writes the chunk's
// sum of x to partial[n, chunk, g, 0] and its sum of squares about the chunk's own mean to
// partial[n, chunk, g, 1]: the chunk is read twice, the second time from cache (64 pixels, at
// most 192 KB), so the statistics cost one pass over memory and stay as exact as two passes.
template <typename T, int kWidth>
static __global__ void __launch_bounds__(kStatsThreads)
    group_norm_partial_kernel(const T* __restrict__ x,      // [N, P, C]
                              float* __restrict__ partial,  // [N, chunks, G, 2]
                              int64_t P, int C, int groups, int lanes) {
  extern __shared__ float shared[];  // [pixel lanes, C] channel sums, then [G] group totals
  float* channel_sums = shared;
  float* group_totals = shared + (kStatsThreads / lanes) * C;
  const int n = blockIdx.y;
  const int64_t chunk = blockIdx.x, chunks = gridDim.x;
  const int per_group = C / groups;
  const int64_t p_begin = chunk * kPixelsPerChunk;
  const int64_t p_end = min(P, p_begin + kPixelsPerChunk);
  const T* image = x + static_cast<int64_t>(n) * P * C;
  float* out = partial + (static_cast<int64_t>(n) * chunks + chunk) * groups * 2;
  const float count = static_cast<float>((p_end - p_begin) * per_group);

  float sums[kMaxVectorsPerThread<kWidth>][kWidth];
  chunk_channel_sums<T, kWidth, false>(image, nullptr, sums, p_begin, p_end, C, per_group, lanes);
  block_group_totals<kWidth>(sums, channel_sums, group_totals, C, groups, lanes);
  for (int g = threadIdx.x; g < groups; g += kStatsThreads) {
    out[2 * g] = group_totals[g];
    group_totals[g] /= count;  // the chunk's mean, the centre of the second pass
  }
  __syncthreads();
  chunk_channel_sums<T, kWidth, true>(image, group_totals, sums, p_begin, p_end, C, per_group, lanes);
  __syncthreads();  // every thread has read its centres before the totals are overwritten
  block_group_totals<kWidth>(sums, channel_sums, group_totals, C, groups, lanes);
  for (int g = threadIdx.x; g < groups; g += kStatsThreads) out[2 * g + 1] = group_totals[g];
}

// A warp per (n, g), float64: lanes stride over the chunks and a fixed butterfly combines them,
// first the sums (the mean), then the chunks' squares about their own means, each moved to the
// group's mean (Chan et al.'s pairwise update: M2 += m2_b + n_b (mean_b - mean)^2).
static __global__ void group_norm_finish_kernel(const float* __restrict__ partial, float* __restrict__ mean,
                                                float* __restrict__ rstd, int N, int64_t chunks, int groups, int64_t P,
                                                int per_group, float eps) {
  const int index = blockIdx.x * kFinishWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (index >= N * groups) return;  // whole warps leave together
  const int n = index / groups, g = index % groups;
  const float* stats = partial + static_cast<int64_t>(n) * chunks * groups * 2 + 2 * g;
  const int64_t stride = static_cast<int64_t>(groups) * 2;
  double sum = 0.0;
  for (int64_t chunk = lane; chunk < chunks; chunk += 32) sum += stats[chunk * stride];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const double count = static_cast<double>(P) * per_group;
  const double group_mean = sum / count;
  double squares = 0.0;
  for (int64_t chunk = lane; chunk < chunks; chunk += 32) {
    const int64_t pixels = min(P, (chunk + 1) * kPixelsPerChunk) - chunk * kPixelsPerChunk;
    const double values = static_cast<double>(pixels) * per_group;
    const double shift = static_cast<double>(stats[chunk * stride]) / values - group_mean;
    squares += static_cast<double>(stats[chunk * stride + 1]) + values * shift * shift;
  }
  for (int offset = 16; offset > 0; offset /= 2) squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  if (lane != 0) return;
  mean[index] = static_cast<float>(group_mean);
  rstd[index] = static_cast<float>(1.0 / sqrt(squares / count + static_cast<double>(eps)));
}

// Grid (blocks over one image's vectors, N); one kWidth-channel vector per thread.
template <typename T, int kWidth, bool kSilu>
static __global__ void __launch_bounds__(kNormalizeThreads)
    group_norm_apply_kernel(const T* x,  // may alias out
                            const float* __restrict__ gamma, const float* __restrict__ beta,
                            const float* __restrict__ mean, const float* __restrict__ rstd, T* out, int image_vectors,
                            int C, int groups) {
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
  float* mean = partial + static_cast<size_t>(N) * chunks * groups * 2;
  float* rstd = mean + static_cast<size_t>(N) * groups;
  const int vectors = C / kWidth, lanes = vector_lanes_of(vectors);
  require((vectors + lanes - 1) / lanes <= kMaxVectorsPerThread<kWidth>, "dit::cuda::group_norm",
          "C " + std::to_string(C) + " has too many channel vectors per thread");
  const dim3 stats_grid(static_cast<unsigned>(chunks), N);
  const size_t shared = sizeof(float) * ((kStatsThreads / lanes) * C + groups);
  const int finish_blocks = (N * groups + kFinishWarps - 1) / kFinishWarps;

  group_norm_partial_kernel<T, kWidth><<<stats_grid, kStatsThreads, shared, stream>>>(x, partial, P, C, groups, lanes);
  DIT_LAUNCH_CHECK();
  group_norm_finish_kernel<<<finish_blocks, kFinishWarps * 32, 0, stream>>>(partial, mean, rstd, N, chunks, groups, P,
                                                                            C / groups, eps);
  DIT_LAUNCH_CHECK();

  const int image_vectors = static_cast<int>(P * C / kWidth);
  const dim3 apply_grid(static_cast<unsigned>((image_vectors + kNormalizeThreads - 1) / kNormalizeThreads), N);
  if (silu)
    group_norm_apply_kernel<T, kWidth, true>
        <<<apply_grid, kNormalizeThreads, 0, stream>>>(x, gamma, beta, mean, rstd, out, image_vectors, C, groups);
  else
    group_norm_apply_kernel<T, kWidth, false>
        <<<apply_grid, kNormalizeThreads, 0, stream>>>(x, gamma, beta, mean, rstd, out, image_vectors, C, groups);
  DIT_LAUNCH_CHECK();
}

// The widest vector (at most 16 bytes) that divides C and the pointers' alignment.
template <typename T>
static void dispatch_width(const T* x, const float* gamma, const float* beta, T* out, int N, int64_t P, int C,
                           int groups, float eps, bool silu, float* workspace, cudaStream_t stream) {
  auto fits = [&](int width) {
    const uintptr_t bytes = static_cast<uintptr_t>(width) * sizeof(T);
    return C % width == 0 && reinterpret_cast<uintptr_t>(x) % bytes == 0 &&
           reinterpret_cast<uintptr_t>(out) % bytes == 0;
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

void group_norm(const void* x, const float* gamma, const float* beta, void* out, DeviceDtype dtype, int N, int64_t P,
                int C, int groups, float eps, bool silu, float* workspace, cudaStream_t stream) {
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
