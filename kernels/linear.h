// Linear layer (the GEMM every projection of DiT is): out = in * W^T + bias.
#pragma once

namespace dit::cpu {

// in [M, K], weight [N, K] (PyTorch layout), bias [N] or nullptr -> out [M, N].
// float64 accumulation; parallel over M and N.
void linear(const float* in, const float* weight, const float* bias, float* out, int M, int N, int K);

}  // namespace dit::cpu
