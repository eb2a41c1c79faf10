// The VAE decoder's last step on the device: its channels-last output (channels padded for the
// tensor cores) to the planar float32 image the pipeline takes, so that only the image's own
// channels cross to the host, already in their final layout.
#pragma once

#include <cstdint>

namespace dit::cpu {

// in [N, P, C_stride] (P pixels, channels last; the first C of each pixel's C_stride values are
// the image's) -> out [N, C, P]: out[n, c, p] = in[n, p, c]. C <= C_stride.
void channels_last_to_planar(const float* in, float* out, int N, int64_t P, int C_stride, int C);

}  // namespace dit::cpu

#ifdef DIT_WITH_CUDA
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::channels_last_to_planar on device memory: in in `dtype`, out float32 (widening is
// exact, so the result equals the reference bit for bit). in and out must not overlap.
void channels_last_to_planar(const void* in, DeviceDtype dtype, float* out, int N, int64_t P, int C_stride, int C,
                             cudaStream_t stream);

}  // namespace dit::cuda
#endif
