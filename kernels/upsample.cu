// CUDA nearest 2x upsampling (kernels/upsample.h): one thread per pair of channels of one output
// pixel, moved as a single 4-byte (16-bit types) or 8-byte (float32) word.
#include "kernels/upsample.h"

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"

namespace dit::cuda {

constexpr int kUpsampleThreads = 256;

// ---------------------------------------------------------------------------------------------
// Kernel

template <typename Word>
static __global__ void upsample_nearest2x_kernel(const Word* __restrict__ in,  // [N, H, W, C/2]
                                                 Word* __restrict__ out,       // [N, 2H, 2W, C/2]
                                                 int64_t total, int H, int W, int words) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int word = static_cast<int>(i % words);
  const int64_t pixel = i / words;
  const int x = static_cast<int>(pixel % (2 * W));
  const int64_t row = pixel / (2 * W);  // n * 2H + y
  const int y = static_cast<int>(row % (2 * H));
  const int64_t n = row / (2 * H);
  out[i] = in[((n * H + y / 2) * W + x / 2) * words + word];
}

// ---------------------------------------------------------------------------------------------
// Launcher

template <typename Word>
static void launch_upsample(const void* in, void* out, int N, int H, int W, int words, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(N) * 4 * H * W * words;
  const unsigned blocks = static_cast<unsigned>((total + kUpsampleThreads - 1) / kUpsampleThreads);
  upsample_nearest2x_kernel<Word><<<blocks, kUpsampleThreads, 0, stream>>>(static_cast<const Word*>(in),
                                                                           static_cast<Word*>(out), total, H, W, words);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void upsample_nearest2x(const void* in, void* out, DeviceDtype dtype, int N, int H, int W, int C, cudaStream_t stream) {
  const char* op = "dit::cuda::upsample_nearest2x";
  require(N > 0 && H > 0 && W > 0 && C > 0, op, "non-positive size");
  require(C % 2 == 0, op, "C " + std::to_string(C) + " is odd");
  const size_t word_bytes = 2 * dtype_bytes(dtype);
  require_aligned(in, word_bytes, op, "in");
  require_aligned(out, word_bytes, op, "out");
  const int64_t total = static_cast<int64_t>(N) * 4 * H * W * (C / 2);
  require(total / kUpsampleThreads < (int64_t{1} << 31), op, "tensor too large");
  const size_t in_bytes = static_cast<size_t>(total / 4) * word_bytes;
  const auto* a = static_cast<const char*>(in);
  const auto* b = static_cast<const char*>(out);
  require(a + in_bytes <= b || b + 4 * in_bytes <= a, op, "in and out overlap");
  if (dtype == DeviceDtype::f32)
    launch_upsample<uint2>(in, out, N, H, W, C / 2, stream);
  else
    launch_upsample<uint32_t>(in, out, N, H, W, C / 2, stream);
}

}  // namespace dit::cuda
