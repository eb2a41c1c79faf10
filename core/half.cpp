// Fixed ground (core/). IEEE binary16 and bfloat16 conversions (core/half.h).
#include "core/half.h"

#include <algorithm>
#include <bit>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace dit {

float f16_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_f16_bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: quiet, keeping the top payload bits
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (magnitude >= 0x38800000u) {  // a normal half (>= 2^-14): rebias, round to nearest even
    const uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  const uint32_t exponent = magnitude >> 23;
  if (exponent < 102) return sign;  // below 2^-25: rounds to zero
  // A subnormal half counts units of 2^-24; a carry into 0x400 is the smallest normal.
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exponent;
  uint32_t units = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1);
  const uint32_t half_unit = 1u << (shift - 1);
  if (remainder > half_unit || (remainder == half_unit && (units & 1u))) ++units;
  return static_cast<uint16_t>(sign | units);
}

float bf16_bits_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bf16_bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

namespace {

#if defined(__x86_64__)
// x86's F16C narrowing (vcvtps2ph, eight values at a time) with the rounding given in the
// instruction, to nearest even: the same bits as float_to_f16_bits for every float32 pattern,
// NaNs included (quieted, the top ten payload bits kept), subnormals and overflow to infinity too
// (tests/core/safetensors_test.cpp compares the two over sampled patterns of every exponent).
__attribute__((target("avx,f16c"))) void narrow_f16c(const float* values, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 wide = _mm256_loadu_ps(values + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(wide, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = float_to_f16_bits(values[i]);
}

// CPUID leaf 1: AVX, F16C and OSXSAVE; XGETBV: the OS saves the YMM registers (what the
// instruction's 256-bit form needs). Asked directly: not every compiler's
// __builtin_cpu_supports knows "f16c".
bool has_f16c() {
  static const bool supported = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    constexpr unsigned kOsxsave = 1u << 27, kAvx = 1u << 28, kF16c = 1u << 29;
    if ((ecx & (kOsxsave | kAvx | kF16c)) != (kOsxsave | kAvx | kF16c)) return false;
    unsigned low = 0, high = 0;
    __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    return (low & 0x6u) == 0x6u;  // XMM and YMM state enabled
  }();
  return supported;
}
#endif

void narrow_f16(const float* values, uint16_t* out, size_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return narrow_f16c(values, out, n);
#endif
  for (size_t i = 0; i < n; ++i) out[i] = float_to_f16_bits(values[i]);
}

}  // namespace

void floats_to_f16_bits_serial(const float* values, uint16_t* out, size_t n) { narrow_f16(values, out, n); }

namespace {

// The bulk narrowings: blocks of a multiple of the vector width, one task each, on every core.
template <typename Narrow>
void narrow_in_blocks(const float* values, uint16_t* out, size_t n, Narrow narrow) {
  constexpr size_t kBlock = 16384;
  const auto blocks = static_cast<int64_t>((n + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static) if (blocks > 4)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t first = static_cast<size_t>(b) * kBlock;
    narrow(values + first, out + first, std::min(kBlock, n - first));
  }
}

}  // namespace

void floats_to_f16_bits(const float* values, uint16_t* out, size_t n) {
  narrow_in_blocks(values, out, n, floats_to_f16_bits_serial);
}

void floats_to_bf16_bits_serial(const float* values, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = float_to_bf16_bits(values[i]);
}

void floats_to_bf16_bits(const float* values, uint16_t* out, size_t n) {
  narrow_in_blocks(values, out, n, floats_to_bf16_bits_serial);
}

}  // namespace dit
