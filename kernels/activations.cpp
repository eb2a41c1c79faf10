// CPU reference of the activations (kernels/activations.h): float64 evaluation, one rounding.
// Parallel above a size where a DiT-XL/2 MLP's GELU (2.4 M elements per block) would otherwise
// cost a serial second per forward pass.
#include "kernels/activations.h"

#include <cmath>

namespace dit::cpu {

constexpr int64_t kParallelThreshold = 1 << 15;

void silu(const float* x, float* out, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    out[i] = static_cast<float>(v / (1.0 + std::exp(-v)));
  }
}

void gelu_tanh(const float* x, float* out, int64_t n) {
  const double k = std::sqrt(2.0 / M_PI);
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    out[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v))));
  }
}

}  // namespace dit::cpu
