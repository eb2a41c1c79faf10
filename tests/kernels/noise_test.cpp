// The Gaussian noise source (kernels/noise.h, kernels/noise_math.h). CPU cases: Philox4x32-10
// against Random123's known answers, the float32 ln / sin / cos against the C library, the
// statistics of a million deviates, what the noise depends on. CUDA cases: the device noise equals
// the CPU noise bit for bit, over a million samples and per row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/noise.h"
#include "tests/kernels/harness.h"

#if DIT_CPU_CASES
#include "kernels/noise_math.h"
#endif

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

using noise_math::Philox4;

void expect_philox(Philox4 counter, uint32_t key0, uint32_t key1, Philox4 expected) {
  const Philox4 got = noise_math::philox4x32_10(counter, key0, key1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], expected.v[i]) << "word " << i;
}

TEST(Philox, MatchesRandom123KnownAnswers) {
  expect_philox({{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}});
  expect_philox({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff, 0xffffffff,
                {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}});
  expect_philox({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822, 0x299f31d0,
                {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}});
}

// Distance in units in the last place of the float32 nearest to `exact`. The ulp is floored at
// 2^-60: where the true value is 0 (sin 2 pi u at u = 1/2, 1), the long double reference itself
// is off by about |angle| * 2^-64 while the float32 result is exactly 0.
double ulps(float got, long double exact) {
  const float magnitude = std::abs(static_cast<float>(exact));
  const double ulp =
      std::max(static_cast<double>(std::nextafter(magnitude, INFINITY) - magnitude), std::ldexp(1.0, -60));
  return static_cast<double>(std::abs(static_cast<long double>(got) - exact) / ulp);
}

constexpr double kUlpBound = 3.0;  // a few ulps: polynomial evaluation in float32

// Every u the noise can produce: k * 2^-24 for k in [1, 2^24].
float u_of(uint32_t k) { return static_cast<float>(k) * 5.9604644775390625e-8f; }

TEST(NoiseMath, LogIsWithinAFewUlpsOnTheUnitInterval) {
  double worst = 0;
  float worst_u = 0;
  for (uint32_t k = 1; k <= (1u << 24); ++k) {
    const float u = u_of(k);
    if (k == (1u << 24)) {
      EXPECT_EQ(noise_math::log_positive(u), 0.0f);
      continue;
    }
    const double e = ulps(noise_math::log_positive(u), std::log(static_cast<long double>(u)));
    if (e > worst) worst = e, worst_u = u;
  }
  EXPECT_LE(worst, kUlpBound) << "worst at u = " << worst_u;
  // Also beyond the unit interval (positive normal floats).
  for (float x : {1.5f, 2.0f, 10.0f, 1e10f, 3.4e38f, 1.2e-38f})
    EXPECT_LE(ulps(noise_math::log_positive(x), std::log(static_cast<long double>(x))), kUlpBound) << x;
}

TEST(NoiseMath, SinCosAreWithinAFewUlpsOverTheCircle) {
  const long double two_pi = 6.283185307179586476925286766559L;
  double worst_sin = 0, worst_cos = 0;
  float worst_sin_u = 0, worst_cos_u = 0;
  for (uint32_t k = 0; k <= (1u << 24); k += 3) {  // odd stride: every quadrant and octant edge class
    const float u = u_of(k);
    float s, c;
    noise_math::sincos_2pi(u, &s, &c);
    const long double angle = two_pi * u;
    const double es = ulps(s, std::sin(angle)), ec = ulps(c, std::cos(angle));
    if (es > worst_sin) worst_sin = es, worst_sin_u = u;
    if (ec > worst_cos) worst_cos = ec, worst_cos_u = u;
  }
  EXPECT_LE(worst_sin, kUlpBound) << "worst sin at u = " << worst_sin_u;
  EXPECT_LE(worst_cos, kUlpBound) << "worst cos at u = " << worst_cos_u;
  float s, c;
  noise_math::sincos_2pi(1.0f, &s, &c);
  EXPECT_EQ(s, 0.0f);
  EXPECT_EQ(c, 1.0f);
  noise_math::sincos_2pi(0.25f, &s, &c);
  EXPECT_EQ(s, 1.0f);
  EXPECT_EQ(c, 0.0f);
}

