// Nearest-neighbour 2x upsampling of channels-last activations (the VAE decoder's Upsample2D).
#pragma once

#include <cstdint>

namespace dit::cpu {

// in [N, H, W, C] -> out [N, 2H, 2W, C], out[n, y, x, c] = in[n, y / 2, x / 2, c].
void upsample_nearest2x(const float* in, float* out, int N, int H, int W, int C);

}  // namespace dit::cpu

