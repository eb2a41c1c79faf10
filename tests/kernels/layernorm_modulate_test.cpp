// LayerNorm fused with adaLN modulation (kernels/layernorm_modulate.h). CPU cases: the reference
// (kernels/layernorm_modulate.cpp) against a float64 re-derivation on fresh random inputs. CUDA
// cases: the kernel against the reference in every output dtype, the register and re-read forms.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/layernorm_modulate.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuLayerNormCase {
  int B, T, D;
  std::string name() const { return test::dims_name({{"b", B}, {"t", T}, {"d", D}}); }
};

class CpuLayerNormModulate : public testing::TestWithParam<CpuLayerNormCase> {};

TEST_P(CpuLayerNormModulate, matches_float64_rederivation) {
  const auto [B, T, D] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int stride = 6 * D;  // slices of an adaLN output, as the model passes them
  vector<float> x = test::random_normal(size_t(B) * T * D, seed, 2.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] += 3.0f;  // a mean far from 0
  const vector<float> modulation = test::random_normal(size_t(B) * stride, seed + 1);
  const float* shift = modulation.data() + 3 * D;
  const float* scale = modulation.data() + 4 * D;
  vector<float> out = test::poisoned(x.size());
  cpu::layernorm_modulate(x.data(), shift, scale, stride, out.data(), B, T, D, 1e-6f);
  vector<double> ref(x.size());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const float* row = x.data() + (size_t(b) * T + t) * D;
      double sum = 0, sum_squares = 0;
      for (int d = 0; d < D; ++d) sum += row[d], sum_squares += double(row[d]) * row[d];
      const double mean = sum / D, variance = sum_squares / D - mean * mean;
      for (int d = 0; d < D; ++d)
        ref[(size_t(b) * T + t) * D + d] =
            (row[d] - mean) / std::sqrt(variance + double(1e-6f)) * (1.0 + scale[size_t(b) * stride + d]) +
            shift[size_t(b) * stride + d];
    }
  expect_close("layernorm_modulate/" + GetParam().name(), out, test::count_poisoned(out), ref,
               test::kElementwiseF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(layernorm_modulate, CpuLayerNormModulate,
                         testing::Values(CpuLayerNormCase{2, 16, 64}, CpuLayerNormCase{3, 5, 144}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// --- layernorm_modulate -------------------------------------------------------------------------

struct LayerNormCase {
  int B, T, D;
  DeviceDtype dtype;
  std::string name() const { return test::dims_name({{"b", B}, {"t", T}, {"d", D}}) + "_" + test::dtype_suffix(dtype); }
};

class CudaLayerNormModulate : public testing::TestWithParam<LayerNormCase> {};

TEST_P(CudaLayerNormModulate, matches_reference) {
  const LayerNormCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int stride = 6 * k.D;  // shift and scale are slices of an adaLN output row
  vector<float> x = test::random_normal(static_cast<size_t>(k.B) * k.T * k.D, seed, 2.0f);
  for (float& v : x) v += 3.0f;  // an offset mean: a one-pass variance would lose digits here
  const vector<float> modulation = test::random_normal(static_cast<size_t>(k.B) * stride, seed + 1, 0.5f);
  const float* shift = modulation.data() + 3 * k.D;
  const float* scale = modulation.data() + 4 * k.D;
  vector<float> ref(x.size());
  cpu::layernorm_modulate(x.data(), shift, scale, stride, ref.data(), k.B, k.T, k.D, 1e-6f);

  DeviceTensor dx(x), dmod(modulation), dout(x.size(), k.dtype);
  dout.poison();
  cuda::layernorm_modulate(dx.f32(), dmod.f32() + 3 * k.D, dmod.f32() + 4 * k.D, stride, dout.data(), k.dtype, k.B, k.T,
                           k.D, 1e-6f, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  expect_close("layernorm_modulate/" + k.name(), out, unwritten, test::to_double(ref), test::output_bound(k.dtype),
               seed);
}

INSTANTIATE_TEST_SUITE_P(
    layernorm_modulate, CudaLayerNormModulate,
    testing::Values(LayerNormCase{2, 256, 1152, DeviceDtype::f32}, LayerNormCase{2, 256, 1152, DeviceDtype::f16},
                    LayerNormCase{2, 256, 1152, DeviceDtype::bf16}, LayerNormCase{3, 16, 144, DeviceDtype::f32},
                    LayerNormCase{1, 1024, 1152, DeviceDtype::bf16}, LayerNormCase{3, 7, 33, DeviceDtype::f32},
                    LayerNormCase{2, 5, 1500, DeviceDtype::f32}),  // re-read form
    [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
