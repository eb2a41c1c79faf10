// The row softmax of the VAE's attention (kernels/vae_softmax.h). CPU cases: the reference against
// a float64 re-derivation on fresh random inputs. CUDA cases: the kernel against the reference in
// fp32, fp16 and bf16.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/vae_softmax.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuSoftmaxCase {
  int64_t R, L;
  float scale;  // spread of the scores
  std::string name() const { return test::dims_name({{"r", R}, {"l", L}, {"s", static_cast<int>(scale)}}); }
};

class CpuVaeSoftmax : public testing::TestWithParam<CpuSoftmaxCase> {};

TEST_P(CpuVaeSoftmax, matches_float64_rederivation) {
  const auto [R, L, scale] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> in = test::random_normal(size_t(R * L), seed, scale);
  vector<float> out = test::poisoned(in.size());
  cpu::vae_softmax(in.data(), out.data(), R, L);
  vector<double> ref(in.size());
  for (int64_t r = 0; r < R; ++r) {
    const float* row = in.data() + r * L;
    const double top = *std::max_element(row, row + L);
    double total = 0;
    for (int64_t j = 0; j < L; ++j) total += std::exp(row[j] - top);
    for (int64_t j = 0; j < L; ++j) ref[r * L + j] = std::exp(row[j] - top) / total;
  }
  expect_close("vae_softmax/" + GetParam().name(), out, test::count_poisoned(out), ref, test::kElementwiseF32Bound,
               seed);
}

INSTANTIATE_TEST_SUITE_P(vae_softmax, CpuVaeSoftmax,
                         testing::Values(CpuSoftmaxCase{16, 16, 1.0f}, CpuSoftmaxCase{3, 1000, 30.0f}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

struct CudaSoftmaxCase {
  int64_t R, L;
  float scale;  // spread of the scores
  DeviceDtype dtype;
  std::string name() const {
    return test::dims_name({{"r", R}, {"l", L}, {"s", static_cast<int>(scale)}}) + "_" + test::dtype_suffix(dtype);
  }
};

class CudaVaeSoftmax : public testing::TestWithParam<CudaSoftmaxCase> {};

TEST_P(CudaVaeSoftmax, matches_reference) {
  const CudaSoftmaxCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> x = test::rounded_normal(static_cast<size_t>(c.R * c.L), seed, c.dtype, c.scale);
  vector<float> ref(x.size());
  cpu::vae_softmax(x.data(), ref.data(), c.R, c.L);
  DeviceTensor in(x, c.dtype), out(x.size(), c.dtype);
  out.poison();
  cuda::vae_softmax(in.data(), out.data(), c.dtype, c.R, c.L, nullptr);
  size_t unwritten = 0;
  const vector<float> got = out.download(&unwritten);
  expect_close("vae_softmax/" + c.name(), got, unwritten, test::to_double(ref), test::vae_output_bound(c.dtype), seed);
}

INSTANTIATE_TEST_SUITE_P(vae_softmax, CudaVaeSoftmax,
                         testing::Values(CudaSoftmaxCase{16, 16, 1.0f, DeviceDtype::f32},
                                         CudaSoftmaxCase{64, 1024, 4.0f, DeviceDtype::f32},
                                         CudaSoftmaxCase{3, 77, 30.0f, DeviceDtype::f32},
                                         CudaSoftmaxCase{4096, 4096, 3.0f, DeviceDtype::f16},
                                         CudaSoftmaxCase{1024, 1024, 3.0f, DeviceDtype::bf16}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
