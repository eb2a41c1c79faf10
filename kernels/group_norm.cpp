// CPU reference of GroupNorm (+ SiLU) (kernels/group_norm.h).
#include "kernels/group_norm.h"

#include <cmath>
#include <vector>

namespace dit::cpu {

void group_norm(const float* x, const float* gamma, const float* beta, float* out, int N, int64_t P, int C, int groups,
                float eps, bool silu) {
  const int per_group = C / groups;
  const double count = static_cast<double>(P) * per_group;
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < N; ++n) {
    for (int g = 0; g < groups; ++g) {
      const float* image = x + static_cast<int64_t>(n) * P * C;
      float* image_out = out + static_cast<int64_t>(n) * P * C;
      const int c0 = g * per_group;
      double sum = 0;
      for (int64_t p = 0; p < P; ++p)
        for (int j = 0; j < per_group; ++j) sum += image[p * C + c0 + j];
      const double mean = sum / count;
      double squares = 0;
      for (int64_t p = 0; p < P; ++p)
        for (int j = 0; j < per_group; ++j) {
          const double d = image[p * C + c0 + j] - mean;
          squares += d * d;
        }
      const double rstd = 1.0 / std::sqrt(squares / count + eps);
      for (int64_t p = 0; p < P; ++p)
        for (int j = 0; j < per_group; ++j) {
          const int c = c0 + j;
          double v = (image[p * C + c] - mean) * rstd * gamma[c] + beta[c];
          if (silu) v = v / (1.0 + std::exp(-v));
          image_out[p * C + c] = static_cast<float>(v);
        }
    }
  }
}

}  // namespace dit::cpu
