// Row softmax for the VAE decoder's mid-block attention (single head over all pixels): the
// scores come from a GEMM already scaled by 1/sqrt(C); this normalises each row.
#pragma once

#include <cstdint>

namespace dit::cpu {

// in [R, L] -> out [R, L], out[r, j] = exp(in[r, j] - max_r) / sum_j exp(in[r, j] - max_r).
// float64 sums. In place allowed.
void vae_softmax(const float* in, float* out, int64_t R, int64_t L);

}  // namespace dit::cpu

#ifdef DIT_WITH_CUDA
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::vae_softmax on device memory in `dtype`, float32 max, sum and exponentials;
// one block per row, fixed reduction order (bit-reproducible). In place allowed.
void vae_softmax(const void* in, void* out, DeviceDtype dtype, int64_t R, int64_t L, cudaStream_t stream);

}  // namespace dit::cuda
#endif
