// CPU reference of the seeded normal deviates (kernels/random_normal.h). Compiled with
// -ffp-contract=off, as the noise source is, so that every operation rounds as the CUDA kernel's
// __f*_rn intrinsics do.
#include "kernels/random_normal.h"

#include "kernels/noise_math.h"

namespace dit::cpu {

void random_normal(uint64_t seed, uint32_t stream, uint32_t tag, float scale, float* out, int64_t n) {
  const uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
  const int64_t groups = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (groups > 16384)
  for (int64_t group = 0; group < groups; ++group) {
    const noise_math::Philox4 bits = noise_math::philox4x32_10(
        noise_math::noise_counter(static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32), stream, tag), key0,
        key1);
    float z[4];
    noise_math::box_muller4(bits, z);
    for (int lane = 0; lane < 4 && 4 * group + lane < n; ++lane) out[4 * group + lane] = scale * z[lane];
  }
}

}  // namespace dit::cpu
