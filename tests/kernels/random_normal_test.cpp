// Seeded normal deviates (kernels/random_normal.h), the source of the engine's random weights.
// CPU cases: the statistics of a million deviates at a given scale, what the values depend on, and
// the weights the engine makes with it (DitWeights::random). CUDA cases: the device deviates equal
// the CPU ones bit for bit in float32, and rounded to fp16 and bf16 as core/half.h rounds, over
// lengths that are not multiples of 4, fresh seeds, streams and scales.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/random_normal.h"
#include "tests/kernels/harness.h"
#include "tests/support/test_support.h"

#if DIT_CPU_CASES
#include "model/weights.h"
#endif

namespace dit {
namespace {

using std::vector;

#if DIT_CPU_CASES

TEST(RandomNormal, AMillionDeviatesHaveTheScaleAsStandardDeviation) {
  constexpr int64_t n = 1 << 20;
  const float scale = 0.02f;
  vector<float> z(n);
  cpu::random_normal(test::fresh_seed(), 17, 0x57676874u, scale, z.data(), n);
  double sum = 0, sum_squares = 0;
  for (const float value : z) {
    ASSERT_TRUE(std::isfinite(value));
    sum += value;
    sum_squares += static_cast<double>(value) * value;
  }
  const double mean = sum / n, variance = sum_squares / n - mean * mean;
  // Six standard errors: a false alarm about once in 500 million runs of fresh seeds.
  EXPECT_LT(std::abs(mean), 6.0 * scale / std::sqrt(n));
  EXPECT_LT(std::abs(variance / (scale * scale) - 1.0), 6.0 * std::sqrt(2.0 / n));
  // Box-Muller with u in [2^-24, 1] bounds |z| by 5.77 standard deviations.
  EXPECT_LT(*std::max_element(z.begin(), z.end(), [](float a, float b) { return std::abs(a) < std::abs(b); }),
            5.78f * scale);
}

TEST(RandomNormal, DependsOnSeedStreamTagAndElementIndexOnly) {
  constexpr int64_t n = 1001;
  const uint64_t seed = test::fresh_seed();
  vector<float> a(n), b(n), prefix(37);
  cpu::random_normal(seed, 5, 9, 1.0f, a.data(), n);
  cpu::random_normal(seed, 5, 9, 1.0f, b.data(), n);
  EXPECT_EQ(a, b);
  cpu::random_normal(seed, 5, 9, 1.0f, prefix.data(), static_cast<int64_t>(prefix.size()));
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), a.begin())) << "a prefix is the same draw";
  cpu::random_normal(seed, 5, 9, 0.5f, b.data(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(b[i], 0.5f * a[i]) << "the scale is one multiply, element " << i;
  auto differs_everywhere = [&](uint64_t s, uint32_t stream, uint32_t tag) {
    cpu::random_normal(s, stream, tag, 1.0f, b.data(), n);
    int64_t equal = 0;
    for (int64_t i = 0; i < n; ++i) equal += a[i] == b[i];
    return equal == 0;
  };
  EXPECT_TRUE(differs_everywhere(seed + 1, 5, 9));
  EXPECT_TRUE(differs_everywhere(seed ^ (1ull << 40), 5, 9));  // the seed's high word is key too
  EXPECT_TRUE(differs_everywhere(seed, 6, 9));
  EXPECT_TRUE(differs_everywhere(seed, 5, 10));
}

// DitWeights::random draws every tensor but pos_embed with it: the stream of the tensor's name,
// the weights' tag, std as the scale. (The CUDA backend relies on this to draw the same weights
// on the device.)
TEST(RandomNormal, IsWhatDitWeightsRandomDraws) {
  const ModelConfig config = model_config("DiT-S/8", 256);
  const uint64_t seed = test::fresh_seed();
  const float std_dev = 0.03f;
  const DitWeights weights = DitWeights::random(config, seed, std_dev);
  int checked = 0;
  for (const auto& [name, tensor] : weights.tensors) {
    if (name == "pos_embed") continue;
    vector<float> drawn(tensor.data.size());
    cpu::random_normal(seed, random_weight_stream(name), kRandomWeightsTag, std_dev, drawn.data(),
                       static_cast<int64_t>(drawn.size()));
    ASSERT_EQ(std::memcmp(drawn.data(), tensor.data.data(), drawn.size() * sizeof(float)), 0) << name;
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

struct RandomNormalCase {
  int64_t n;
  DeviceDtype dtype;
  float scale;
  std::string name() const {
    return "n" + std::to_string(n) + "_" + test::dtype_suffix(dtype) + "_scale" +
           std::to_string(static_cast<int64_t>(scale * 1e6)) + "micro";
  }
};

class CudaRandomNormal : public testing::TestWithParam<RandomNormalCase> {};

TEST_P(CudaRandomNormal, equals_cpu_bit_for_bit) {
  const RandomNormalCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const uint32_t stream = static_cast<uint32_t>(test::fresh_seed());
  vector<float> cpu_values(static_cast<size_t>(k.n));
  cpu::random_normal(seed, stream, 0x57676874u, k.scale, cpu_values.data(), k.n);
  const vector<float> expected = test::round_to(cpu_values, k.dtype);
  DeviceTensor d(expected.size(), k.dtype);
  d.poison();
  cuda::random_normal(seed, stream, 0x57676874u, k.scale, d.data(), k.dtype, k.n, nullptr);
  size_t unwritten = 0;
  const vector<float> got = d.download(&unwritten);
  EXPECT_EQ(unwritten, 0u);
  size_t differing = 0, first = got.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &expected[i], sizeof(float)) != 0) {
      if (first == got.size()) first = i;
      ++differing;
    }
  std::printf("  %-36s seed %llu stream %u: %zu of %zu differ\n", k.name().c_str(),
              static_cast<unsigned long long>(seed), stream, differing, got.size());
  EXPECT_EQ(differing, 0u) << "first at " << first << ": gpu " << got[first] << " cpu " << expected[first];
}

// Lengths below, at and past a Philox block, past one block of threads, and past the grid-stride
// loop's 65536 blocks (2^26 + 3 elements: each thread draws more than one group).
INSTANTIATE_TEST_SUITE_P(
    draws, CudaRandomNormal,
    testing::Values(RandomNormalCase{1, DeviceDtype::f32, 1.0f}, RandomNormalCase{3, DeviceDtype::f16, 0.02f},
                    RandomNormalCase{4, DeviceDtype::bf16, 0.02f}, RandomNormalCase{5, DeviceDtype::f32, 0.02f},
                    RandomNormalCase{4099, DeviceDtype::f16, 1.0f}, RandomNormalCase{1048579, DeviceDtype::f32, 0.02f},
                    RandomNormalCase{1048579, DeviceDtype::f16, 0.02f},
                    RandomNormalCase{1048579, DeviceDtype::bf16, 0.02f},
                    // fp16 at a scale whose tails overflow to infinity and whose small values are subnormal
                    RandomNormalCase{262147, DeviceDtype::f16, 20000.0f},
                    RandomNormalCase{262147, DeviceDtype::f16, 1e-6f},
                    RandomNormalCase{(int64_t{1} << 26) + 3, DeviceDtype::f16, 0.02f}),
    [](const auto& info) { return info.param.name(); });

TEST(CudaRandomNormalChecks, refuses_empty_and_misaligned_outputs) {
  DeviceTensor d(8, DeviceDtype::f16);
  EXPECT_THROW(cuda::random_normal(1, 2, 3, 1.0f, d.data(), DeviceDtype::f16, 0, nullptr), Error);
  EXPECT_THROW(cuda::random_normal(1, 2, 3, 1.0f, static_cast<std::byte*>(d.data()) + 1, DeviceDtype::f16, 4, nullptr),
               Error);
}

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
