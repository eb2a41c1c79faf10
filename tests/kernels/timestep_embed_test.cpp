// The timestep sinusoid (kernels/timestep_embed.h). CPU cases: the reference
// (kernels/timestep_embed.cpp) against a float64 re-derivation on fresh random inputs. CUDA cases:
// the kernel against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/timestep_embed.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuTimestepCase {
  int B, dim;
  std::string name() const { return test::dims_name({{"b", B}, {"dim", dim}}); }
};

class CpuTimestepEmbed : public testing::TestWithParam<CpuTimestepCase> {};

TEST_P(CpuTimestepEmbed, matches_float64_rederivation) {
  const auto [B, dim] = GetParam();
  const uint64_t seed = test::fresh_seed();
  vector<int64_t> t(B);
  const vector<float> u = test::random_uniform(B, seed);
  for (int b = 0; b < B; ++b) t[b] = std::lround((u[b] + 1.0f) * 499.5f);
  vector<float> out = test::poisoned(size_t(B) * dim);
  cpu::timestep_embed(t.data(), out.data(), B, dim, 10000.0f);
  // The spec (upstream's torch code) forms the frequency exponent and the argument t * f in
  // float32; those roundings move the argument by up to ~5e-5 at t ~ 1000, so the reference
  // follows them, then takes cos and sin in float64.
  const int half = dim / 2;
  vector<double> ref(out.size(), 0.0);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < half; ++i) {
      const float exponent = float(-std::log(10000.0)) * float(i) / float(half);
      const float frequency = float(std::exp(double(exponent)));
      const double arg = float(t[b]) * frequency;
      ref[size_t(b) * dim + i] = std::cos(arg);
      ref[size_t(b) * dim + half + i] = std::sin(arg);
    }
  expect_close("timestep_embed/" + GetParam().name(), out, test::count_poisoned(out), ref, test::kElementwiseF32Bound,
               seed);
}

INSTANTIATE_TEST_SUITE_P(timestep_embed, CpuTimestepEmbed,
                         testing::Values(CpuTimestepCase{4, 256}, CpuTimestepCase{3, 7}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// --- timestep_embed -----------------------------------------------------------------------------

class CudaTimestepEmbed : public testing::TestWithParam<int> {};

TEST_P(CudaTimestepEmbed, matches_reference) {
  const int dim = GetParam();
  const vector<int64_t> t = {0, 1, 7, 250, 421, 999, 500, 998};
  const int B = static_cast<int>(t.size());
  vector<float> ref(static_cast<size_t>(B) * dim);
  cpu::timestep_embed(t.data(), ref.data(), B, dim, 10000.0f);
  test::DeviceArray<int64_t> dt(t);
  DeviceTensor dout(ref.size());
  dout.poison();
  cuda::timestep_embed(dt.data(), dout.f32(), B, dim, 10000.0f, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  expect_close("timestep_embed/dim" + std::to_string(dim), out, unwritten, test::to_double(ref),
               test::kElementwiseF32Bound, 0);
}

INSTANTIATE_TEST_SUITE_P(timestep_embed, CudaTimestepEmbed, testing::Values(256, 255, 64),
                         [](const auto& info) { return "dim" + std::to_string(info.param); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
