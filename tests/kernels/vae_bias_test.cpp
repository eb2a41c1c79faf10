// The per-channel bias of the VAE convolutions (kernels/vae_bias.h). CPU cases: the reference
// against a float64 re-derivation on fresh random inputs. CUDA cases: the kernel against the
// reference in fp32, fp16 and bf16.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/vae_bias.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuBiasCase {
  int64_t rows;
  int C;
  std::string name() const { return test::dims_name({{"rows", rows}, {"c", C}}); }
};

class CpuVaeBias : public testing::TestWithParam<CpuBiasCase> {};

TEST_P(CpuVaeBias, adds_the_channel_bias) {
  const auto [rows, C] = GetParam();
  const uint64_t seed = test::fresh_seed();
  vector<float> x = test::random_normal(size_t(rows) * C, seed);
  const vector<float> bias = test::random_normal(C, seed + 1);
  vector<double> ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) ref[i] = double(x[i]) + bias[i % C];
  cpu::vae_add_bias(x.data(), bias.data(), rows, C);
  expect_close("vae_bias/" + GetParam().name(), x, test::count_poisoned(x), ref, test::kElementwiseF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(vae_bias, CpuVaeBias, testing::Values(CpuBiasCase{64, 8}, CpuBiasCase{7, 3}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

struct CudaBiasCase {
  int64_t rows;
  int C;
  DeviceDtype dtype;
  std::string name() const { return test::dims_name({{"rows", rows}, {"c", C}}) + "_" + test::dtype_suffix(dtype); }
};

class CudaVaeBias : public testing::TestWithParam<CudaBiasCase> {};

TEST_P(CudaVaeBias, matches_reference) {
  const CudaBiasCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> x = test::rounded_normal(static_cast<size_t>(c.rows) * c.C, seed, c.dtype, 1.0f);
  const vector<float> bias = test::random_normal(c.C, seed + 1, 1.0f);
  vector<float> ref = x;
  cpu::vae_add_bias(ref.data(), bias.data(), c.rows, c.C);
  DeviceTensor data(x, c.dtype), bias_d(bias);
  cuda::vae_add_bias(data.data(), bias_d.f32(), c.dtype, c.rows, c.C, nullptr);
  // in place: "never written" cannot be observed; the error bound checks every element
  expect_close("vae_bias/" + c.name(), data.download(), 0, test::to_double(ref), test::vae_output_bound(c.dtype), seed);
}

INSTANTIATE_TEST_SUITE_P(vae_bias, CudaVaeBias,
                         testing::Values(CudaBiasCase{64, 8, DeviceDtype::f32},
                                         CudaBiasCase{4096, 512, DeviceDtype::f32},
                                         CudaBiasCase{65536, 128, DeviceDtype::f16},
                                         CudaBiasCase{1000, 6, DeviceDtype::bf16}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
