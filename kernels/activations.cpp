// CPU reference of the activations (kernels/activations.h).
#include "kernels/activations.h"

#include <cmath>

namespace dit::cpu {

void silu(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    out[i] = static_cast<float>(v / (1.0 + std::exp(-v)));
  }
}

void gelu_tanh(const float* x, float* out, int64_t n) {
  const double k = std::sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    out[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v))));
  }
}

}  // namespace dit::cpu
