// The patch embedding (kernels/patch_embed.h). CPU cases: the reference (kernels/patch_embed.cpp)
// against a float64 re-derivation on fresh random inputs. CUDA cases: the kernel against the
// reference, and the patch embedding fused with the first LayerNorm + modulation against the
// reference patch embedding then LayerNorm, its residual bit for bit against cuda::patch_embed's.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/patch_embed.h"
#include "tests/kernels/harness.h"

#if DIT_CUDA_CASES
#include "kernels/layernorm_modulate.h"
#endif

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuPatchEmbedCase {
  int B, C, S, p, D;
  std::string name() const { return test::dims_name({{"b", B}, {"c", C}, {"s", S}, {"p", p}, {"d", D}}); }
};

class CpuPatchEmbed : public testing::TestWithParam<CpuPatchEmbedCase> {};

TEST_P(CpuPatchEmbed, matches_float64_rederivation) {
  const auto [B, C, S, p, D] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int g = S / p, T = g * g;
  const vector<float> x = test::random_normal(size_t(B) * C * S * S, seed);
  const vector<float> weight = test::random_normal(size_t(D) * C * p * p, seed + 1, 0.2f);
  const vector<float> bias = test::random_normal(D, seed + 2);
  const vector<float> pos = test::random_normal(size_t(T) * D, seed + 3);
  vector<float> out = test::poisoned(size_t(B) * T * D);
  cpu::patch_embed(x.data(), weight.data(), bias.data(), pos.data(), out.data(), B, C, S, p, D);
  vector<double> ref(out.size());
  for (int b = 0; b < B; ++b)
    for (int oh = 0; oh < g; ++oh)
      for (int ow = 0; ow < g; ++ow)
        for (int d = 0; d < D; ++d) {
          double acc = bias[d];
          for (int c = 0; c < C; ++c)
            for (int kh = 0; kh < p; ++kh)
              for (int kw = 0; kw < p; ++kw)
                acc += double(weight[((size_t(d) * C + c) * p + kh) * p + kw]) *
                       x[((size_t(b) * C + c) * S + oh * p + kh) * S + ow * p + kw];
          const int token = oh * g + ow;
          ref[(size_t(b) * T + token) * D + d] = acc + pos[size_t(token) * D + d];
        }
  expect_close("patch_embed/" + GetParam().name(), out, test::count_poisoned(out), ref, test::kElementwiseF32Bound,
               seed);
}

INSTANTIATE_TEST_SUITE_P(patch_embed, CpuPatchEmbed,
                         testing::Values(CpuPatchEmbedCase{2, 4, 8, 2, 64}, CpuPatchEmbedCase{1, 4, 16, 4, 32},
                                         CpuPatchEmbedCase{2, 3, 8, 8, 16}),
                         [](const auto& info) { return info.param.name(); });

// transpose_patch_weight: element (i, d) of [C p p, D] is element (d, i) of [D, C p p].
struct TransposeCase {
  int D, patch;
  std::string name() const { return test::dims_name({{"d", D}, {"patch", patch}}); }
};

class CpuTransposePatchWeight : public testing::TestWithParam<TransposeCase> {};

TEST_P(CpuTransposePatchWeight, moves_every_element) {
  const auto [D, patch] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> weight = test::random_normal(size_t(D) * patch, seed);
  const vector<float> transposed = cpu::transpose_patch_weight(weight, D);
  ASSERT_EQ(transposed.size(), weight.size());
  for (int d = 0; d < D; ++d)
    for (int i = 0; i < patch; ++i)
      ASSERT_EQ(transposed[size_t(i) * D + d], weight[size_t(d) * patch + i]) << "d " << d << " i " << i;
}

