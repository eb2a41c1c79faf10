// The fidelity metrics against values worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "quality/metrics.h"

namespace dit::quality {
namespace {

struct TestImage {
  int width, height;
  std::vector<uint8_t> rgb;
  RgbView view() const { return RgbView{width, height, rgb}; }
};

TestImage constant_image(int width, int height, uint8_t value) {
  return TestImage{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3, value)};
}

TestImage random_image(int width, int height, unsigned seed, int low = 0, int high = 255) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> level(low, high);
  TestImage image = constant_image(width, height, 0);
  for (uint8_t& v : image.rgb) v = static_cast<uint8_t>(level(generator));
  return image;
}

TEST(Metrics, LatentRelativeL2) {
  const std::vector<float> golden = {3, 4, 0}, candidate = {3, 4, 1};
  EXPECT_DOUBLE_EQ(latent_relative_l2(golden, golden), 0.0);
  EXPECT_DOUBLE_EQ(latent_relative_l2(candidate, golden), 1.0 / 5.0);
  const std::vector<float> zero = {0, 0, 0};
  EXPECT_DOUBLE_EQ(latent_relative_l2(candidate, zero), std::sqrt(26.0));  // absolute when golden is 0
  const std::vector<float> with_nan = {3, NAN, 0};
  EXPECT_TRUE(std::isnan(latent_relative_l2(with_nan, golden)));
  const std::vector<float> shorter = {3, 4};
  EXPECT_THROW(latent_relative_l2(shorter, golden), Error);
}

TEST(Metrics, AllFinite) {
  EXPECT_TRUE(all_finite(std::vector<float>{1, -2, 0}));
  EXPECT_FALSE(all_finite(std::vector<float>{1, INFINITY}));
  EXPECT_FALSE(all_finite(std::vector<float>{NAN}));
}

TEST(Metrics, PsnrAndMaxAbsPixelError) {
  const TestImage golden = random_image(16, 8, 1, 10, 240);
  EXPECT_DOUBLE_EQ(image_psnr(golden.view(), golden.view()), kPsnrOfIdenticalImages);
  EXPECT_DOUBLE_EQ(max_abs_pixel_error(golden.view(), golden.view()), 0.0);
  TestImage shifted = golden;
  for (uint8_t& v : shifted.rgb) v += 2;  // every channel off by 2: MSE 4
  EXPECT_NEAR(image_psnr(shifted.view(), golden.view()), 10 * std::log10(255.0 * 255.0 / 4.0), 1e-12);
  EXPECT_DOUBLE_EQ(max_abs_pixel_error(shifted.view(), golden.view()), 2.0);
  TestImage one_off = golden;
  one_off.rgb[17] -= 9;
  EXPECT_DOUBLE_EQ(max_abs_pixel_error(one_off.view(), golden.view()), 9.0);
  const TestImage other_size = random_image(8, 8, 1);
  EXPECT_THROW(image_psnr(other_size.view(), golden.view()), Error);
}

TEST(Metrics, SsimOfConstantImagesIsTheLuminanceTerm) {
  // Flat images have no variance, so SSIM = (2 a b + C1) / (a^2 + b^2 + C1) everywhere.
  const double a = 100, b = 130, c1 = (0.01 * 255) * (0.01 * 255);
  const TestImage x = constant_image(20, 20, 100), y = constant_image(20, 20, 130);
  EXPECT_NEAR(image_ssim(x.view(), y.view()), (2 * a * b + c1) / (a * a + b * b + c1), 1e-9);
}

TEST(Metrics, SsimIsOneForIdenticalImagesAndFallsWithNoise) {
  const TestImage golden = random_image(40, 32, 2);
  EXPECT_DOUBLE_EQ(image_ssim(golden.view(), golden.view()), 1.0);
  TestImage noisy = golden;
  std::mt19937 generator(3);
  std::uniform_int_distribution<int> noise(-20, 20);
  for (uint8_t& v : noisy.rgb) v = static_cast<uint8_t>(std::clamp(v + noise(generator), 0, 255));
  const double ssim = image_ssim(noisy.view(), golden.view());
  EXPECT_LT(ssim, 0.99);
  EXPECT_GT(ssim, 0.0);
  EXPECT_NEAR(ssim, image_ssim(golden.view(), noisy.view()), 1e-12);  // symmetric
}

TEST(Metrics, SsimHandlesImagesSmallerThanTheWindow) {
  const TestImage golden = random_image(8, 6, 4);
  EXPECT_DOUBLE_EQ(image_ssim(golden.view(), golden.view()), 1.0);
  TestImage changed = golden;
  changed.rgb[40] ^= 0x40;
  EXPECT_LT(image_ssim(changed.view(), golden.view()), 1.0);
}

}  // namespace
}  // namespace dit::quality
