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
void group_norm(const float* x, const float* gamma, const float* beta, float* out, int N, int64_t P, int C, int groups,
                float eps, bool silu);

}  // namespace dit::cpu

#ifdef DIT_WITH_CUDA
#include "kernels/cuda_types.h"

namespace dit::cuda {

// Floats of device workspace group_norm needs for these sizes (partial sums and statistics).
size_t group_norm_workspace_floats(int N, int64_t P, int groups);

// As dit::cpu::group_norm on device memory: x and out [N, P, C] in `dtype`, gamma and beta [C]
// float32, `workspace` group_norm_workspace_floats(N, P, groups) floats. float32 statistics per
// chunk of pixels in two passes over it (sum, then squares about the chunk's mean), combined in
// float64 in a fixed order: bit-reproducible.
// C % groups == 0 and C <= 1536 required. In place allowed.
void group_norm(const void* x, const float* gamma, const float* beta, void* out, DeviceDtype dtype, int N, int64_t P,
                int C, int groups, float eps, bool silu, float* workspace, cudaStream_t stream);

}  // namespace dit::cuda
#endif
