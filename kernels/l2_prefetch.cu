// L2 prefetch of a device range (kernels/l2_prefetch.h). A grid-stride loop over the range's
// lines: a thread issues its prefetches back to back (nothing waits on them), so the kernel ends
// long before the lines arrive; the load form waits for its loads (volatile asm, their values
// folded into a store the launcher disables with a null pointer).
#include "kernels/l2_prefetch.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda_check.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernels

constexpr int kPrefetchThreads = 256;
constexpr int kPrefetchMaxBlocks = 32;  // a few SMs' worth: it runs beside the main chain's kernels

static __global__ void __launch_bounds__(kPrefetchThreads)
    prefetch_l2_kernel(const char* __restrict__ base, size_t bytes) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x * 128;
  for (size_t offset = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * 128; offset < bytes;
       offset += stride)
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(base + offset));
}

static __global__ void __launch_bounds__(kPrefetchThreads)
    load_l2_kernel(const char* __restrict__ base, size_t bytes, unsigned* never_written) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x * 256;
  unsigned folded = 0;
  for (size_t offset = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * 256; offset + 4 <= bytes;
       offset += stride) {
    unsigned value;
    asm volatile("ld.global.L2::256B.u32 %0, [%1];\n" : "=r"(value) : "l"(base + offset));
    folded ^= value;
  }
  if (never_written && folded == 0x9e3779b9u) *never_written = folded;  // the launcher passes null
}

// ---------------------------------------------------------------------------------------------
// Launcher

static void launch_prefetch_l2(const char* data, size_t bytes, PrefetchMode mode, cudaStream_t stream) {
  const size_t step = mode == PrefetchMode::prefetch ? 128 : 256;
  const size_t lines = (bytes + step - 1) / step;
  const unsigned blocks =
      static_cast<unsigned>(std::clamp<size_t>((lines + kPrefetchThreads - 1) / kPrefetchThreads, 1, kPrefetchMaxBlocks));
  if (mode == PrefetchMode::prefetch)
    prefetch_l2_kernel<<<blocks, kPrefetchThreads, 0, stream>>>(data, bytes);
  else
    load_l2_kernel<<<blocks, kPrefetchThreads, 0, stream>>>(data, bytes, nullptr);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void prefetch_l2(const void* data, size_t bytes, PrefetchMode mode, cudaStream_t stream) {
  if (bytes == 0) return;
  const char* op = "dit::cuda::prefetch_l2";
  require(data != nullptr, op, "data is null");
  require(reinterpret_cast<uintptr_t>(data) % 4 == 0, op, "data is not 4-byte aligned");
  launch_prefetch_l2(static_cast<const char*>(data), bytes, mode, stream);
}

}  // namespace dit::cuda
