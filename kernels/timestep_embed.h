// The timestep sinusoid of DiT's TimestepEmbedder (the MLP after it is two linear layers).
#pragma once

#include <cstdint>

namespace dit::cpu {

// t [B] -> out [B, dim]: [cos(t f_i), sin(t f_i)] (cosine first), f_i = exp(-ln(max_period) * i
// / half), half = dim / 2, computed in float32 as upstream (so that t * f_i rounds the same).
void timestep_embed(const int64_t* t, float* out, int B, int dim = 256, float max_period = 10000.0f);

}  // namespace dit::cpu
