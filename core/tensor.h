// Fixed ground (core/). dit::Tensor: a dense row-major float32 host tensor; the currency of the
// engine's public API and of the files the judge reads.
#pragma once

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace dit {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // row-major, size == numel()

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> s, float fill = 0.0f)
      : shape(std::move(s)), data(static_cast<size_t>(count(shape)), fill) {}

  static int64_t count(const std::vector<int64_t>& s) {
    return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
  }
  int64_t numel() const { return count(shape); }
  int64_t dim(size_t i) const { return shape.at(i); }
  float* ptr() { return data.data(); }
  const float* ptr() const { return data.data(); }
};

// "[2, 4, 32, 32]"
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace dit
