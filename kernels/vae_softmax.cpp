// CPU reference of the VAE attention's row softmax (kernels/vae_softmax.h).
#include "kernels/vae_softmax.h"

#include <algorithm>
#include <cmath>

namespace dit::cpu {

void vae_softmax(const float* in, float* out, int64_t R, int64_t L) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    const float* row = in + r * L;
    float* row_out = out + r * L;
    const double peak = *std::max_element(row, row + L);
    double sum = 0;
    for (int64_t j = 0; j < L; ++j) sum += std::exp(row[j] - peak);
    for (int64_t j = 0; j < L; ++j) row_out[j] = static_cast<float>(std::exp(row[j] - peak) / sum);
  }
}

}  // namespace dit::cpu
