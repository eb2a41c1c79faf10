// GroupNorm (optionally fused with SiLU) over channels-last activations, as the VAE decoder
// uses it: statistics per (image, group) over all pixels and the group's channels.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dit::cpu {

// x [N, P, C] (P pixels, channels last) -> out [N, P, C]:
//   out = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c], then SiLU when `silu`;
// mean and (biased) variance over the P * C / groups values of each (image, group), channels
// grouped contiguously (group g holds channels [g C/G, (g+1) C/G)). float64 statistics, two
// passes. In place allowed.
void group_norm(const float* x, const float* gamma, const float* beta, float* out, int N,
                int64_t P, int C, int groups, float eps, bool silu);

}  // namespace dit::cpu

