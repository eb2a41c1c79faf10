#include "tests/support/test_support.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

namespace dit::test {

std::string data_path(const std::string& name) { return std::string(DIT_TEST_DATA_DIR) + "/" + name; }

uint64_t fresh_seed() {
  if (const char* fixed = std::getenv("DIT_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  static std::mt19937_64 mixer(std::random_device{}() ^
                               static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  return mixer();
}

std::string random_sha256_hex(bool upper) {
  static std::mt19937_64 generator(fresh_seed());
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string hex;
  for (int i = 0; i < 64; ++i) hex += digits[generator() % 16];
  return hex;
}

std::vector<float> random_normal(size_t n, uint64_t seed, float std) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> dist(0.0f, std);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(generator);
  return v;
}

std::vector<float> random_uniform(size_t n, uint64_t seed, float bound) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(generator);
  return v;
}

float poison_value() {
  const uint32_t bits = 0x7fc0dead;  // a quiet NaN whose payload says "never written"
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void poison(std::span<float> values) {
  for (auto& v : values) v = poison_value();
}

size_t count_poisoned(std::span<const float> values) {
  size_t n = 0;
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    n += bits == 0x7fc0dead;
  }
  return n;
}

template <typename Ref>
static Comparison compare_impl(std::span<const float> out, std::span<const Ref> ref) {
  Comparison c;
  double diff2 = 0, ref2 = 0;
  const size_t n = std::min(out.size(), ref.size());
  for (size_t i = 0; i < n; ++i) {
    const double o = out[i], r = static_cast<double>(ref[i]);
    if (!std::isfinite(o)) {
      ++c.non_finite;
      c.worst_index = i;
      c.max_abs_error = INFINITY;
      continue;
    }
    const double d = std::abs(o - r);
    diff2 += d * d;
    ref2 += r * r;
    if (d > c.max_abs_error) {
      c.max_abs_error = d;
      c.worst_index = i;
    }
  }
  if (out.size() != ref.size()) c.non_finite += std::max(out.size(), ref.size()) - n;
  c.relative_error = c.non_finite ? INFINITY : (ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2));
  return c;
}

Comparison compare(std::span<const float> out, std::span<const double> ref) { return compare_impl(out, ref); }
Comparison compare(std::span<const float> out, std::span<const float> ref) { return compare_impl(out, ref); }

std::string Comparison::describe(std::span<const float> out, std::span<const double> ref, size_t first_mismatches,
                                 double abs_tolerance) const {
  std::ostringstream s;
  s << "relative error " << relative_error << ", max abs error " << max_abs_error << " at index " << worst_index
    << ", non-finite " << non_finite;
  size_t shown = 0;
  for (size_t i = 0; i < std::min(out.size(), ref.size()) && shown < first_mismatches; ++i) {
    const double d = std::abs(static_cast<double>(out[i]) - ref[i]);
    if (!(d <= abs_tolerance)) {
      s << "\n  [" << i << "] got " << out[i] << ", expected " << ref[i];
      ++shown;
    }
  }
  if (worst_index < std::min(out.size(), ref.size()))
    s << "\n  worst [" << worst_index << "] got " << out[worst_index] << ", expected " << ref[worst_index];
  return s.str();
}

}  // namespace dit::test
