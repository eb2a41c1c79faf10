// GroupNorm (+ SiLU) over channels-last activations (kernels/group_norm.h). CPU cases: the
// reference against a float64 re-derivation on fresh random inputs. CUDA cases: the kernel against
// the reference in fp32, fp16 and bf16, in place too.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/group_norm.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuGroupNormCase {
  int N;
  int64_t P;
  int C, groups;
  bool silu;
  std::string name() const {
    return test::dims_name({{"n", N}, {"p", P}, {"c", C}, {"g", groups}}) + (silu ? "_silu" : "");
  }
};

class CpuGroupNorm : public testing::TestWithParam<CpuGroupNormCase> {};

TEST_P(CpuGroupNorm, matches_float64_rederivation) {
  const auto [N, P, C, groups, silu] = GetParam();
  const uint64_t seed = test::fresh_seed();
  vector<float> x = test::random_normal(size_t(N) * P * C, seed, 2.0f);
  for (float& v : x) v += 3.0f;  // a mean far from 0
  const vector<float> gamma = test::random_normal(C, seed + 1), beta = test::random_normal(C, seed + 2);
  vector<float> out = test::poisoned(x.size());
  cpu::group_norm(x.data(), gamma.data(), beta.data(), out.data(), N, P, C, groups, 1e-6f, silu);
  const int per_group = C / groups;
  vector<double> ref(x.size());
  for (int n = 0; n < N; ++n)
    for (int g = 0; g < groups; ++g) {
      double sum = 0, sum_squares = 0;
      for (int64_t p = 0; p < P; ++p)
        for (int c = g * per_group; c < (g + 1) * per_group; ++c) {
          const double v = x[(size_t(n) * P + p) * C + c];
          sum += v, sum_squares += v * v;
        }
      const double count = double(P) * per_group, mean = sum / count;
      const double variance = sum_squares / count - mean * mean;
      for (int64_t p = 0; p < P; ++p)
        for (int c = g * per_group; c < (g + 1) * per_group; ++c) {
          const size_t i = (size_t(n) * P + p) * C + c;
          const double v = (x[i] - mean) / std::sqrt(variance + double(1e-6f)) * gamma[c] + beta[c];
          ref[i] = silu ? v / (1 + std::exp(-v)) : v;
        }
    }
  expect_close("group_norm/" + GetParam().name(), out, test::count_poisoned(out), ref, test::kElementwiseF32Bound,
               seed);
}

INSTANTIATE_TEST_SUITE_P(group_norm, CpuGroupNorm,
                         testing::Values(CpuGroupNormCase{2, 64, 64, 8, true}, CpuGroupNormCase{1, 100, 48, 4, false},
                                         CpuGroupNormCase{3, 7, 96, 32, true}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

struct CudaGroupNormCase {
  int N;
  int64_t P;
  int C, groups;
  bool silu, in_place;
  DeviceDtype dtype;
  std::string name() const {
    return test::dims_name({{"n", N}, {"p", P}, {"c", C}, {"g", groups}}) + (silu ? "_silu" : "") +
           (in_place ? "_inplace" : "") + "_" + test::dtype_suffix(dtype);
  }
};

class CudaGroupNorm : public testing::TestWithParam<CudaGroupNormCase> {};

TEST_P(CudaGroupNorm, matches_reference) {
  const CudaGroupNormCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const size_t n = static_cast<size_t>(c.N) * c.P * c.C;
  // An offset mean exercises the two-pass variance.
  const vector<float> x = test::rounded_normal(n, seed, c.dtype, 2.0f, 3.0f);
  vector<float> gamma = test::random_normal(c.C, seed + 1, 0.2f), beta = test::random_normal(c.C, seed + 2, 0.5f);
  for (float& g : gamma) g += 1.0f;
  vector<float> ref(n);
  cpu::group_norm(x.data(), gamma.data(), beta.data(), ref.data(), c.N, c.P, c.C, c.groups, 1e-6f, c.silu);

  DeviceTensor in(x, c.dtype), out(n, c.dtype), gamma_d(gamma), beta_d(beta);
  DeviceTensor workspace(cuda::group_norm_workspace_floats(c.N, c.P, c.groups));
  out.poison();
  workspace.poison();
  DeviceTensor& target = c.in_place ? in : out;
  cuda::group_norm(in.data(), gamma_d.f32(), beta_d.f32(), target.data(), c.dtype, c.N, c.P, c.C, c.groups, 1e-6f,
                   c.silu, workspace.f32(), nullptr);
  size_t unwritten = 0;
  const vector<float> got = target.download(&unwritten);
  expect_close("group_norm/" + c.name(), got, unwritten, test::to_double(ref), test::vae_output_bound(c.dtype), seed);
}

INSTANTIATE_TEST_SUITE_P(group_norm, CudaGroupNorm,
                         testing::Values(CudaGroupNormCase{2, 64, 64, 8, true, false, DeviceDtype::f32},
                                         CudaGroupNormCase{2, 100, 48, 4, false, false,
                                                           DeviceDtype::f32},  // partial last chunk
                                         CudaGroupNormCase{1, 1024, 512, 32, true, true, DeviceDtype::f32},
                                         CudaGroupNormCase{3, 4096, 128, 32, true, false, DeviceDtype::f16},
                                         CudaGroupNormCase{1, 16384, 256, 32, true, true, DeviceDtype::f16},
                                         CudaGroupNormCase{2, 1024, 512, 32, false, false, DeviceDtype::bf16},
                                         CudaGroupNormCase{1, 7, 1536, 32, true, false, DeviceDtype::bf16}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
