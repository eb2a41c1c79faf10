// SiLU and GELU-tanh (kernels/activations.h). CPU cases: the reference (kernels/activations.cpp)
// against a float64 re-derivation on fresh random inputs. CUDA cases: the kernels against the
// reference, float32 in and fp32/fp16/bf16 out, and GELU in place.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/activations.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuActivationCase {
  bool gelu;
  int n;  // below and above the parallel threshold
  std::string name() const { return std::string(gelu ? "gelu_tanh" : "silu") + "_n" + std::to_string(n); }
};

class CpuActivation : public testing::TestWithParam<CpuActivationCase> {};

TEST_P(CpuActivation, matches_float64_rederivation) {
  const auto [gelu, n] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> x = test::random_normal(n, seed, 4.0f);
  vector<float> out = test::poisoned(n);
  vector<double> ref(n);
  if (!gelu) {
    cpu::silu(x.data(), out.data(), n);
    for (int i = 0; i < n; ++i) ref[i] = x[i] / (1 + std::exp(-double(x[i])));
  } else {
    cpu::gelu_tanh(x.data(), out.data(), n);
    for (int i = 0; i < n; ++i) {
      const double v = x[i];
      ref[i] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    }
  }
  expect_close("activations/" + GetParam().name(), out, test::count_poisoned(out), ref, test::kElementwiseF32Bound,
               seed);
}

INSTANTIATE_TEST_SUITE_P(activations, CpuActivation,
                         testing::Values(CpuActivationCase{false, 1000}, CpuActivationCase{true, 1000},
                                         CpuActivationCase{false, 100000}, CpuActivationCase{true, 100000}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// --- activations --------------------------------------------------------------------------------

struct ActivationCase {
  bool gelu;
  int64_t n;
  DeviceDtype dtype;
  std::string name() const {
    return std::string(gelu ? "gelu_tanh" : "silu") + "_n" + std::to_string(n) + "_" + test::dtype_suffix(dtype);
  }
};

class CudaActivation : public testing::TestWithParam<ActivationCase> {};

TEST_P(CudaActivation, matches_reference) {
  const ActivationCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  vector<float> x = test::random_normal(static_cast<size_t>(k.n), seed, 3.0f);
  if (k.gelu) x = test::round_to(x, k.dtype);  // GELU reads the dtype; SiLU reads float32
  vector<float> ref(x.size());
  if (k.gelu)
    cpu::gelu_tanh(x.data(), ref.data(), k.n);
  else
    cpu::silu(x.data(), ref.data(), k.n);
  DeviceTensor dx(x, k.gelu ? k.dtype : DeviceDtype::f32), dout(x.size(), k.dtype);
  dout.poison();
  if (k.gelu)
    cuda::gelu_tanh(dx.data(), dout.data(), k.dtype, k.n, nullptr);
  else
    cuda::silu(dx.f32(), dout.data(), k.dtype, k.n, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  const double bound = k.dtype == DeviceDtype::f32 ? test::kElementwiseF32Bound : test::output_bound(k.dtype);
  expect_close("activations/" + k.name(), out, unwritten, test::to_double(ref), bound, seed);
}

TEST(CudaActivationInPlace, gelu_f32_in_place_matches_reference) {
  const uint64_t seed = test::fresh_seed();
  const vector<float> x = test::random_normal(4099, seed, 3.0f);
  vector<float> ref(x.size());
  cpu::gelu_tanh(x.data(), ref.data(), static_cast<int64_t>(x.size()));
  DeviceTensor dx(x);
  cuda::gelu_tanh(dx.data(), dx.data(), DeviceDtype::f32, static_cast<int64_t>(x.size()), nullptr);
  expect_close("activations/gelu_tanh_in_place", dx.download(), 0, test::to_double(ref), test::kElementwiseF32Bound,
               seed);
}

INSTANTIATE_TEST_SUITE_P(
    activations, CudaActivation,
    testing::Values(ActivationCase{false, 100003, DeviceDtype::f32}, ActivationCase{false, 2304, DeviceDtype::f16},
                    ActivationCase{false, 2304, DeviceDtype::bf16}, ActivationCase{true, 100003, DeviceDtype::f32},
                    ActivationCase{true, 100003, DeviceDtype::f16}, ActivationCase{true, 100003, DeviceDtype::bf16}),
    [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
