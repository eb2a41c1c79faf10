// The arithmetic of the noise source (kernels/noise.h), written once for host and device so
// that both produce the same bits: Philox4x32-10, the uniform mapping, ln, sin/cos of 2*pi*u
// and Box-Muller. Floating-point work goes through the DIT_F* macros: plain IEEE operations on
// the host (the including file is compiled with -ffp-contract=off) and the round-to-nearest
// intrinsics on the device (which nvcc never contracts into FMA). +, *, / and sqrt are
// correctly rounded on both sides, so every intermediate value is identical.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define DIT_HOST_DEVICE __host__ __device__
#else
#define DIT_HOST_DEVICE
#endif

#if defined(__CUDA_ARCH__)
#define DIT_FADD(a, b) __fadd_rn((a), (b))
#define DIT_FSUB(a, b) __fsub_rn((a), (b))
#define DIT_FMUL(a, b) __fmul_rn((a), (b))
#define DIT_FDIV(a, b) __fdiv_rn((a), (b))
#define DIT_FSQRT(a) __fsqrt_rn(a)
#else
#include <cmath>
#define DIT_FADD(a, b) ((a) + (b))
#define DIT_FSUB(a, b) ((a) - (b))
#define DIT_FMUL(a, b) ((a) * (b))
#define DIT_FDIV(a, b) ((a) / (b))
#define DIT_FSQRT(a) std::sqrt(static_cast<float>(a))
#endif

namespace dit::noise_math {

struct Philox4 {
  uint32_t v[4];
};

constexpr uint32_t kPhiloxMultiplier0 = 0xD2511F53u;
constexpr uint32_t kPhiloxMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxKeyBump0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kPhiloxKeyBump1 = 0xBB67AE85u;  // sqrt(3) - 1

// Philox4x32 with 10 rounds (Salmon et al., SC'11), as Random123's philox4x32_R(10, ...).
DIT_HOST_DEVICE inline Philox4 philox4x32_10(Philox4 counter, uint32_t key0, uint32_t key1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kPhiloxKeyBump0;
      key1 += kPhiloxKeyBump1;
    }
    const uint64_t product0 = static_cast<uint64_t>(kPhiloxMultiplier0) * counter.v[0];
    const uint64_t product1 = static_cast<uint64_t>(kPhiloxMultiplier1) * counter.v[2];
    const uint32_t hi0 = static_cast<uint32_t>(product0 >> 32), lo0 = static_cast<uint32_t>(product0);
    const uint32_t hi1 = static_cast<uint32_t>(product1 >> 32), lo1 = static_cast<uint32_t>(product1);
    counter = Philox4{{hi1 ^ counter.v[1] ^ key0, lo1, hi0 ^ counter.v[3] ^ key1, lo0}};
  }
  return counter;
}

// The top 24 bits as k + 1 in [1, 2^24], scaled by 2^-24: u in (0, 1], exact in float32, never
// zero (so ln u is finite).
DIT_HOST_DEVICE inline float uniform_open_closed(uint32_t bits) {
  return DIT_FMUL(static_cast<float>((bits >> 8) + 1u), 5.9604644775390625e-8f);
}

DIT_HOST_DEVICE inline uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}
DIT_HOST_DEVICE inline float bits_float(uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
#endif
}

// Natural log of a positive normal float. x = 2^e * m with m in [sqrt(1/2), sqrt(2)) (exact bit
// manipulation); ln m = 2 atanh(s) = 2 (s + s^3/3 + ... + s^11/11), s = (m - 1) / (m + 1),
// |s| <= 0.1716, where the series' remainder is below 1e-10 relative; e ln 2 uses a two-part
// ln 2 whose high part has 16 significant bits, so e * high is exact for |e| < 2^8.
DIT_HOST_DEVICE inline float log_positive(float x) {
  const uint32_t bits = float_bits(x);
  int exponent = static_cast<int>((bits >> 23) & 0xffu) - 127;
  uint32_t mantissa_bits = (bits & 0x007fffffu) | 0x3f800000u;  // m in [1, 2)
  if (mantissa_bits > 0x3fb504f3u) {                            // m > sqrt(2): use m / 2
    mantissa_bits -= 0x00800000u;
    exponent += 1;
  }
  const float m = bits_float(mantissa_bits);
  const float s = DIT_FDIV(DIT_FSUB(m, 1.0f), DIT_FADD(m, 1.0f));  // m - 1 is exact (Sterbenz)
  const float s2 = DIT_FMUL(s, s);
  float series = 0.0909090936f;                           // 1/11
  series = DIT_FADD(DIT_FMUL(series, s2), 0.111111112f);  // 1/9
  series = DIT_FADD(DIT_FMUL(series, s2), 0.142857149f);  // 1/7
  series = DIT_FADD(DIT_FMUL(series, s2), 0.200000003f);  // 1/5
  series = DIT_FADD(DIT_FMUL(series, s2), 0.333333343f);  // 1/3
  const float two_s = DIT_FADD(s, s);
  const float log_m = DIT_FADD(two_s, DIT_FMUL(two_s, DIT_FMUL(series, s2)));
  const float e = static_cast<float>(exponent);
  const float ln2_high = 0.693145751953125f;  // 16 significant bits
  const float ln2_low = 1.42860677e-6f;       // ln 2 - ln2_high
  return DIT_FADD(DIT_FMUL(e, ln2_high), DIT_FADD(DIT_FMUL(e, ln2_low), log_m));
}

