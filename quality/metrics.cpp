// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace dit::quality {

namespace {

constexpr int kSsimWindow = 11;
constexpr double kSsimSigma = 1.5;
constexpr double kSsimK1 = 0.01, kSsimK2 = 0.03, kPixelPeak = 255.0;

void check_same_size(const RgbView& candidate, const RgbView& golden) {
  if (candidate.width != golden.width || candidate.height != golden.height)
    throw Error(ErrorKind::invalid_argument, "image sizes differ: candidate " + std::to_string(candidate.width) + "x" +
                                                 std::to_string(candidate.height) + ", golden " +
                                                 std::to_string(golden.width) + "x" + std::to_string(golden.height));
  const size_t expected = static_cast<size_t>(golden.width) * golden.height * 3;
  if (candidate.rgb.size() != expected || golden.rgb.size() != expected || expected == 0)
    throw Error(ErrorKind::invalid_argument, "image buffers do not hold width * height * 3 bytes");
}

std::vector<double> luma(const RgbView& image) {
  std::vector<double> y(static_cast<size_t>(image.width) * image.height);
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = 0.299 * image.rgb[3 * i] + 0.587 * image.rgb[3 * i + 1] + 0.114 * image.rgb[3 * i + 2];
  }
  return y;
}

std::vector<double> gaussian_window(int size, double sigma) {
  std::vector<double> w(static_cast<size_t>(size));
  double sum = 0;
  for (int i = 0; i < size; ++i) {
    const double x = i - (size - 1) / 2.0;
    w[i] = std::exp(-x * x / (2 * sigma * sigma));
    sum += w[i];
  }
  for (double& v : w) v /= sum;
  return w;
}

// Separable "valid" filtering: [h, w] -> [h - k + 1, w - k + 1].
std::vector<double> filter_valid(const std::vector<double>& image, int width, int height,
                                 const std::vector<double>& window) {
  const int k = static_cast<int>(window.size());
  const int out_w = width - k + 1, out_h = height - k + 1;
  std::vector<double> rows(static_cast<size_t>(height) * out_w);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < out_w; ++x) {
      double sum = 0;
      for (int i = 0; i < k; ++i) sum += window[i] * image[static_cast<size_t>(y) * width + x + i];
      rows[static_cast<size_t>(y) * out_w + x] = sum;
    }
  }
  std::vector<double> out(static_cast<size_t>(out_h) * out_w);
  for (int y = 0; y < out_h; ++y) {
    for (int x = 0; x < out_w; ++x) {
      double sum = 0;
      for (int i = 0; i < k; ++i) sum += window[i] * rows[static_cast<size_t>(y + i) * out_w + x];
      out[static_cast<size_t>(y) * out_w + x] = sum;
    }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& computed_metrics() {
  static const std::vector<std::string> names = {kLatentRelativeL2, kImagePsnr, kImageSsim,
                                                 kMaxAbsPixelError, kAllFinite, kDeterminism};
  return names;
}

double latent_relative_l2(std::span<const float> candidate, std::span<const float> golden) {
  if (candidate.size() != golden.size())
    throw Error(ErrorKind::invalid_argument, "latent sizes differ: candidate " + std::to_string(candidate.size()) +
                                                 ", golden " + std::to_string(golden.size()));
  double diff2 = 0, golden2 = 0;
  for (size_t i = 0; i < golden.size(); ++i) {
    const double c = candidate[i], g = golden[i];
    if (!std::isfinite(c)) return std::numeric_limits<double>::quiet_NaN();
    diff2 += (c - g) * (c - g);
    golden2 += g * g;
  }
  return golden2 > 0 ? std::sqrt(diff2 / golden2) : std::sqrt(diff2);
}

bool all_finite(std::span<const float> values) {
  return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

double image_psnr(const RgbView& candidate, const RgbView& golden) {
  check_same_size(candidate, golden);
  double squared = 0;
  for (size_t i = 0; i < golden.rgb.size(); ++i) {
    const double d = static_cast<double>(candidate.rgb[i]) - golden.rgb[i];
    squared += d * d;
  }
  if (squared == 0) return kPsnrOfIdenticalImages;
  const double mse = squared / static_cast<double>(golden.rgb.size());
  return 10.0 * std::log10(kPixelPeak * kPixelPeak / mse);
}

double max_abs_pixel_error(const RgbView& candidate, const RgbView& golden) {
  check_same_size(candidate, golden);
  int worst = 0;
  for (size_t i = 0; i < golden.rgb.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<int>(candidate.rgb[i]) - static_cast<int>(golden.rgb[i])));
  }
  return worst;
}

double image_ssim(const RgbView& candidate, const RgbView& golden) {
  check_same_size(candidate, golden);
  int window_size = std::min({kSsimWindow, golden.width, golden.height});
  if (window_size % 2 == 0) --window_size;
  const std::vector<double> window =
      gaussian_window(window_size, kSsimSigma * window_size / static_cast<double>(kSsimWindow));
  const std::vector<double> x = luma(candidate), y = luma(golden);
  std::vector<double> xx(x.size()), yy(x.size()), xy(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xx[i] = x[i] * x[i];
    yy[i] = y[i] * y[i];
    xy[i] = x[i] * y[i];
  }
  const int w = golden.width, h = golden.height;
  const std::vector<double> mu_x = filter_valid(x, w, h, window), mu_y = filter_valid(y, w, h, window);
  const std::vector<double> e_xx = filter_valid(xx, w, h, window), e_yy = filter_valid(yy, w, h, window);
  const std::vector<double> e_xy = filter_valid(xy, w, h, window);
  const double c1 = (kSsimK1 * kPixelPeak) * (kSsimK1 * kPixelPeak);
  const double c2 = (kSsimK2 * kPixelPeak) * (kSsimK2 * kPixelPeak);
  double sum = 0;
  for (size_t i = 0; i < mu_x.size(); ++i) {
    const double var_x = e_xx[i] - mu_x[i] * mu_x[i];
    const double var_y = e_yy[i] - mu_y[i] * mu_y[i];
    const double cov = e_xy[i] - mu_x[i] * mu_y[i];
    sum += ((2 * mu_x[i] * mu_y[i] + c1) * (2 * cov + c2)) /
           ((mu_x[i] * mu_x[i] + mu_y[i] * mu_y[i] + c1) * (var_x + var_y + c2));
  }
  return sum / static_cast<double>(mu_x.size());
}

}  // namespace dit::quality
