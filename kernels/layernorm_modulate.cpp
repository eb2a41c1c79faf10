// CPU reference of LayerNorm + adaLN modulation (kernels/layernorm_modulate.h). Two-pass mean and
// variance in float64 (no cancellation from E[x^2] - E[x]^2), biased variance as PyTorch.
#include "kernels/layernorm_modulate.h"

#include <cmath>
#include <cstdint>

namespace dit::cpu {

void layernorm_modulate(const float* x, const float* shift, const float* scale, int mod_stride, float* out, int B,
                        int T, int D, float eps) {
#pragma omp parallel for collapse(2) schedule(static) if (static_cast <int64_t>(B) * T * D > 65536)
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const int64_t row = (static_cast<int64_t>(b) * T + t) * D;
      const float* xr = x + row;
      double mean = 0.0;
      for (int d = 0; d < D; ++d) mean += xr[d];
      mean /= D;
      double variance = 0.0;
      for (int d = 0; d < D; ++d) variance += (xr[d] - mean) * (xr[d] - mean);
      variance /= D;
      const double inv_std = 1.0 / std::sqrt(variance + static_cast<double>(eps));
      const float* sh = shift + static_cast<int64_t>(b) * mod_stride;
      const float* sc = scale + static_cast<int64_t>(b) * mod_stride;
      for (int d = 0; d < D; ++d) out[row + d] = static_cast<float>((xr[d] - mean) * inv_std * (1.0 + sc[d]) + sh[d]);
    }
}

}  // namespace dit::cpu
