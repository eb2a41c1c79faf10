// Seeded normal deviates addressed by element index, identical bit for bit on every backend: the
// engine's seeded random weights (model/weights.h) are made with it, on the host for the CPU
// backend and on the device for the CUDA one, so a model built either way holds the same bits.
//
// Specification (element e of a tensor of n elements):
//   key     k = (lo32(seed), hi32(seed))
//   counter c = (lo32(e / 4), hi32(e / 4), stream, tag)
//   (r0, r1, r2, r3) = Philox4x32-10(c, k), Box-Muller into (z0, z1, z2, z3) exactly as the noise
//   source (kernels/noise.h, noise_math.h); out[e] = scale * z[e % 4], one float32 multiply, then
//   rounded to nearest even into the output type (fp16 overflowing to infinity; bf16).
#pragma once

#include <cstdint>

namespace dit::cpu {

// out[e] for e in [0, n), float32.
void random_normal(uint64_t seed, uint32_t stream, uint32_t tag, float scale, float* out, int64_t n);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::random_normal into a device buffer of `dtype` (float32, or the float32 value
// rounded to nearest even into fp16 or bf16, as core/half.h's narrowing does).
void random_normal(uint64_t seed, uint32_t stream, uint32_t tag, float scale, void* out, DeviceDtype dtype, int64_t n,
                   cudaStream_t cuda_stream);

}  // namespace dit::cuda
#endif
