// The CUDA VAE decoder's host image of its weights (model/cuda/vae_weight_staging.h) against a
// plain restatement: each convolution packed [Cout, Cin, k, k] -> [Cout_pad, k, k, Cin_pad] in
// float32 with zero padding, then narrowed element by element with core's scalar conversions.
// Fresh random weights each run, with values that narrow to infinity, a subnormal and a NaN
// planted; shapes below and above the size at which the packing splits over the cores.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/half.h"
#include "model/cuda/vae_weight_staging.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

using cuda::DeviceDtype;

struct StagingCase {
  int out, in, k, in_pad, out_pad;
  DeviceDtype dtype;
  bool fused_bias, extra_bias;
  std::string name() const {
    std::string name = "o";
    for (const auto& [value, after] : {std::pair{out, "_i"}, {in, "_k"}, {k, "_pad"}, {in_pad, "x"}, {out_pad, "_"}})
      name += std::to_string(value) + after;
    name += dtype == DeviceDtype::f32 ? "f32" : dtype == DeviceDtype::f16 ? "f16" : "bf16";
    if (fused_bias) name += "_fused";
    if (extra_bias) name += "_extra";
    return name;
  }
};

// The element's bytes in `dtype`, by the scalar conversions.
std::vector<std::byte> narrowed(const std::vector<float>& values, DeviceDtype dtype) {
  std::vector<std::byte> bytes(values.size() * cuda::dtype_bytes(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DeviceDtype::f32) {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
      continue;
    }
    const uint16_t bits = dtype == DeviceDtype::f16 ? float_to_f16_bits(values[i]) : float_to_bf16_bits(values[i]);
    std::memcpy(bytes.data() + 2 * i, &bits, 2);
  }
  return bytes;
}

void expect_bytes_at(const std::vector<std::byte>& image, size_t offset, const std::vector<std::byte>& expected,
                     const std::string& what, uint64_t seed) {
  ASSERT_LE(offset + expected.size(), image.size()) << what;
  EXPECT_EQ(offset % 256, 0u) << what;
  size_t differ = 0, first = expected.size();
  for (size_t i = 0; i < expected.size(); ++i)
    if (image[offset + i] != expected[i]) {
      if (differ++ == 0) first = i;
    }
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " bytes differ, the first at byte " << first << " (seed " << seed
                        << ")";
}

class VaeWeightStaging : public testing::TestWithParam<StagingCase> {};

TEST_P(VaeWeightStaging, conv_equals_packing_then_narrowing) {
  const StagingCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  VaeWeights weights;
  Tensor w({c.out, c.in, c.k, c.k});
  w.data = test::random_normal(w.data.size(), seed);
  w.data[0] = 1e6f;                   // infinity in f16
  w.data[w.data.size() / 2] = 1e-7f;  // subnormal in f16
  w.data.back() = std::numeric_limits<float>::quiet_NaN();
  Tensor b({c.out}), extra({c.out});
  b.data = test::random_normal(b.data.size(), seed + 1);
  extra.data = test::random_normal(extra.data.size(), seed + 2);
  weights.tensors.emplace("conv.weight", w);
  weights.tensors.emplace("conv.bias", b);

  cuda::WeightStaging staging(c.dtype, c.fused_bias);
  staging.add(test::random_normal(7, seed + 3));  // something before: the offsets must align
  const cuda::ConvParams params = staging.conv(weights, "conv.", c.in_pad, c.out_pad, c.extra_bias ? &extra : nullptr);
  const std::vector<std::byte>& image = staging.bytes();

  std::vector<float> packed(static_cast<size_t>(c.out_pad) * c.k * c.k * c.in_pad, 0.0f);
  for (int o = 0; o < c.out; ++o)
    for (int i = 0; i < c.in; ++i)
      for (int t = 0; t < c.k * c.k; ++t)
        packed[(static_cast<size_t>(o) * c.k * c.k + t) * c.in_pad + i] =
            w.data[(static_cast<size_t>(o) * c.in + i) * c.k * c.k + t];
  std::vector<float> bias(c.out_pad, 0.0f);
  for (int o = 0; o < c.out; ++o) bias[o] = b.data[o] + (c.extra_bias ? extra.data[o] : 0.0f);

  EXPECT_EQ(params.in_channels, c.in_pad);
  EXPECT_EQ(params.out_channels, c.out_pad);
  EXPECT_EQ(params.kernel, c.k);
  expect_bytes_at(image, params.weight, narrowed(packed, c.dtype), "weight", seed);
  expect_bytes_at(image, params.bias, narrowed(bias, DeviceDtype::f32), "float32 bias", seed);
  ASSERT_EQ(params.fused_bias.has_value(), c.fused_bias);
  if (c.fused_bias) expect_bytes_at(image, *params.fused_bias, narrowed(bias, c.dtype), "fused bias", seed);
}

INSTANTIATE_TEST_SUITE_P(staging, VaeWeightStaging,
                         testing::Values(StagingCase{3, 4, 3, 8, 8, DeviceDtype::f32, false, false},
                                         StagingCase{3, 4, 3, 8, 8, DeviceDtype::f16, true, false},
                                         StagingCase{3, 4, 3, 8, 8, DeviceDtype::bf16, true, true},
                                         StagingCase{64, 130, 3, 136, 64, DeviceDtype::f32, false, true},
                                         StagingCase{64, 130, 3, 136, 64, DeviceDtype::f16, true, false},
                                         StagingCase{64, 130, 3, 136, 64, DeviceDtype::bf16, false, false},
                                         StagingCase{256, 512, 1, 512, 256, DeviceDtype::f16, true, true},
                                         StagingCase{5, 512, 3, 512, 8, DeviceDtype::bf16, true, false}),
                         [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace dit
