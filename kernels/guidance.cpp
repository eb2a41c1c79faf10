// CPU reference of the guidance combine (kernels/guidance.h), as upstream forward_with_cfg:
// only the first `guided_channels` channels are guided; both halves receive the guided value.
#include "kernels/guidance.h"

#include <cstdint>

namespace dit::cpu {

void guidance_combine(float* out, int B, int C, int HW, float scale, int guided_channels) {
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < guided_channels; ++c) {
      float* cond = out + (static_cast<int64_t>(b) * C + c) * HW;
      float* uncond = out + (static_cast<int64_t>(B + b) * C + c) * HW;
      for (int i = 0; i < HW; ++i) {
        const double u = uncond[i];
        const float guided = static_cast<float>(u + static_cast<double>(scale) * (cond[i] - u));
        cond[i] = guided;
        uncond[i] = guided;
      }
    }
}

}  // namespace dit::cpu
