// core/checked_math.h: the overflow-checked int64 products and sums that size tensors from
// untrusted numbers return the exact value when it fits and nothing when it does not.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>

#include "core/checked_math.h"

namespace dit {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(CheckedMath, ProductsAndSumsThatFitAreExact) {
  const struct {
    int64_t a, b;
  } cases[] = {{0, kMax},    {1, kMin}, {-1, kMax}, {3037000499, 3037000499}, {int64_t{1} << 31, int64_t{1} << 31},
               {1152, 1001}, {-7, 6}};
  for (const auto& c : cases) {
    EXPECT_EQ(checked_mul(c.a, c.b), c.a * c.b) << c.a << " * " << c.b;
    EXPECT_EQ(checked_mul(c.b, c.a), c.a * c.b) << c.b << " * " << c.a;
  }
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
  EXPECT_EQ(checked_add(kMin, kMax), -1);
  EXPECT_EQ(checked_product({}), 1);
  EXPECT_EQ(checked_product({1, 256, 1152}), 294912);  // DiT-XL/2's pos_embed at 256
  EXPECT_EQ(checked_product({0, kMax, kMax}), 0);
}

TEST(CheckedMath, OverflowIsNothing) {
  const struct {
    int64_t a, b;
  } cases[] = {{kMax, 2},
               {kMin, -1},
               {3037000500, 3037000500},
               {int64_t{1} << 32, int64_t{1} << 31},
               {-(int64_t{1} << 32), int64_t{1} << 32}};
  for (const auto& c : cases) {
    EXPECT_EQ(checked_mul(c.a, c.b), std::nullopt) << c.a << " * " << c.b;
    EXPECT_EQ(checked_mul(c.b, c.a), std::nullopt) << c.b << " * " << c.a;
  }
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
  EXPECT_EQ(checked_add(kMin, -1), std::nullopt);
  EXPECT_EQ(checked_product({int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31}), std::nullopt);
  // A running product that overflows is nothing, whatever the later factors (a zero included).
  EXPECT_EQ(checked_product({2, kMax, 0}), std::nullopt);
}

}  // namespace
}  // namespace dit
