// Fixed ground (core/). dit::Image, an 8-bit RGB image, and its PNG files (libpng).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/files.h"

namespace dit {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3], row-major
};

// PNG through libpng, with fixed settings: the same pixels always give the same bytes.
// write_png writes atomically (core/files.h; `durability` as there); every failure throws
// dit::Error naming the file.
std::string encode_png(const Image& image);
void write_png(const std::string& path, const Image& image, Durability durability = Durability::synced);
// Any PNG (palette, grey, alpha, 16 bits) as 8-bit RGB.
Image read_png(const std::string& path);

}  // namespace dit
