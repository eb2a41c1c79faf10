// CPU reference of the per-channel bias (kernels/vae_bias.h).
#include "kernels/vae_bias.h"

namespace dit::cpu {

void vae_add_bias(float* x, const float* bias, int64_t rows, int C) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < C; ++c) x[r * C + c] += bias[c];
}

}  // namespace dit::cpu
