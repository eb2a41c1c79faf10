// CUDA channels-last to planar image conversion (kernels/vae_image.h): one thread per output
// element, so that the float32 writes are coalesced; a warp's reads fall in 32 consecutive pixels.
#include "kernels/vae_image.h"

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"

namespace dit::cuda {

constexpr int kImageThreads = 256;

// ---------------------------------------------------------------------------------------------
// Kernel

template <typename T>
static __global__ void channels_last_to_planar_kernel(const T* __restrict__ in,  // [N, P, C_stride]
                                                      float* __restrict__ out,   // [N, C, P]
                                                      int64_t total, int64_t P, int C_stride, int C) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t p = i % P, plane = i / P;  // plane = n * C + c
  const int c = static_cast<int>(plane % C);
  const int64_t n = plane / C;
  out[i] = to_float(in[(n * P + p) * C_stride + c]);
}

// ---------------------------------------------------------------------------------------------
// Public entry

void channels_last_to_planar(const void* in, DeviceDtype dtype, float* out, int N, int64_t P, int C_stride, int C,
                             cudaStream_t stream) {
  const char* op = "dit::cuda::channels_last_to_planar";
  require(N > 0 && P > 0 && C > 0, op, "non-positive size");
  require(C <= C_stride, op, "C " + std::to_string(C) + " > C_stride " + std::to_string(C_stride));
  const int64_t total = static_cast<int64_t>(N) * C * P;
  require(total / kImageThreads < (int64_t{1} << 31), op, "tensor too large");
  require_aligned(in, dtype_bytes(dtype), op, "in");
  require_aligned(out, alignof(float), op, "out");
  const auto* a = static_cast<const char*>(in);
  const auto* b = reinterpret_cast<const char*>(out);
  const size_t in_bytes = static_cast<size_t>(N) * P * C_stride * dtype_bytes(dtype);
  require(a + in_bytes <= b || b + static_cast<size_t>(total) * sizeof(float) <= a, op, "in and out overlap");
  const unsigned blocks = static_cast<unsigned>((total + kImageThreads - 1) / kImageThreads);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    channels_last_to_planar_kernel<T>
        <<<blocks, kImageThreads, 0, stream>>>(static_cast<const T*>(in), out, total, P, C_stride, C);
    DIT_LAUNCH_CHECK();
  });
}

}  // namespace dit::cuda
