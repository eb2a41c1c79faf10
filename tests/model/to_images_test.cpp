// The decoded image's conversion to 8-bit RGB (model/pipeline.h's to_images).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/pipeline.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

TEST(ToImages, ClampsRoundsAndInterleaves) {
  // [1, 3, 1, 6]: channel planes in, RGB triples out.
  Tensor decoded({1, 3, 1, 6});
  const float red[6] = {-1.0f, 1.0f, 0.0f, -3.0f, 7.0f, NAN};
  for (int x = 0; x < 6; ++x) {
    decoded.data[x] = red[x];
    decoded.data[6 + x] = 0.5f;    // 191.25 -> 191
    decoded.data[12 + x] = -0.5f;  // 63.75 -> 64
  }
  const std::vector<Image> images = to_images(decoded);
  ASSERT_EQ(images.size(), 1u);
  EXPECT_EQ(images[0].width, 6);
  EXPECT_EQ(images[0].height, 1);
  const uint8_t expected_red[6] = {0, 255, 128, 0, 255, 0};
  for (int x = 0; x < 6; ++x) {
    EXPECT_EQ(images[0].rgb[x * 3 + 0], expected_red[x]) << "x " << x;
    EXPECT_EQ(images[0].rgb[x * 3 + 1], 191) << "x " << x;
    EXPECT_EQ(images[0].rgb[x * 3 + 2], 64) << "x " << x;
  }
}

TEST(ToImages, MatchesTheFormulaOnRandomValues) {
  const uint64_t seed = test::fresh_seed();
  Tensor decoded({2, 3, 5, 4});
  decoded.data = test::random_uniform(decoded.data.size(), seed, 1.3f);
  const std::vector<Image> images = to_images(decoded);
  ASSERT_EQ(images.size(), 2u);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 20; ++p) {
        const double v = std::clamp((decoded.data[(n * 3 + c) * 20 + p] + 1.0) * 127.5, 0.0, 255.0);
        ASSERT_EQ(images[n].rgb[p * 3 + c], static_cast<int>(std::floor(v + 0.5))) << "seed " << seed;
      }
  EXPECT_THROW(to_images(Tensor({1, 4, 2, 2})), Error);
}

}  // namespace
}  // namespace dit
