// CPU reference of the VAE decoder's convolutions (kernels/vae_conv2d.h).
#include "kernels/vae_conv2d.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dit::cpu {

void vae_conv2d(const float* in, const float* weight, const float* bias, float* out, int N, int H, int W, int Cin,
                int Cout, int k) {
  // Repacked to [ky, kx, Cin, Cout] so the innermost loop runs over contiguous output channels.
  std::vector<float> packed(static_cast<size_t>(k) * k * Cin * Cout);
  for (int co = 0; co < Cout; ++co)
    for (int ci = 0; ci < Cin; ++ci)
      for (int t = 0; t < k * k; ++t)
        packed[(static_cast<size_t>(t) * Cin + ci) * Cout + co] =
            weight[(static_cast<size_t>(co) * Cin + ci) * k * k + t];
  const int pad = k / 2;
#pragma omp parallel
  {
    std::vector<double> acc(Cout);
#pragma omp for collapse(2) schedule(static)
    for (int n = 0; n < N; ++n) {
      for (int y = 0; y < H; ++y) {
        for (int x = 0; x < W; ++x) {
          for (int co = 0; co < Cout; ++co) acc[co] = bias ? bias[co] : 0.0;
          for (int ky = 0; ky < k; ++ky) {
            const int sy = y + ky - pad;
            if (sy < 0 || sy >= H) continue;
            for (int kx = 0; kx < k; ++kx) {
              const int sx = x + kx - pad;
              if (sx < 0 || sx >= W) continue;
              const float* pixel = in + ((static_cast<int64_t>(n) * H + sy) * W + sx) * Cin;
              const float* taps = packed.data() + static_cast<size_t>(ky * k + kx) * Cin * Cout;
              for (int ci = 0; ci < Cin; ++ci) {
                const double v = pixel[ci];
                const float* w = taps + static_cast<size_t>(ci) * Cout;
                for (int co = 0; co < Cout; ++co) acc[co] += v * w[co];
              }
            }
          }
          float* pixel_out = out + ((static_cast<int64_t>(n) * H + y) * W + x) * Cout;
          for (int co = 0; co < Cout; ++co) pixel_out[co] = static_cast<float>(acc[co]);
        }
      }
    }
  }
}

}  // namespace dit::cpu