TEST(NoiseMath, UniformIsInTheOpenClosedUnitInterval) {
  EXPECT_EQ(noise_math::uniform_open_closed(0), 5.9604644775390625e-8f);
  EXPECT_EQ(noise_math::uniform_open_closed(0xffffffffu), 1.0f);
  EXPECT_EQ(noise_math::uniform_open_closed(0x000000ffu), 5.9604644775390625e-8f);  // low bits unused
}

double standard_normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

TEST(GaussianNoise, AMillionSamplesLookStandardNormal) {
  constexpr int64_t n = 1 << 20;
  std::vector<float> z(n);
  cpu::gaussian_noise(20261129, 3, 0, z.data(), n);
  double sum = 0, sum_squares = 0, lag_product = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(z[i])) << i;
    sum += z[i];
    sum_squares += static_cast<double>(z[i]) * z[i];
    if (i + 1 < n) lag_product += static_cast<double>(z[i]) * z[i + 1];
  }
  const double mean = sum / n, variance = sum_squares / n - mean * mean;
  // Five standard errors: a false alarm about once in 3.5 million runs (the seed is fixed).
  EXPECT_LT(std::abs(mean), 5.0 / std::sqrt(n));
  EXPECT_LT(std::abs(variance - 1.0), 5.0 * std::sqrt(2.0 / n));
  EXPECT_LT(std::abs(lag_product / n), 5.0 / std::sqrt(n));  // neighbours (pair partners too) uncorrelated

  // Kolmogorov-Smirnov: sup |F_n - Phi| below the 0.1% critical value 1.95 / sqrt(n).
  std::sort(z.begin(), z.end());
  double ks = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double phi = standard_normal_cdf(z[i]);
    ks = std::max({ks, std::abs(static_cast<double>(i + 1) / n - phi), std::abs(static_cast<double>(i) / n - phi)});
  }
  EXPECT_LT(ks, 1.95 / std::sqrt(static_cast<double>(n)));
  // Box-Muller with u in [2^-24, 1] reaches |z| <= sqrt(-2 ln 2^-24) = 5.77.
  EXPECT_LT(std::max(-z.front(), z.back()), 5.78f);
}

TEST(GaussianNoise, DependsOnSeedSlotAndStreamOnly) {
  constexpr int64_t n = 1000;
  std::vector<float> a(n), b(n), prefix(37);
  cpu::gaussian_noise(42, 1, 0, a.data(), n);
  cpu::gaussian_noise(42, 1, 0, b.data(), n);
  EXPECT_EQ(a, b);
  cpu::gaussian_noise(42, 1, 0, prefix.data(), static_cast<int64_t>(prefix.size()));
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), a.begin())) << "a prefix is the same noise";
  auto differs_everywhere = [&](uint64_t seed, uint32_t slot, uint32_t stream) {
    cpu::gaussian_noise(seed, slot, stream, b.data(), n);
    int64_t equal = 0;
    for (int64_t i = 0; i < n; ++i) equal += a[i] == b[i];
    return equal == 0;
  };
  EXPECT_TRUE(differs_everywhere(43, 1, 0));
  EXPECT_TRUE(differs_everywhere(42ull | (1ull << 32), 1, 0));  // the seed's high word is key too
  EXPECT_TRUE(differs_everywhere(42, 2, 0));
  EXPECT_TRUE(differs_everywhere(42, 1, 1));
}

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// --- noise: bit for bit -------------------------------------------------------------------------

struct NoiseCase {
  uint64_t seed;
  uint32_t slot, stream;
  int64_t n;
  std::string name() const {
    return "seed" + std::to_string(seed) + "_slot" + std::to_string(slot) + "_stream" + std::to_string(stream) + "_n" +
           std::to_string(n);
  }
};

