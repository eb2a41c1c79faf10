// Helpers shared by the test suites: data paths, fresh random inputs, poisoning, and the
// normwise comparison every kernel test uses (||out - ref|| / ||ref||).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace dit::test {

// Absolute path of a file under tests/data (the reference vectors live there).
std::string data_path(const std::string& name);

// A seed that differs on every run unless DIT_TEST_SEED is set (printed on failure by callers).
uint64_t fresh_seed();

// n values from N(0, std) (or U(-bound, bound) with uniform()) from a seeded generator.
std::vector<float> random_normal(size_t n, uint64_t seed, float std = 1.0f);
std::vector<float> random_uniform(size_t n, uint64_t seed, float bound = 1.0f);

// A fresh SHA-256-shaped string: 64 hexadecimal digits, lowercase unless `upper` (one generator
// per process, seeded from fresh_seed()).
std::string random_sha256_hex(bool upper = false);

// A NaN with a recognisable payload; poison() fills with it, count_poisoned() finds it.
float poison_value();
void poison(std::span<float> values);
size_t count_poisoned(std::span<const float> values);

struct Comparison {
  double relative_error = 0;  // ||out - ref||_2 / ||ref||_2 (computed in float64)
  double max_abs_error = 0;
  size_t worst_index = 0;
  size_t non_finite = 0;  // NaN or Inf in out
  std::string describe(std::span<const float> out, std::span<const double> ref, size_t first_mismatches = 5,
                       double abs_tolerance = 0) const;
};
Comparison compare(std::span<const float> out, std::span<const double> ref);
Comparison compare(std::span<const float> out, std::span<const float> ref);

}  // namespace dit::test
