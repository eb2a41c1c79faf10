// CPU reference of the channels-last to planar image conversion (kernels/vae_image.h).
#include "kernels/vae_image.h"

namespace dit::cpu {

void channels_last_to_planar(const float* in, float* out, int N, int64_t P, int C_stride, int C) {
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) out[(static_cast<int64_t>(n) * C + c) * P + p] = in[(n * P + p) * C_stride + c];
}

}  // namespace dit::cpu
