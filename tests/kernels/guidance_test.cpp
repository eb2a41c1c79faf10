// The classifier-free guidance combine (kernels/guidance.h). CPU cases: the reference
// (kernels/guidance.cpp) against a float64 re-derivation on fresh random inputs. CUDA cases: the
// kernel against the reference, bit for bit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/guidance.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuGuidanceCase {
  int B, C, HW;
  float scale;
  std::string name() const {
    return test::dims_name({{"b", B}, {"c", C}, {"hw", HW}}) + "_s" + std::to_string(static_cast<int>(scale * 10));
  }
};

class CpuGuidance : public testing::TestWithParam<CpuGuidanceCase> {};

TEST_P(CpuGuidance, matches_float64_rederivation) {
  const auto [B, C, HW, scale] = GetParam();
  const uint64_t seed = test::fresh_seed();
  vector<float> out = test::random_normal(size_t(2) * B * C * HW, seed);
  vector<double> ref(out.begin(), out.end());
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < HW; ++i) {
        const size_t cond = (size_t(b) * C + c) * HW + i, uncond = (size_t(B + b) * C + c) * HW + i;
        const double guided = double(out[uncond]) + scale * (double(out[cond]) - out[uncond]);
        ref[cond] = ref[uncond] = guided;
      }
  cpu::guidance_combine(out.data(), B, C, HW, scale, 3);
  expect_close("guidance/" + GetParam().name(), out, test::count_poisoned(out), ref, test::kElementwiseF32Bound, seed);
  for (int row = 0; row < 2 * B; ++row)  // channels 3.. untouched, bit for bit
    for (size_t i = (size_t(row) * C + 3) * HW; i < size_t(row + 1) * C * HW; ++i)
      ASSERT_EQ(out[i], float(ref[i])) << "channel >= 3 modified at " << i;
}

INSTANTIATE_TEST_SUITE_P(guidance, CpuGuidance,
                         testing::Values(CpuGuidanceCase{2, 8, 64, 4.0f}, CpuGuidanceCase{1, 8, 16, 1.5f}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// --- guidance -----------------------------------------------------------------------------------

struct GuidanceCase {
  int B, C, HW;
  float scale;
  std::string name() const {
    return test::dims_name({{"b", B}, {"c", C}, {"hw", HW}, {"s", static_cast<int>(scale * 10)}});
  }
};

class CudaGuidance : public testing::TestWithParam<GuidanceCase> {};

TEST_P(CudaGuidance, equals_reference) {
  const GuidanceCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> out0 = test::random_normal(static_cast<size_t>(2) * k.B * k.C * k.HW, seed);
  vector<float> ref = out0;
  cpu::guidance_combine(ref.data(), k.B, k.C, k.HW, k.scale, 3);
  DeviceTensor d(out0);
  cuda::guidance_combine(d.f32(), k.B, k.C, k.HW, k.scale, 3, nullptr);
  // float64 arithmetic rounded once on both sides: equal bits expected
  expect_close("guidance/" + k.name(), d.download(), 0, test::to_double(ref), 0.0, seed);
}

INSTANTIATE_TEST_SUITE_P(guidance, CudaGuidance,
                         testing::Values(GuidanceCase{2, 8, 1024, 4.0f}, GuidanceCase{1, 8, 64, 1.5f},
                                         GuidanceCase{3, 4, 4096, 7.5f}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