// sin(2 pi r) and cos(2 pi r) for |r| <= 1/8 (|angle| <= pi/4), Taylor polynomials in r with
// float32 coefficients (2 pi)^n / n!; truncation below 1e-10 relative.
DIT_HOST_DEVICE inline float sin_2pi_reduced(float r) {
  const float r2 = DIT_FMUL(r, r);
  float p = -15.0946426f;                       // -(2 pi)^11 / 11!
  p = DIT_FADD(DIT_FMUL(p, r2), 42.0586929f);   // (2 pi)^9 / 9!
  p = DIT_FADD(DIT_FMUL(p, r2), -76.7058563f);  // -(2 pi)^7 / 7!
  p = DIT_FADD(DIT_FMUL(p, r2), 81.6052475f);   // (2 pi)^5 / 5!
  p = DIT_FADD(DIT_FMUL(p, r2), -41.3417015f);  // -(2 pi)^3 / 3!
  // 2 pi = high + low with high exact in 12 bits, so r * high carries no coefficient error.
  const float two_pi_high = 6.28125f;
  const float two_pi_low = 1.93530717e-3f;
  return DIT_FADD(DIT_FMUL(r, two_pi_high), DIT_FMUL(r, DIT_FADD(two_pi_low, DIT_FMUL(p, r2))));
}

DIT_HOST_DEVICE inline float cos_2pi_reduced(float r) {
  const float r2 = DIT_FMUL(r, r);
  float p = 7.90353632f;                        // (2 pi)^12 / 12!
  p = DIT_FADD(DIT_FMUL(p, r2), -26.4262562f);  // -(2 pi)^10 / 10!
  p = DIT_FADD(DIT_FMUL(p, r2), 60.2446404f);   // (2 pi)^8 / 8!
  p = DIT_FADD(DIT_FMUL(p, r2), -85.4568176f);  // -(2 pi)^6 / 6!
  p = DIT_FADD(DIT_FMUL(p, r2), 64.9393921f);   // (2 pi)^4 / 4!
  p = DIT_FADD(DIT_FMUL(p, r2), -19.7392082f);  // -(2 pi)^2 / 2!
  return DIT_FADD(1.0f, DIT_FMUL(p, r2));
}

// sin(2 pi u) and cos(2 pi u) for u in [0, 1]. The quadrant q = round(4u) and the remainder
// r = u - q/4 in [-1/8, 1/8] are exact in float32 for every u of this range.
DIT_HOST_DEVICE inline void sincos_2pi(float u, float* sine, float* cosine) {
  const int quadrant = static_cast<int>(DIT_FADD(DIT_FMUL(u, 4.0f), 0.5f));
  const float r = DIT_FSUB(u, DIT_FMUL(static_cast<float>(quadrant), 0.25f));
  const float s = sin_2pi_reduced(r), c = cos_2pi_reduced(r);
  switch (quadrant & 3) {
    case 0:
      *sine = s;
      *cosine = c;
      break;
    case 1:
      *sine = c;
      *cosine = -s;
      break;
    case 2:
      *sine = -s;
      *cosine = -c;
      break;
    default:
      *sine = -c;
      *cosine = s;
      break;
  }
}

// The four normal deviates of one Philox block (kernels/noise.h): Box-Muller on (r0, r1) and on
// (r2, r3), z = (rad cos theta, rad sin theta), rad = sqrt(-2 ln u_a), theta = 2 pi u_b.
DIT_HOST_DEVICE inline void box_muller4(const Philox4& r, float z[4]) {
  for (int pair = 0; pair < 2; ++pair) {
    const float u_radius = uniform_open_closed(r.v[2 * pair]);
    const float u_angle = uniform_open_closed(r.v[2 * pair + 1]);
    const float radius = DIT_FSQRT(DIT_FMUL(-2.0f, log_positive(u_radius)));
    float sine, cosine;
    sincos_2pi(u_angle, &sine, &cosine);
    z[2 * pair] = DIT_FMUL(radius, cosine);
    z[2 * pair + 1] = DIT_FMUL(radius, sine);
  }
}

// The counter of element group `group` (= element index / 4) of kernels/noise.h's layout.
DIT_HOST_DEVICE inline Philox4 noise_counter(uint32_t group, uint32_t slot, uint32_t stream, uint32_t tag) {
  return Philox4{{group, slot, stream, tag}};
}

}  // namespace dit::noise_math
