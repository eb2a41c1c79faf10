// CPU reference of the patch embedding (kernels/patch_embed.h): each token's p x p x C patch is
// gathered in the weight's (c, r, q) order, then one float64 dot product per output channel.
#include "kernels/patch_embed.h"

#include <cstdint>
#include <vector>

namespace dit::cpu {

void patch_embed(const float* x, const float* weight, const float* bias, const float* pos_embed, float* out, int B,
                 int C, int S, int p, int D) {
  const int g = S / p, T = g * g, patch = C * p * p;
#pragma omp parallel
  {
    std::vector<double> pixels(patch);
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b)
      for (int token = 0; token < T; ++token) {
        const int row = token / g, col = token % g;
        for (int c = 0; c < C; ++c)
          for (int r = 0; r < p; ++r)
            for (int q = 0; q < p; ++q)
              pixels[(c * p + r) * p + q] = x[((static_cast<int64_t>(b) * C + c) * S + row * p + r) * S + col * p + q];
        float* o = out + (static_cast<int64_t>(b) * T + token) * D;
        for (int d = 0; d < D; ++d) {
          const float* w = weight + static_cast<int64_t>(d) * patch;
          double acc = bias[d];
          for (int i = 0; i < patch; ++i) acc += w[i] * pixels[i];
          o[d] = static_cast<float>(acc + pos_embed[static_cast<int64_t>(token) * D + d]);
        }
      }
  }
}

std::vector<float> transpose_patch_weight(const std::vector<float>& weight, int D) {
  const size_t features = static_cast<size_t>(D), patch = weight.size() / features;
  std::vector<float> transposed(weight.size());
  for (size_t d = 0; d < features; ++d)
    for (size_t i = 0; i < patch; ++i) transposed[i * features + d] = weight[d * patch + i];
  return transposed;
}

}  // namespace dit::cpu
