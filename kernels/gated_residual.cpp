// CPU reference of the gated residual (kernels/gated_residual.h): x + gate * y rounded once.
#include "kernels/gated_residual.h"

#include <cstdint>

namespace dit::cpu {

void gated_residual(float* x, const float* y, const float* gate, int gate_stride, int B, int T, int D) {
#pragma omp parallel for collapse(2) schedule(static) if (static_cast <int64_t>(B) * T * D > 65536)
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const int64_t row = (static_cast<int64_t>(b) * T + t) * D;
      const float* g = gate + static_cast<int64_t>(b) * gate_stride;
      for (int d = 0; d < D; ++d) x[row + d] = static_cast<float>(x[row + d] + static_cast<double>(g[d]) * y[row + d]);
    }
}

}  // namespace dit::cpu
