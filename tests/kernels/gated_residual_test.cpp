// The adaLN-Zero gated residual x += gate * y (kernels/gated_residual.h). CPU cases: the reference
// (kernels/gated_residual.cpp) against a float64 re-derivation on fresh random inputs. CUDA cases:
// the kernel against the reference, every element moved.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/gated_residual.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuResidualCase {
  int B, T, D;
  std::string name() const { return test::dims_name({{"b", B}, {"t", T}, {"d", D}}); }
};

class CpuGatedResidual : public testing::TestWithParam<CpuResidualCase> {};

TEST_P(CpuGatedResidual, matches_float64_rederivation) {
  const auto [B, T, D] = GetParam();
  const uint64_t seed = test::fresh_seed();
  vector<float> x = test::random_normal(size_t(B) * T * D, seed);
  const vector<float> y = test::random_normal(x.size(), seed + 1);
  const vector<float> modulation = test::random_normal(size_t(B) * 6 * D, seed + 2);
  const float* gate = modulation.data() + 2 * D;
  vector<double> ref(x.size());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int d = 0; d < D; ++d) {
        const size_t i = (size_t(b) * T + t) * D + d;
        ref[i] = double(x[i]) + double(gate[size_t(b) * 6 * D + d]) * y[i];
      }
  cpu::gated_residual(x.data(), y.data(), gate, 6 * D, B, T, D);
  expect_close("gated_residual/" + GetParam().name(), x, test::count_poisoned(x), ref, test::kElementwiseF32Bound,
               seed);
}

INSTANTIATE_TEST_SUITE_P(gated_residual, CpuGatedResidual, testing::Values(CpuResidualCase{2, 16, 64}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// --- gated_residual -----------------------------------------------------------------------------

struct ResidualCase {
  int B, T, D;
  std::string name() const { return test::dims_name({{"b", B}, {"t", T}, {"d", D}}); }
};

class CudaGatedResidual : public testing::TestWithParam<ResidualCase> {};

TEST_P(CudaGatedResidual, matches_reference) {
  const ResidualCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int stride = 6 * k.D;
  const vector<float> x = test::random_normal(static_cast<size_t>(k.B) * k.T * k.D, seed);
  const vector<float> y = test::random_normal(x.size(), seed + 1);
  const vector<float> modulation = test::random_normal(static_cast<size_t>(k.B) * stride, seed + 2);
  vector<float> ref = x;
  cpu::gated_residual(ref.data(), y.data(), modulation.data() + 5 * k.D, stride, k.B, k.T, k.D);
  DeviceTensor dx(x), dy(y), dmod(modulation);
  cuda::gated_residual(dx.f32(), dy.f32(), dmod.f32() + 5 * k.D, stride, k.B, k.T, k.D, nullptr);
  const vector<float> out = dx.download();
  // in place: "never written" cannot be observed, but every element must have moved
  size_t unchanged = 0;
  for (size_t i = 0; i < out.size(); ++i) unchanged += out[i] == x[i] && ref[i] != x[i];
  expect_close("gated_residual/" + k.name(), out, unchanged, test::to_double(ref), test::kElementwiseF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(gated_residual, CudaGatedResidual,
                         testing::Values(ResidualCase{2, 256, 1152}, ResidualCase{3, 16, 64}, ResidualCase{1, 5, 7}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