class CudaNoise : public testing::TestWithParam<NoiseCase> {};

void expect_same_bits(const std::string& name, const vector<float>& gpu, const vector<float>& cpu) {
  ASSERT_EQ(gpu.size(), cpu.size());
  const bool same = std::memcmp(gpu.data(), cpu.data(), gpu.size() * sizeof(float)) == 0;
  size_t differing = 0, first = gpu.size();
  for (size_t i = 0; i < gpu.size(); ++i)
    if (std::memcmp(&gpu[i], &cpu[i], sizeof(float)) != 0) {
      if (first == gpu.size()) first = i;
      ++differing;
    }
  std::printf("  %-44s %zu samples, %zu differ\n", name.c_str(), gpu.size(), differing);
  EXPECT_TRUE(same) << name << ": " << differing << " of " << gpu.size() << " samples differ; first at " << first
                    << ": gpu " << gpu[first] << " cpu " << cpu[first];
}

TEST_P(CudaNoise, equals_cpu_bit_for_bit) {
  const NoiseCase k = GetParam();
  vector<float> cpu_noise(static_cast<size_t>(k.n));
  cpu::gaussian_noise(k.seed, k.slot, k.stream, cpu_noise.data(), k.n);
  DeviceTensor d(cpu_noise.size());
  d.poison();
  cuda::gaussian_noise(k.seed, k.slot, k.stream, d.f32(), k.n, nullptr);
  size_t unwritten = 0;
  const vector<float> gpu_noise = d.download(&unwritten);
  EXPECT_EQ(unwritten, 0u);
  expect_same_bits("noise/" + k.name(), gpu_noise, cpu_noise);
}

// 1,048,579 + 4 * 4096 + 3 * 16387 + ... samples in all: over a million, several seeds, slots
// and streams, and lengths that are not multiples of 4.
INSTANTIATE_TEST_SUITE_P(noise, CudaNoise,
                         testing::Values(NoiseCase{0, 0, 0, 1048579}, NoiseCase{1, 1, 0, 4096},
                                         NoiseCase{1, 1, 1, 4096}, NoiseCase{0xDEADBEEFCAFEBABEull, 250, 0, 16387},
                                         NoiseCase{0xDEADBEEFCAFEBABEull, 250, 1, 16387}, NoiseCase{42, 0, 0, 4096},
                                         NoiseCase{42, 1000, 1, 16387}, NoiseCase{0xFFFFFFFFFFFFFFFFull, 7, 0, 5}),
                         [](const auto& info) { return info.param.name(); });

TEST(noise_rows, each_row_equals_its_own_image_noise) {
  const uint64_t base = test::fresh_seed();
  const int rows = 6;
  const int64_t n = 4 * 32 * 32;
  const vector<uint64_t> seeds = {base, base + 1, base + 2, base, base + 1, base + 2};
  const vector<uint32_t> streams = {0, 0, 0, 1, 1, 1};
  const uint32_t slot = noise_slot_for_step(17);
  test::DeviceArray<uint64_t> dseeds(seeds);
  test::DeviceArray<uint32_t> dstreams(streams);
  DeviceTensor d(static_cast<size_t>(rows) * n);
  d.poison();
  cuda::gaussian_noise_rows(dseeds.data(), dstreams.data(), slot, d.f32(), rows, n, nullptr);
  size_t unwritten = 0;
  const vector<float> all = d.download(&unwritten);
  EXPECT_EQ(unwritten, 0u);
  for (int r = 0; r < rows; ++r) {
    vector<float> cpu_noise(static_cast<size_t>(n));
    cpu::gaussian_noise(seeds[r], slot, streams[r], cpu_noise.data(), n);
    const vector<float> row(all.begin() + static_cast<size_t>(r) * n, all.begin() + static_cast<size_t>(r + 1) * n);
    expect_same_bits("noise_rows/row" + std::to_string(r), row, cpu_noise);
  }
}

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
