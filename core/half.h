// Fixed ground (core/). Half-precision conversions: IEEE binary16 (fp16) and bfloat16 (bf16), as float32 bit patterns.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dit {

// IEEE binary16 and bfloat16 from and to float32 bit patterns. Widening is exact (subnormals,
// infinities and NaN payloads kept); narrowing rounds to nearest even, overflows to infinity
// and keeps NaN a NaN.
float f16_bits_to_float(uint16_t bits);
uint16_t float_to_f16_bits(float value);
float bf16_bits_to_float(uint16_t bits);
uint16_t float_to_bf16_bits(float value);
// The same narrowing over n values, on every core (bulk weight conversion at load).
void floats_to_f16_bits(const float* values, uint16_t* out, size_t n);
void floats_to_bf16_bits(const float* values, uint16_t* out, size_t n);
// The same on the calling thread only (for callers that split the work across threads
// themselves); fp16 takes x86's F16C instructions where the processor has them.
void floats_to_f16_bits_serial(const float* values, uint16_t* out, size_t n);
void floats_to_bf16_bits_serial(const float* values, uint16_t* out, size_t n);

}  // namespace dit
