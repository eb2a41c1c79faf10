// Row softmax for the VAE decoder's mid-block attention (single head over all pixels): the
// scores come from a GEMM already scaled by 1/sqrt(C); this normalises each row.
#pragma once

#include <cstdint>

namespace dit::cpu {

// in [R, L] -> out [R, L], out[r, j] = exp(in[r, j] - max_r) / sum_j exp(in[r, j] - max_r).
// float64 sums. In place allowed.
void vae_softmax(const float* in, float* out, int64_t R, int64_t L);

}  // namespace dit::cpu

