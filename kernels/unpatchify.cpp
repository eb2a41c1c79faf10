// CPU reference of unpatchify (kernels/unpatchify.h): a pure permutation, no arithmetic.
#include "kernels/unpatchify.h"

#include <cstdint>

namespace dit::cpu {

void unpatchify(const float* tokens, float* out, int B, int g, int p, int C) {
  const int S = g * p;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < g; ++h)
      for (int w = 0; w < g; ++w) {
        const float* vec = tokens + ((static_cast<int64_t>(b) * g + h) * g + w) * p * p * C;
        for (int r = 0; r < p; ++r)
          for (int q = 0; q < p; ++q)
            for (int c = 0; c < C; ++c)
              out[((static_cast<int64_t>(b) * C + c) * S + h * p + r) * S + w * p + q] = vec[(r * p + q) * C + c];
      }
}

}  // namespace dit::cpu
