// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// The per-case fidelity metrics, computed in float64 against the golden rendering.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dit::quality {

// Metric names, as the contract and the gate reports spell them.
inline constexpr const char* kLatentRelativeL2 = "latent_relative_l2";
inline constexpr const char* kImagePsnr = "image_psnr";
inline constexpr const char* kImageSsim = "image_ssim";
inline constexpr const char* kMaxAbsPixelError = "max_abs_pixel_error";
inline constexpr const char* kAllFinite = "all_finite";
inline constexpr const char* kDeterminism = "determinism";
// Every metric the evaluator computes.
const std::vector<std::string>& computed_metrics();

// PSNR of two identical images: JSON has no infinity, and 150 dB is above the PSNR of any
// single one-level difference in an image of up to 4096 x 4096 (about 126 dB).
inline constexpr double kPsnrOfIdenticalImages = 150.0;

struct RgbView {
  int width = 0, height = 0;
  std::span<const uint8_t> rgb;  // [height, width, 3], row-major
};

// ||candidate - golden||_2 / ||golden||_2 (||candidate - golden||_2 when the golden is all
// zero); NaN when the candidate holds a NaN or an infinity. Throws dit::Error on a size mismatch.
double latent_relative_l2(std::span<const float> candidate, std::span<const float> golden);
bool all_finite(std::span<const float> values);

// Over all three channels, peak 255; kPsnrOfIdenticalImages when identical.
double image_psnr(const RgbView& candidate, const RgbView& golden);
// Largest |candidate - golden| over every channel of every pixel, in 8-bit levels.
double max_abs_pixel_error(const RgbView& candidate, const RgbView& golden);
// Mean SSIM (Wang, Bovik, Sheikh, Simoncelli 2004) on luma Y = 0.299 R + 0.587 G + 0.114 B,
// with their 11 x 11 Gaussian window (sigma 1.5), K1 = 0.01, K2 = 0.03, L = 255, over the
// positions where the window fits whole (no padding). An image smaller than 11 pixels uses
// the largest odd window that fits, with sigma scaled by window / 11.
double image_ssim(const RgbView& candidate, const RgbView& golden);

}  // namespace dit::quality
