// The Gaussian noise source, identical bit for bit on every backend.
//
// Specification (what both backends compute, element by element):
//   key     k = (lo32(seed), hi32(seed))
//   counter c = (e / 4, slot, stream, 0x44695421)
//     e      the element index inside one image's latent [C, S, S] (row-major)
//     slot   0 for the initial latent x_T; 1 + i for the noise of sampler iteration i
//            (i = 0 is the first step, the highest t)
//     stream 0 for an image's conditional row, 1 for its unconditional row under guidance
//   (r0, r1, r2, r3) = Philox4x32-10(c, k)  (Salmon et al., SC'11; the Random123 constants
//                      0xD2511F53, 0xCD9E8D57, key bumps 0x9E3779B9, 0xBB67AE85)
//   u(r) = (float)((r >> 8) + 1) * 2^-24, in (0, 1], exact in float32
//   Box-Muller on (u(r0), u(r1)) gives (z0, z1) and on (u(r2), u(r3)) gives (z2, z3):
//     rad = sqrt(-2 ln u_a), theta = 2 pi u_b, z = (rad cos theta, rad sin theta)
//     (cos and sin are taken of u_b itself: quadrant round(4 u_b), remainder u_b - quadrant/4,
//     both exact, so theta is never rounded)
//   element e takes z[e % 4].
// ln, sin and cos are not the C library's (whose results differ by ulps between glibc and
// CUDA): noise_math.h defines them with float32 +, -, *, / and sqrt only, each correctly
// rounded by IEEE 754 on both sides, with no contraction into FMA (the host file is compiled
// with -ffp-contract=off; the device code uses the __f*_rn intrinsics). The noise of an image
// depends on its seed alone, never on the batch it is in.
#pragma once

#include <cstdint>

namespace dit {

constexpr uint32_t kNoiseDomainTag = 0x44695421u;  // "DiT!"
constexpr uint32_t kNoiseSlotInitial = 0;
inline uint32_t noise_slot_for_step(int iteration) { return 1u + static_cast<uint32_t>(iteration); }

}  // namespace dit

namespace dit::cpu {

// out[e] for e in [0, n): the noise of one image (seed), slot and stream.
void gaussian_noise(uint64_t seed, uint32_t slot, uint32_t stream, float* out, int64_t n);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::gaussian_noise, bit for bit: out [n] device float32.
void gaussian_noise(uint64_t seed, uint32_t slot, uint32_t stream, float* out, int64_t n, cudaStream_t cuda_stream);
// out [rows, n]: row r is the noise of (seeds[r], slot, streams[r]); seeds and streams are
// device arrays [rows].
void gaussian_noise_rows(const uint64_t* seeds, const uint32_t* streams, uint32_t slot, float* out, int rows, int64_t n,
                         cudaStream_t cuda_stream);

}  // namespace dit::cuda
#endif
