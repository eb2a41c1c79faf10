// CPU reference of nearest 2x upsampling (kernels/upsample.h).
#include "kernels/upsample.h"

#include <algorithm>

namespace dit::cpu {

void upsample_nearest2x(const float* in, float* out, int N, int H, int W, int C) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < N; ++n) {
    for (int y = 0; y < 2 * H; ++y) {
      const float* row = in + ((static_cast<int64_t>(n) * H + y / 2) * W) * C;
      float* row_out = out + ((static_cast<int64_t>(n) * 2 * H + y) * 2 * W) * C;
      for (int x = 0; x < 2 * W; ++x)
        std::copy_n(row + static_cast<int64_t>(x / 2) * C, C, row_out + static_cast<int64_t>(x) * C);
    }
  }
}

}  // namespace dit::cpu
