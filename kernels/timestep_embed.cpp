// CPU reference of the timestep sinusoid (kernels/timestep_embed.h). Each float32 step mirrors
// upstream's torch code: freqs = exp(-ln(P) * arange(half) / half), args = t.float() * freqs;
// cos and sin are then taken in float64 of the float32 argument and rounded once.
#include "kernels/timestep_embed.h"

#include <cmath>

namespace dit::cpu {

void timestep_embed(const int64_t* t, float* out, int B, int dim, float max_period) {
  const int half = dim / 2;
  const float minus_log_period = static_cast<float>(-std::log(static_cast<double>(max_period)));
  for (int b = 0; b < B; ++b) {
    float* o = out + static_cast<int64_t>(b) * dim;
    const float time = static_cast<float>(t[b]);
    for (int i = 0; i < half; ++i) {
      const float exponent = minus_log_period * static_cast<float>(i) / static_cast<float>(half);
      const float frequency = static_cast<float>(std::exp(static_cast<double>(exponent)));
      const double arg = static_cast<double>(time * frequency);  // rounded to float32 first
      o[i] = static_cast<float>(std::cos(arg));
      o[half + i] = static_cast<float>(std::sin(arg));
    }
    if (dim % 2) o[dim - 1] = 0.0f;  // upstream pads an odd dim with one zero column
  }
}

}  // namespace dit::cpu
