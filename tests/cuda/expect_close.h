// expect_close(): the check every CUDA kernel case ends with. Prints the case's normwise error,
// bound and seed, and fails when an output was never written, is not finite, or the error
// ||out - ref|| / ||ref|| exceeds the bound.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace dit::test {

inline void expect_close(const std::string& name, const std::vector<float>& out, size_t never_written,
                         const std::vector<double>& ref, double bound, uint64_t seed) {
  const Comparison c = compare(out, ref);
  std::printf("  %-48s relative error %.3e (bound %.1e), max abs %.3e, seed %llu\n", name.c_str(),
              c.relative_error, bound, c.max_abs_error, static_cast<unsigned long long>(seed));
  EXPECT_EQ(never_written, 0u) << name << ": " << never_written << " of " << out.size()
                               << " outputs never written (seed " << seed << ")";
  EXPECT_EQ(c.non_finite, 0u) << name << " (seed " << seed << ")";
  EXPECT_LE(c.relative_error, bound) << name << " (seed " << seed << "): " << c.describe(out, ref);
}

}  // namespace dit::test
