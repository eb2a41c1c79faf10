// Fixed ground (core/). Overflow-checked int64 arithmetic for sizes computed from numbers a
// file or a caller supplied (model configs, tensor shapes): each returns nothing instead of a
// wrapped or undefined result, so the caller can name the field that is too large.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace dit {

// a * b, or nothing when the product does not fit in int64.
constexpr std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// a + b, or nothing when the sum does not fit in int64.
constexpr std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

// The product of `factors` (1 for none), or nothing when a running product overflows.
constexpr std::optional<int64_t> checked_product(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t factor : factors) {
    if (__builtin_mul_overflow(product, factor, &product)) return std::nullopt;
  }
  return product;
}

}  // namespace dit