INSTANTIATE_TEST_SUITE_P(transpose_patch_weight, CpuTransposePatchWeight,
                         testing::Values(TransposeCase{1152, 16}, TransposeCase{5, 3}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// --- patch_embed --------------------------------------------------------------------------------

struct PatchEmbedCase {
  int B, C, S, p, D;
  std::string name() const { return test::dims_name({{"b", B}, {"c", C}, {"s", S}, {"p", p}, {"d", D}}); }
};

class CudaPatchEmbed : public testing::TestWithParam<PatchEmbedCase> {};

TEST_P(CudaPatchEmbed, matches_reference) {
  const PatchEmbedCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int T = (k.S / k.p) * (k.S / k.p);
  const vector<float> x = test::random_normal(static_cast<size_t>(k.B) * k.C * k.S * k.S, seed);
  const vector<float> w = test::random_normal(static_cast<size_t>(k.D) * k.C * k.p * k.p, seed + 1, 0.2f);
  const vector<float> bias = test::random_normal(k.D, seed + 2);
  const vector<float> pos = test::random_normal(static_cast<size_t>(T) * k.D, seed + 3);
  vector<float> ref(static_cast<size_t>(k.B) * T * k.D);
  cpu::patch_embed(x.data(), w.data(), bias.data(), pos.data(), ref.data(), k.B, k.C, k.S, k.p, k.D);

  DeviceTensor dx(x), dw(cpu::transpose_patch_weight(w, k.D)), db(bias), dpos(pos), dout(ref.size());
  dout.poison();
  cuda::patch_embed(dx.f32(), dw.f32(), db.f32(), dpos.f32(), dout.f32(), k.B, k.C, k.S, k.p, k.D, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  expect_close("patch_embed/" + k.name(), out, unwritten, test::to_double(ref), test::kF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(patch_embed, CudaPatchEmbed,
                         testing::Values(PatchEmbedCase{2, 4, 32, 2, 1152}, PatchEmbedCase{3, 4, 8, 2, 64},
                                         PatchEmbedCase{1, 4, 16, 4, 96}, PatchEmbedCase{2, 4, 64, 8, 72},
                                         PatchEmbedCase{2, 4, 64, 2, 1152},
                                         PatchEmbedCase{2, 4, 10, 2, 200}),  // 25 tokens: a partial block
                         [](const auto& info) { return info.param.name(); });

// --- patch_embed fused with the first LayerNorm + modulation -------------------------------------

struct PatchLayerNormCase {
  PatchEmbedCase shape;
  DeviceDtype dtype;
  std::string name() const { return shape.name() + "_" + test::dtype_suffix(dtype); }
};

class CudaPatchEmbedLayerNorm : public testing::TestWithParam<PatchLayerNormCase> {};

TEST_P(CudaPatchEmbedLayerNorm, matches_reference_composition) {
  const PatchEmbedCase k = GetParam().shape;
  const DeviceDtype dtype = GetParam().dtype;
  const uint64_t seed = test::fresh_seed();
  const int T = (k.S / k.p) * (k.S / k.p), stride = 6 * k.D;
  const vector<float> x = test::random_normal(static_cast<size_t>(k.B) * k.C * k.S * k.S, seed);
  const vector<float> w = test::random_normal(static_cast<size_t>(k.D) * k.C * k.p * k.p, seed + 1, 0.2f);
  vector<float> bias = test::random_normal(k.D, seed + 2);
  for (float& v : bias) v += 3.0f;  // an offset mean, as in the LayerNorm tests
  const vector<float> pos = test::random_normal(static_cast<size_t>(T) * k.D, seed + 3);
  const vector<float> modulation = test::random_normal(static_cast<size_t>(k.B) * stride, seed + 4, 0.5f);
  vector<float> ref_x(static_cast<size_t>(k.B) * T * k.D), ref(ref_x.size());
  cpu::patch_embed(x.data(), w.data(), bias.data(), pos.data(), ref_x.data(), k.B, k.C, k.S, k.p, k.D);
  cpu::layernorm_modulate(ref_x.data(), modulation.data(), modulation.data() + k.D, stride, ref.data(), k.B, T, k.D,
                          1e-6f);

  DeviceTensor dx(x), dw(cpu::transpose_patch_weight(w, k.D)), db(bias), dpos(pos), dmod(modulation);
  DeviceTensor dres(ref.size()), dout(ref.size(), dtype), dres_alone(ref.size());
  dres.poison();
  dout.poison();
  cuda::patch_embed_layernorm_modulate(dx.f32(), dw.f32(), db.f32(), dpos.f32(), dres.f32(), dmod.f32(),
                                       dmod.f32() + k.D, stride, dout.data(), dtype, k.B, k.C, k.S, k.p, k.D, 1e-6f,
                                       nullptr);
  cuda::patch_embed(dx.f32(), dw.f32(), db.f32(), dpos.f32(), dres_alone.f32(), k.B, k.C, k.S, k.p, k.D, nullptr);
  size_t unwritten = 0;
  const vector<float> residual = dres.download(&unwritten);
  EXPECT_EQ(unwritten, 0u) << GetParam().name() << ": residual not fully written";
  EXPECT_TRUE(residual == dres_alone.download()) << GetParam().name() << ": the residual differs from patch_embed's";
  expect_close("patch_embed_layernorm/" + GetParam().name() + "/x", residual, unwritten, test::to_double(ref_x),
               test::kF32Bound, seed);
  const vector<float> out = dout.download(&unwritten);
  expect_close("patch_embed_layernorm/" + GetParam().name() + "/out", out, unwritten, test::to_double(ref),
               test::output_bound(dtype), seed);
}

INSTANTIATE_TEST_SUITE_P(
    patch_embed_layernorm, CudaPatchEmbedLayerNorm,
    testing::Values(PatchLayerNormCase{{2, 4, 32, 2, 1152}, DeviceDtype::f16},  // DiT-XL/2 at 256
                    PatchLayerNormCase{{2, 4, 32, 2, 1152}, DeviceDtype::bf16},
                    PatchLayerNormCase{{2, 4, 64, 2, 1152}, DeviceDtype::f32},  // at 512
                    PatchLayerNormCase{{3, 4, 16, 4, 384}, DeviceDtype::f16},   // DiT-S/4: C p^2 = 64
                    PatchLayerNormCase{{2, 4, 64, 8, 72}, DeviceDtype::f32},    // C p^2 = 256, one warp of three
                    PatchLayerNormCase{{2, 4, 10, 2, 200}, DeviceDtype::f16},   // 25 tokens: one a block, partial warps
                    PatchLayerNormCase{{2, 4, 14, 2, 1152}, DeviceDtype::bf16},  // 49 tokens: one a block, full rows
                    PatchLayerNormCase{{1, 4, 8, 2, 1500}, DeviceDtype::f32},    // D > 1152: the two kernels
                    PatchLayerNormCase{{2, 3, 8, 1, 64}, DeviceDtype::f16}),     // C p^2 = 3: the two kernels
    [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
