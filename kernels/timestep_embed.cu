// CUDA timestep sinusoid (kernels/timestep_embed.h), float32 as upstream: the frequency is
// exp of a float32 exponent, the argument t * f is rounded to float32, then cos / sin in
// float64 rounded once, as the CPU reference.
#include "kernels/timestep_embed.h"

#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda_check.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernel

// grid (ceil(half / blockDim), B); out [B, dim] = [cos(t f_i) for i < half, sin(t f_i), 0 if odd].
static __global__ void timestep_embed_kernel(const int64_t* __restrict__ t, float* __restrict__ out, int dim,
                                             float minus_log_period) {
  const int half = dim / 2, b = blockIdx.y;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float* o = out + static_cast<size_t>(b) * dim;
  if (i == 0 && dim % 2) o[dim - 1] = 0.0f;
  if (i >= half) return;
  const float exponent = __fdiv_rn(__fmul_rn(minus_log_period, static_cast<float>(i)), static_cast<float>(half));
  const float frequency = static_cast<float>(exp(static_cast<double>(exponent)));
  const double arg = static_cast<double>(__fmul_rn(static_cast<float>(t[b]), frequency));
  // cos/sin of a float64 argument up to ~1e3: through sincospi, whose reduction is exact and
  // needs no stack (cos/sin carry a Payne-Hanek path with a local array); the 1e-16 relative
  // error of arg / pi is far below the float32 rounding that follows.
  double sine, cosine;
  sincospi(arg / 3.141592653589793, &sine, &cosine);
  o[i] = static_cast<float>(cosine);
  o[half + i] = static_cast<float>(sine);
}

// ---------------------------------------------------------------------------------------------
// Launcher

static void launch_timestep_embed(const int64_t* t, float* out, int B, int dim, float max_period, cudaStream_t stream) {
  constexpr int kThreads = 128;
  const int half = dim / 2;
  const float minus_log_period = static_cast<float>(-std::log(static_cast<double>(max_period)));
  const dim3 grid((half + kThreads - 1) / kThreads, B);
  timestep_embed_kernel<<<grid, kThreads, 0, stream>>>(t, out, dim, minus_log_period);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void timestep_embed(const int64_t* t, float* out, int B, int dim, float max_period, cudaStream_t stream) {
  const char* op = "dit::cuda::timestep_embed";
  require(B > 0 && B <= 65535, op, "batch " + std::to_string(B) + " out of range");
  require(dim >= 2, op, "dim must be at least 2");
  require(max_period > 0.0f, op, "max_period must be positive");
  require_aligned(t, alignof(int64_t), op, "t");
  require_aligned(out, alignof(float), op, "out");
  launch_timestep_embed(t, out, B, dim, max_period, stream);
}

}  // namespace dit::cuda
