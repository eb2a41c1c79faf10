// Bias (+ GELU-tanh) on a GEMM output in place (kernels/bias_activation.h; CUDA only, the fallback
// for a missing cuBLASLt epilogue) against its reference: the sum, then dit::cpu::gelu_tanh.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/activations.h"
#include "tests/kernels/harness.h"

#if DIT_CUDA_CASES
#include "kernels/bias_activation.h"
#endif

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

struct CudaBiasActivationCase {
  int M, N;
  bool gelu;
  DeviceDtype dtype;
  std::string name() const {
    return test::dims_name({{"m", M}, {"n", N}}) + (gelu ? "_gelu" : "_bias") + "_" + test::dtype_suffix(dtype);
  }
};

class CudaBiasActivation : public testing::TestWithParam<CudaBiasActivationCase> {};

// In place on a GEMM output: its reference is the sum in float32 of the dtype's values, then
// dit::cpu::gelu_tanh, rounded once to the dtype.
TEST_P(CudaBiasActivation, matches_reference) {
  const CudaBiasActivationCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> out0 = test::rounded_normal(static_cast<size_t>(k.M) * k.N, seed, k.dtype, 2.0f);
  const vector<float> bias = test::rounded_normal(k.N, seed + 1, k.dtype, 1.0f);
  vector<float> ref(out0.size());
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = out0[i] + bias[i % k.N];
  if (k.gelu) cpu::gelu_tanh(ref.data(), ref.data(), static_cast<int64_t>(ref.size()));
  DeviceTensor dout(out0, k.dtype), dbias(bias, k.dtype);
  cuda::bias_activation(dout.data(), dbias.data(), k.dtype, k.M, k.N, k.gelu, nullptr);
  const vector<float> out = dout.download();
  // In place: "never written" cannot be observed, but every element whose reference lies more
  // than one rounding step from its input must have moved. (Within one step, a correct kernel
  // may round onto the input itself: GELU of a large input plus a small bias, for instance.)
  size_t unchanged = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const float step = test::rounding_step(out0[i], k.dtype);
    unchanged += out[i] == out0[i] && std::fabs(test::round_to(ref[i], k.dtype) - out0[i]) > step;
  }
  const double bound = k.dtype == DeviceDtype::f32 ? test::kElementwiseF32Bound : test::output_bound(k.dtype);
  expect_close("bias_activation/" + k.name(), out, unchanged, test::to_double(ref), bound, seed);
}

INSTANTIATE_TEST_SUITE_P(bias_activation, CudaBiasActivation,
                         testing::Values(CudaBiasActivationCase{512, 1152, false, DeviceDtype::f32},
                                         CudaBiasActivationCase{512, 4608, true, DeviceDtype::f32},
                                         CudaBiasActivationCase{512, 4608, true, DeviceDtype::f16},
                                         CudaBiasActivationCase{512, 4608, true, DeviceDtype::bf16},
                                         CudaBiasActivationCase{2, 6912, false, DeviceDtype::f16},
                                         CudaBiasActivationCase{7, 33, false, DeviceDtype::bf16},
                                         CudaBiasActivationCase{17, 1000003, true,
                                                                DeviceDtype::f32}),  // > 65535 blocks of 256
                         [](const auto& info) { return info.param.name(); });

TEST(CudaBiasActivationChecks, rejects_bad_sizes_and_misalignment) {
  DeviceTensor out(64, DeviceDtype::f16), bias(8, DeviceDtype::f16);
  EXPECT_THROW(cuda::bias_activation(out.data(), bias.data(), DeviceDtype::f16, 0, 8, false, nullptr), Error);
  EXPECT_THROW(cuda::bias_activation(out.data(), bias.data(), DeviceDtype::f16, 8, -1, false, nullptr), Error);
  void* misaligned = static_cast<unsigned char*>(out.data()) + 1;
  EXPECT_THROW(cuda::bias_activation(misaligned, bias.data(), DeviceDtype::f16, 4, 8, true, nullptr), Error);
}

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
