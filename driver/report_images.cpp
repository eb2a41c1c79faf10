// Images for the report's gallery: the difference heatmap, and data: URIs so the page needs no
// files beside it (PNG in and out through core/image.h).
#include <algorithm>
#include <array>
#include <cstdlib>

#include "driver/report.h"
#include "core/error.h"

namespace dit::ar {

namespace {

// Colour stops of the heatmap, from no difference to the largest: black, dark red, red,
// orange, yellow, white. Perceptually ordered, so a reader sees where the error concentrates.
constexpr std::array<std::array<int, 3>, 6> kHeatStops{
    {{0, 0, 0}, {110, 0, 20}, {215, 30, 30}, {250, 140, 20}, {250, 230, 60}, {255, 255, 255}}};

std::array<unsigned char, 3> heat_colour(double fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0) * (kHeatStops.size() - 1);
  std::size_t low = std::min(static_cast<std::size_t>(fraction), kHeatStops.size() - 2);
  double weight = fraction - static_cast<double>(low);
  std::array<unsigned char, 3> colour{};
  for (int channel = 0; channel < 3; ++channel) {
    double value = kHeatStops[low][channel] * (1.0 - weight) + kHeatStops[low + 1][channel] * weight;
    colour[channel] = static_cast<unsigned char>(value + 0.5);
  }
  return colour;
}

}  // namespace

DifferenceMap difference_heatmap(const Image& baseline, const Image& best) {
  if (baseline.width != best.width || baseline.height != best.height) {
    throw Error(ErrorKind::invalid_argument, "images of different sizes (" + std::to_string(baseline.width) + "x" +
                                                 std::to_string(baseline.height) + " and " +
                                                 std::to_string(best.width) + "x" + std::to_string(best.height) + ")");
  }
  const std::size_t pixels = static_cast<std::size_t>(baseline.width) * baseline.height;
  std::vector<int> difference(pixels, 0);
  DifferenceMap map;
  double total = 0;
  for (std::size_t pixel = 0; pixel < pixels; ++pixel) {
    for (int channel = 0; channel < 3; ++channel) {
      int delta = std::abs(int{baseline.rgb[pixel * 3 + channel]} - int{best.rgb[pixel * 3 + channel]});
      difference[pixel] = std::max(difference[pixel], delta);
    }
    map.max_difference = std::max(map.max_difference, difference[pixel]);
    total += difference[pixel];
  }
  map.mean_difference = pixels ? total / static_cast<double>(pixels) : 0.0;
  map.heatmap.width = baseline.width;
  map.heatmap.height = baseline.height;
  map.heatmap.rgb.resize(pixels * 3);
  for (std::size_t pixel = 0; pixel < pixels; ++pixel) {
    // Scaled to this image's largest difference; identical images stay black.
    double fraction = map.max_difference ? static_cast<double>(difference[pixel]) / map.max_difference : 0.0;
    auto colour = heat_colour(fraction);
    std::copy(colour.begin(), colour.end(), map.heatmap.rgb.begin() + static_cast<std::ptrdiff_t>(pixel * 3));
  }
  return map;
}

std::string base64_encode(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string text;
  text.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    unsigned value = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) value |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) value |= static_cast<unsigned char>(bytes[i + 2]);
    text += kAlphabet[(value >> 18) & 63];
    text += kAlphabet[(value >> 12) & 63];
    text += i + 1 < bytes.size() ? kAlphabet[(value >> 6) & 63] : '=';
    text += i + 2 < bytes.size() ? kAlphabet[value & 63] : '=';
  }
  return text;
}

std::string png_data_uri(const std::string& png_bytes) { return "data:image/png;base64," + base64_encode(png_bytes); }

}  // namespace dit::ar
