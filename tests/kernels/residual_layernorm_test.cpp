// The gated residual fused with the next LayerNorm + modulation (kernels/residual_layernorm.h; CUDA
// only) against its reference, dit::cpu::gated_residual then dit::cpu::layernorm_modulate, in the
// float4, scalar and re-read forms; and the pair of a block's two residuals with the stream
// written once, at a float32 or a 16-bit stream.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/harness.h"

#if DIT_CUDA_CASES
#include "kernels/gated_residual.h"
#include "kernels/layernorm_modulate.h"
#include "kernels/residual_layernorm.h"
#endif

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

struct ResidualLayerNormCase {
  int B, T, D;
  DeviceDtype dtype;
  std::string name() const { return test::dims_name({{"b", B}, {"t", T}, {"d", D}}) + "_" + test::dtype_suffix(dtype); }
};

// --- gated residual fused with the next LayerNorm + modulation ----------------------------------

class CudaResidualLayerNorm : public testing::TestWithParam<ResidualLayerNormCase> {};

TEST_P(CudaResidualLayerNorm, matches_reference_composition) {
  const ResidualLayerNormCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int stride = 6 * k.D;
  vector<float> x = test::random_normal(static_cast<size_t>(k.B) * k.T * k.D, seed, 2.0f);
  for (float& v : x) v += 3.0f;
  const vector<float> y = test::round_to(test::random_normal(x.size(), seed + 1), k.dtype);
  const vector<float> modulation = test::random_normal(static_cast<size_t>(k.B) * stride, seed + 2, 0.5f);
  vector<float> ref_x = x, ref(x.size());
  cpu::gated_residual(ref_x.data(), y.data(), modulation.data() + 2 * k.D, stride, k.B, k.T, k.D);
  cpu::layernorm_modulate(ref_x.data(), modulation.data() + 3 * k.D, modulation.data() + 4 * k.D, stride, ref.data(),
                          k.B, k.T, k.D, 1e-6f);
  // the branch y in the output's dtype (as the engine stores it), its rounded values in the reference
  DeviceTensor dx(x), dy(y, k.dtype), dmod(modulation), dout(x.size(), k.dtype);
  dout.poison();
  cuda::residual_layernorm_modulate(dx.f32(), dy.data(), k.dtype, dmod.f32() + 2 * k.D, stride, dmod.f32() + 3 * k.D,
                                    dmod.f32() + 4 * k.D, stride, dout.data(), k.dtype, k.B, k.T, k.D, 1e-6f, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  expect_close("residual_layernorm/" + k.name() + "/out", out, unwritten, test::to_double(ref),
               test::output_bound(k.dtype), seed);
  expect_close("residual_layernorm/" + k.name() + "/x", dx.download(), 0, test::to_double(ref_x),
               test::kElementwiseF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(residual_layernorm, CudaResidualLayerNorm,
                         testing::Values(ResidualLayerNormCase{2, 256, 1152, DeviceDtype::f32},
                                         ResidualLayerNormCase{2, 256, 1152, DeviceDtype::f16},
                                         ResidualLayerNormCase{2, 1024, 1152, DeviceDtype::bf16},
                                         ResidualLayerNormCase{2, 9, 64, DeviceDtype::f16},  // float4, 2 warps idle
                                         ResidualLayerNormCase{2, 13, 1000,
                                                               DeviceDtype::bf16},              // float4, partial warps
                                         ResidualLayerNormCase{3, 7, 33, DeviceDtype::f32},     // scalar block form
                                         ResidualLayerNormCase{1, 6, 1150, DeviceDtype::f32},   // scalar, D % 4 != 0
                                         ResidualLayerNormCase{2, 5, 1500, DeviceDtype::f16}),  // re-read form
                         [](const auto& info) { return info.param.name(); });

// --- a block's two residuals with the stream written once (residual_layernorm_modulate_pair) -----

struct ResidualPairCase {
  int B, T, D;
  DeviceDtype stream;  // the residual stream's dtype: f32, or the 16-bit compute dtype
  DeviceDtype branch;  // the branches' and the output's dtype (the stream's when it is 16-bit)
  bool mlp;            // the MLP's launch (y2 and gate2, x stored), else the attention's (x kept)
  std::string name() const {
    return test::dims_name({{"b", B}, {"t", T}, {"d", D}}) + "_x" + test::dtype_suffix(stream) + "_" +
           test::dtype_suffix(branch) + (mlp ? "_mlp" : "_attention");
  }
};

class CudaResidualLayerNormPair : public testing::TestWithParam<ResidualPairCase> {};

// Reference: x + gate y, then + gate2 y2 (the MLP's launch), in float32 as cpu::gated_residual
// adds them, then cpu::layernorm_modulate; the stored stream is that sum rounded to the stream's
// dtype (MLP launch) or x untouched (attention launch).
TEST_P(CudaResidualLayerNormPair, matches_reference_composition) {
  const ResidualPairCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int stride = 6 * k.D;
  const size_t n = static_cast<size_t>(k.B) * k.T * k.D;
  vector<float> x = test::random_normal(n, seed, 2.0f);
  for (float& v : x) v += 3.0f;
  x = test::round_to(x, k.stream);
  const vector<float> y = test::round_to(test::random_normal(n, seed + 1), k.branch);
  const vector<float> y2 = test::round_to(test::random_normal(n, seed + 3), k.branch);
  const vector<float> modulation = test::random_normal(static_cast<size_t>(k.B) * stride, seed + 2, 0.5f);
  const float* gate = modulation.data() + 2 * k.D;
  const float* gate2 = modulation.data() + 5 * k.D;
  vector<float> sum = x, ref(n);
  cpu::gated_residual(sum.data(), y.data(), gate, stride, k.B, k.T, k.D);
  if (k.mlp) cpu::gated_residual(sum.data(), y2.data(), gate2, stride, k.B, k.T, k.D);
  cpu::layernorm_modulate(sum.data(), modulation.data() + 3 * k.D, modulation.data() + 4 * k.D, stride, ref.data(), k.B,
                          k.T, k.D, 1e-6f);
  const vector<float> ref_x = k.mlp ? test::round_to(sum, k.stream) : x;

  DeviceTensor dx(x, k.stream), dy(y, k.branch), dy2(y2, k.branch), dmod(modulation), dout(n, k.branch);
  dout.poison();
  cuda::residual_layernorm_modulate_pair(dx.data(), k.stream, k.mlp, dy.data(), dmod.f32() + 2 * k.D,
                                         k.mlp ? dy2.data() : nullptr, k.mlp ? dmod.f32() + 5 * k.D : nullptr, stride,
                                         k.branch, dmod.f32() + 3 * k.D, dmod.f32() + 4 * k.D, stride, dout.data(),
                                         k.branch, k.B, k.T, k.D, 1e-6f, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  expect_close("residual_layernorm_pair/" + k.name() + "/out", out, unwritten, test::to_double(ref),
               test::output_bound(k.branch), seed);
  // x: untouched after the attention's launch; after the MLP's, the float32 sum, rounded once to
  // a 16-bit stream (a rounding step of the stream's dtype either way, in the normwise bound)
  const double x_bound = k.stream == DeviceDtype::f32 ? test::kElementwiseF32Bound : test::output_bound(k.stream);
  expect_close("residual_layernorm_pair/" + k.name() + "/x", dx.download(), 0, test::to_double(ref_x),
               k.mlp ? x_bound : 0.0, seed);
}

INSTANTIATE_TEST_SUITE_P(
    residual_layernorm_pair, CudaResidualLayerNormPair,
    testing::Values(ResidualPairCase{2, 256, 1152, DeviceDtype::f32, DeviceDtype::f16, false},
                    ResidualPairCase{2, 256, 1152, DeviceDtype::f32, DeviceDtype::f16, true},
                    ResidualPairCase{2, 256, 1152, DeviceDtype::f16, DeviceDtype::f16, false},
                    ResidualPairCase{2, 256, 1152, DeviceDtype::f16, DeviceDtype::f16, true},
                    ResidualPairCase{2, 1024, 1152, DeviceDtype::bf16, DeviceDtype::bf16, true},
                    ResidualPairCase{2, 256, 1152, DeviceDtype::f32, DeviceDtype::f32, true},
                    ResidualPairCase{2, 9, 64, DeviceDtype::f16, DeviceDtype::f16, true},     // odd T, 2 warps idle
                    ResidualPairCase{2, 14, 1000, DeviceDtype::f16, DeviceDtype::f16, true},  // partial warps
                    ResidualPairCase{3, 6, 1000, DeviceDtype::bf16, DeviceDtype::bf16, false}),
    [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
