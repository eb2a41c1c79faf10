// Elementwise activations: SiLU and GELU with the tanh approximation (timm's Mlp with
// approximate="tanh").
#pragma once

#include <cstdint>

namespace dit::cpu {

// out[i] = x[i] * sigmoid(x[i]); in place allowed.
void silu(const float* x, float* out, int64_t n);
// out[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); in place allowed.
void gelu_tanh(const float* x, float* out, int64_t n);

}  // namespace dit::cpu
