// Self-attention (kernels/attention.h). CPU cases: the reference (kernels/attention.cpp) against a
// float64 re-derivation on fresh random inputs. CUDA cases: the naive kernel, the reference of the
// fast variants (attention_flash_test.cpp, attention_tiled_test.cpp), against the CPU reference in
// every dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuAttentionCase {
  int B, T, H, hd;
  std::string name() const { return test::dims_name({{"b", B}, {"t", T}, {"h", H}, {"d", hd}}); }
};

class CpuAttention : public testing::TestWithParam<CpuAttentionCase> {};

TEST_P(CpuAttention, matches_float64_rederivation) {
  const auto [B, T, H, hd] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> qkv = test::random_normal(size_t(B) * T * 3 * H * hd, seed);
  vector<float> out = test::poisoned(size_t(B) * T * H * hd);
  cpu::attention(qkv.data(), out.data(), B, T, H, hd);
  auto at = [&](int b, int t, int which, int h, int d) {
    return double(qkv[((((size_t(b) * T + t) * 3 + which) * H + h) * hd) + d]);
  };
  vector<double> ref(out.size());
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i) {
        vector<double> weights(T);
        double total = 0;
        for (int j = 0; j < T; ++j) {
          double dot = 0;
          for (int d = 0; d < hd; ++d) dot += at(b, i, 0, h, d) * at(b, j, 1, h, d);
          weights[j] = std::exp(dot / std::sqrt(double(hd)));  // unshifted: inputs are O(1)
          total += weights[j];
        }
        for (int d = 0; d < hd; ++d) {
          double acc = 0;
          for (int j = 0; j < T; ++j) acc += weights[j] / total * at(b, j, 2, h, d);
          ref[((size_t(b) * T + i) * H + h) * hd + d] = acc;
        }
      }
  expect_close("attention/" + GetParam().name(), out, test::count_poisoned(out), ref, test::kElementwiseF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(attention, CpuAttention,
                         testing::Values(CpuAttentionCase{2, 16, 2, 72}, CpuAttentionCase{1, 16, 4, 16},
                                         CpuAttentionCase{2, 64, 3, 64}, CpuAttentionCase{1, 7, 1, 8}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// --- attention (naive) --------------------------------------------------------------------------

using test::AttentionCase;

class CudaAttention : public testing::TestWithParam<AttentionCase> {};

TEST_P(CudaAttention, matches_reference) {
  const AttentionCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const test::AttentionRun run = test::run_naive_attention(k, seed);
  expect_close("attention/" + k.name(), run.naive, run.naive_unwritten, test::to_double(run.reference),
               test::output_bound(k.dtype), seed);
}

INSTANTIATE_TEST_SUITE_P(
    attention, CudaAttention,
    testing::Values(AttentionCase{2, 16, 256, 72, DeviceDtype::f32}, AttentionCase{2, 16, 256, 72, DeviceDtype::f16},
                    AttentionCase{2, 16, 256, 72, DeviceDtype::bf16}, AttentionCase{2, 6, 256, 64, DeviceDtype::f32},
                    AttentionCase{2, 6, 256, 64, DeviceDtype::f16}, AttentionCase{1, 4, 16, 16, DeviceDtype::f32},
                    AttentionCase{2, 2, 16, 72, DeviceDtype::f32}, AttentionCase{1, 3, 100, 40, DeviceDtype::f32},
                    AttentionCase{1, 16, 1024, 72, DeviceDtype::f16}),
    [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
