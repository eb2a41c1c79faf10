// Every CUDA kernel (kernels/*.cu) and the cuBLASLt linear layer against the CPU reference in
// kernels/*.cpp, table-driven: each case is named after its parameters
// (`attention/CudaAttention.matches_reference/b2_h16_n256_d72_fp16`), runs on fresh random
// inputs (DIT_TEST_SEED replays a failure), poisons its outputs first and checks every element
// was written. Inputs of 16-bit cases are rounded to that dtype before the reference sees them,
// so the bound measures the kernel, not the input rounding. Each case prints its error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/attention_flash.h"
#include "kernels/class_embed.h"
#include "kernels/gated_residual.h"
#include "kernels/guidance.h"
#include "kernels/layernorm_modulate.h"
#include "kernels/linear.h"
#include "kernels/noise.h"
#include "kernels/patch_embed.h"
#include "kernels/residual_layernorm.h"
#include "kernels/sampler_step.h"
#include "kernels/timestep_embed.h"
#include "kernels/unpatchify.h"
#include "model/cuda/cublaslt_gemm.h"
#include "model/cuda/gemm_plan.h"
#include "model/sampler.h"
#include "model/schedule.h"
#include "tests/cuda/device_tensor.h"
#include "tests/cuda/expect_close.h"

namespace dit {
namespace {

using cuda::DeviceDtype;
using std::vector;
using test::DeviceTensor;
using test::expect_close;

// Normwise bounds per output dtype: float32 storage with float32 accumulation against a
// float64 reference; one fp16 rounding is 4.9e-4 relative, one bf16 rounding 3.9e-3.
constexpr double kF32Bound = 1e-5;
constexpr double kF16Bound = 2e-3;
constexpr double kBF16Bound = 1e-2;
constexpr double kElementwiseF32Bound = 1e-6;  // one float32 rounding of each element

double bound_for(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::f32: return kF32Bound;
    case DeviceDtype::f16: return kF16Bound;
    case DeviceDtype::bf16: return kBF16Bound;
  }
  return 0;
}

// --- patch_embed --------------------------------------------------------------------------------

struct PatchEmbedCase {
  int B, C, S, p, D;
  std::string name() const {
    return "b" + std::to_string(B) + "_c" + std::to_string(C) + "_s" + std::to_string(S) + "_p" +
           std::to_string(p) + "_d" + std::to_string(D);
  }
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
  expect_close("patch_embed/" + k.name(), out, unwritten, test::to_double(ref), kF32Bound, seed);
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
               kF32Bound, seed);
  const vector<float> out = dout.download(&unwritten);
  expect_close("patch_embed_layernorm/" + GetParam().name() + "/out", out, unwritten, test::to_double(ref),
               bound_for(dtype), seed);
}

INSTANTIATE_TEST_SUITE_P(
    patch_embed_layernorm, CudaPatchEmbedLayerNorm,
    testing::Values(PatchLayerNormCase{{2, 4, 32, 2, 1152}, DeviceDtype::f16},  // DiT-XL/2 at 256
                    PatchLayerNormCase{{2, 4, 32, 2, 1152}, DeviceDtype::bf16},
                    PatchLayerNormCase{{2, 4, 64, 2, 1152}, DeviceDtype::f32},  // at 512
                    PatchLayerNormCase{{3, 4, 16, 4, 384}, DeviceDtype::f16},   // DiT-S/4: C p^2 = 64
                    PatchLayerNormCase{{2, 4, 64, 8, 72}, DeviceDtype::f32},    // C p^2 = 256, one warp of three
                    PatchLayerNormCase{{2, 4, 10, 2, 200}, DeviceDtype::f16},   // 25 tokens: one a block, partial warps
                    PatchLayerNormCase{{2, 4, 14, 2, 1152}, DeviceDtype::bf16}, // 49 tokens: one a block, full rows
                    PatchLayerNormCase{{1, 4, 8, 2, 1500}, DeviceDtype::f32},   // D > 1152: the two kernels
                    PatchLayerNormCase{{2, 3, 8, 1, 64}, DeviceDtype::f16}),    // C p^2 = 3: the two kernels
    [](const auto& info) { return info.param.name(); });

// --- timestep_embed -----------------------------------------------------------------------------

class CudaTimestepEmbed : public testing::TestWithParam<int> {};

TEST_P(CudaTimestepEmbed, matches_reference) {
  const int dim = GetParam();
  const vector<int64_t> t = {0, 1, 7, 250, 421, 999, 500, 998};
  const int B = static_cast<int>(t.size());
  vector<float> ref(static_cast<size_t>(B) * dim);
  cpu::timestep_embed(t.data(), ref.data(), B, dim, 10000.0f);
  test::DeviceArray<int64_t> dt(t);
  DeviceTensor dout(ref.size());
  dout.poison();
  cuda::timestep_embed(dt.data(), dout.f32(), B, dim, 10000.0f, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  expect_close("timestep_embed/dim" + std::to_string(dim), out, unwritten, test::to_double(ref),
               kElementwiseF32Bound, 0);
}

INSTANTIATE_TEST_SUITE_P(timestep_embed, CudaTimestepEmbed, testing::Values(256, 255, 64),
                         [](const auto& info) { return "dim" + std::to_string(info.param); });

// --- layernorm_modulate -------------------------------------------------------------------------

struct LayerNormCase {
  int B, T, D;
  DeviceDtype dtype;
  std::string name() const {
    return "b" + std::to_string(B) + "_t" + std::to_string(T) + "_d" + std::to_string(D) + "_" +
           test::dtype_suffix(dtype);
  }
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
  cuda::layernorm_modulate(dx.f32(), dmod.f32() + 3 * k.D, dmod.f32() + 4 * k.D, stride, dout.data(), k.dtype, k.B,
                           k.T, k.D, 1e-6f, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  expect_close("layernorm_modulate/" + k.name(), out, unwritten, test::to_double(ref), bound_for(k.dtype), seed);
}

INSTANTIATE_TEST_SUITE_P(layernorm_modulate, CudaLayerNormModulate,
                         testing::Values(LayerNormCase{2, 256, 1152, DeviceDtype::f32},
                                         LayerNormCase{2, 256, 1152, DeviceDtype::f16},
                                         LayerNormCase{2, 256, 1152, DeviceDtype::bf16},
                                         LayerNormCase{3, 16, 144, DeviceDtype::f32},
                                         LayerNormCase{1, 1024, 1152, DeviceDtype::bf16},
                                         LayerNormCase{3, 7, 33, DeviceDtype::f32},
                                         LayerNormCase{2, 5, 1500, DeviceDtype::f32}),  // re-read form
                         [](const auto& info) { return info.param.name(); });

// --- gated_residual -----------------------------------------------------------------------------

struct ResidualCase {
  int B, T, D;
  std::string name() const { return "b" + std::to_string(B) + "_t" + std::to_string(T) + "_d" + std::to_string(D); }
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
  expect_close("gated_residual/" + k.name(), out, unchanged, test::to_double(ref), kElementwiseF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(gated_residual, CudaGatedResidual,
                         testing::Values(ResidualCase{2, 256, 1152}, ResidualCase{3, 16, 64}, ResidualCase{1, 5, 7}),
                         [](const auto& info) { return info.param.name(); });

// --- gated residual fused with the next LayerNorm + modulation ----------------------------------

class CudaResidualLayerNorm : public testing::TestWithParam<LayerNormCase> {};

TEST_P(CudaResidualLayerNorm, matches_reference_composition) {
  const LayerNormCase k = GetParam();
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
  expect_close("residual_layernorm/" + k.name() + "/out", out, unwritten, test::to_double(ref), bound_for(k.dtype),
               seed);
  expect_close("residual_layernorm/" + k.name() + "/x", dx.download(), 0, test::to_double(ref_x),
               kElementwiseF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(residual_layernorm, CudaResidualLayerNorm,
                         testing::Values(LayerNormCase{2, 256, 1152, DeviceDtype::f32},
                                         LayerNormCase{2, 256, 1152, DeviceDtype::f16},
                                         LayerNormCase{2, 1024, 1152, DeviceDtype::bf16},
                                         LayerNormCase{2, 9, 64, DeviceDtype::f16},     // float4, 2 warps idle
                                         LayerNormCase{2, 13, 1000, DeviceDtype::bf16},  // float4, partial warps
                                         LayerNormCase{3, 7, 33, DeviceDtype::f32},      // scalar block form
                                         LayerNormCase{1, 6, 1150, DeviceDtype::f32},    // scalar, D % 4 != 0
                                         LayerNormCase{2, 5, 1500, DeviceDtype::f16}),  // re-read form
                         [](const auto& info) { return info.param.name(); });

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
  const double bound = k.dtype == DeviceDtype::f32 ? kElementwiseF32Bound : bound_for(k.dtype);
  expect_close("activations/" + k.name(), out, unwritten, test::to_double(ref), bound, seed);
}

TEST(CudaActivationInPlace, gelu_f32_in_place_matches_reference) {
  const uint64_t seed = test::fresh_seed();
  const vector<float> x = test::random_normal(4099, seed, 3.0f);
  vector<float> ref(x.size());
  cpu::gelu_tanh(x.data(), ref.data(), static_cast<int64_t>(x.size()));
  DeviceTensor dx(x);
  cuda::gelu_tanh(dx.data(), dx.data(), DeviceDtype::f32, static_cast<int64_t>(x.size()), nullptr);
  expect_close("activations/gelu_tanh_in_place", dx.download(), 0, test::to_double(ref), kElementwiseF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(activations, CudaActivation,
                         testing::Values(ActivationCase{false, 100003, DeviceDtype::f32},
                                         ActivationCase{false, 2304, DeviceDtype::f16},
                                         ActivationCase{false, 2304, DeviceDtype::bf16},
                                         ActivationCase{true, 100003, DeviceDtype::f32},
                                         ActivationCase{true, 100003, DeviceDtype::f16},
                                         ActivationCase{true, 100003, DeviceDtype::bf16}),
                         [](const auto& info) { return info.param.name(); });

// --- attention (naive) --------------------------------------------------------------------------

struct AttentionCase {
  int B, H, N, hd;
  DeviceDtype dtype;
  std::string name() const {
    return "b" + std::to_string(B) + "_h" + std::to_string(H) + "_n" + std::to_string(N) + "_d" + std::to_string(hd) +
           "_" + test::dtype_suffix(dtype);
  }
};

class CudaAttention : public testing::TestWithParam<AttentionCase> {};

TEST_P(CudaAttention, matches_reference) {
  const AttentionCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const size_t qkv_size = static_cast<size_t>(k.B) * k.N * 3 * k.H * k.hd;
  // scale 1.5: softmax rows far from uniform, so a wrong key or value shows
  const vector<float> qkv = test::round_to(test::random_normal(qkv_size, seed, 1.5f), k.dtype);
  vector<float> ref(static_cast<size_t>(k.B) * k.N * k.H * k.hd);
  cpu::attention(qkv.data(), ref.data(), k.B, k.N, k.H, k.hd);
  DeviceTensor dqkv(qkv, k.dtype), dout(ref.size(), k.dtype);
  dout.poison();
  cuda::attention_naive(dqkv.data(), dout.data(), k.dtype, k.B, k.N, k.H, k.hd, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  expect_close("attention/" + k.name(), out, unwritten, test::to_double(ref), bound_for(k.dtype), seed);
}

INSTANTIATE_TEST_SUITE_P(attention, CudaAttention,
                         testing::Values(AttentionCase{2, 16, 256, 72, DeviceDtype::f32},
                                         AttentionCase{2, 16, 256, 72, DeviceDtype::f16},
                                         AttentionCase{2, 16, 256, 72, DeviceDtype::bf16},
                                         AttentionCase{2, 6, 256, 64, DeviceDtype::f32},
                                         AttentionCase{2, 6, 256, 64, DeviceDtype::f16},
                                         AttentionCase{1, 4, 16, 16, DeviceDtype::f32},
                                         AttentionCase{2, 2, 16, 72, DeviceDtype::f32},
                                         AttentionCase{1, 3, 100, 40, DeviceDtype::f32},
                                         AttentionCase{1, 16, 1024, 72, DeviceDtype::f16}),
                         [](const auto& info) { return info.param.name(); });

// --- attention (flash, tensor cores) ------------------------------------------------------------

class CudaAttentionFlash : public testing::TestWithParam<AttentionCase> {};

// Every form and the default dispatch, against the CPU reference (per-dtype bound) and against
// the naive kernel on the same device inputs (P is rounded to the dtype before P V, so the two
// differ by about one such rounding); the forms differ only in how rows are grouped into warps,
// so their outputs must be bit-identical.
TEST_P(CudaAttentionFlash, matches_reference_and_naive_kernel) {
  const AttentionCase k = GetParam();
  ASSERT_TRUE(cuda::attention_flash_supported(k.dtype, k.hd));
  const uint64_t seed = test::fresh_seed();
  const size_t qkv_size = static_cast<size_t>(k.B) * k.N * 3 * k.H * k.hd;
  const vector<float> qkv = test::round_to(test::random_normal(qkv_size, seed, 1.5f), k.dtype);
  vector<float> ref(static_cast<size_t>(k.B) * k.N * k.H * k.hd);
  cpu::attention(qkv.data(), ref.data(), k.B, k.N, k.H, k.hd);
  DeviceTensor dqkv(qkv, k.dtype), dnaive(ref.size(), k.dtype);
  dnaive.poison();
  cuda::attention_naive(dqkv.data(), dnaive.data(), k.dtype, k.B, k.N, k.H, k.hd, nullptr);
  size_t naive_unwritten = 0;
  const vector<float> naive = dnaive.download(&naive_unwritten);
  ASSERT_EQ(naive_unwritten, 0u);

  const vector<cuda::FlashForm> forms = cuda::attention_flash_forms();
  ASSERT_EQ(forms.size(), 2u);
  vector<float> first_form;
  for (int f = -1; f < static_cast<int>(forms.size()); ++f) {  // -1: the default dispatch
    const std::string form = f < 0 ? "default" : cuda::flash_form_name(forms[f]);
    SCOPED_TRACE(form);
    DeviceTensor dflash(ref.size(), k.dtype);
    dflash.poison();
    if (f < 0)
      cuda::attention_flash(dqkv.data(), dflash.data(), k.dtype, k.B, k.N, k.H, k.hd, nullptr);
    else
      cuda::attention_flash(dqkv.data(), dflash.data(), k.dtype, k.B, k.N, k.H, k.hd, forms[f], nullptr);
    size_t unwritten = 0;
    const vector<float> flash = dflash.download(&unwritten);
    const std::string name = k.name() + "/" + form;
    expect_close("attention_flash/" + name, flash, unwritten, test::to_double(ref), bound_for(k.dtype), seed);
    expect_close("attention_flash_vs_naive/" + name, flash, 0, test::to_double(naive), bound_for(k.dtype), seed);
    if (f == 0) first_form = flash;
    if (f > 0) {
      size_t differing = 0;
      for (size_t i = 0; i < flash.size(); ++i) differing += flash[i] != first_form[i];
      EXPECT_EQ(differing, 0u) << "outputs of " << form << " differing from " << cuda::flash_form_name(forms[0]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(attention_flash, CudaAttentionFlash,
                         testing::Values(AttentionCase{2, 16, 256, 72, DeviceDtype::f16},
                                         AttentionCase{2, 16, 256, 72, DeviceDtype::bf16},
                                         AttentionCase{2, 16, 1024, 72, DeviceDtype::f16},
                                         AttentionCase{2, 12, 256, 64, DeviceDtype::f16},
                                         AttentionCase{2, 12, 256, 64, DeviceDtype::bf16},
                                         AttentionCase{1, 2, 100, 72, DeviceDtype::f16},
                                         AttentionCase{1, 3, 17, 64, DeviceDtype::bf16},
                                         AttentionCase{3, 1, 1, 72, DeviceDtype::f16},
                                         AttentionCase{1, 2, 130, 64, DeviceDtype::f16},
                                         AttentionCase{2, 3, 200, 72, DeviceDtype::f16},
                                         AttentionCase{1, 2, 65, 72, DeviceDtype::bf16}),
                         [](const auto& info) { return info.param.name(); });

TEST(CudaAttentionFlashChecks, rejects_unsupported_shapes) {
  DeviceTensor qkv(3 * 16 * 2 * 40, DeviceDtype::f16), out(16 * 2 * 40, DeviceDtype::f16);
  EXPECT_FALSE(cuda::attention_flash_supported(DeviceDtype::f32, 72));
  EXPECT_FALSE(cuda::attention_flash_supported(DeviceDtype::f16, 40));
  EXPECT_THROW(cuda::attention_flash(qkv.data(), out.data(), DeviceDtype::f16, 1, 16, 2, 40, nullptr), Error);
}

TEST(CudaAttentionFlashChecks, forms_and_their_choice) {
  std::string names;
  for (const cuda::FlashForm& form : cuda::attention_flash_forms()) names += cuda::flash_form_name(form) + " ";
  EXPECT_EQ(names, "rows64 rows128 ");
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  // Two row tiles once their 128-row blocks fill every SM, one below that.
  EXPECT_EQ(cuda::attention_flash_default_form(1, 256, 1).row_tiles, 1);
  EXPECT_EQ(cuda::attention_flash_default_form(sms, 128, 1).row_tiles, 2);
  EXPECT_EQ(cuda::attention_flash_default_form(sms - 1, 128, 1).row_tiles, 1);
  EXPECT_EQ(cuda::attention_flash_default_form(1, 128 * sms, 1).row_tiles, 2);
  EXPECT_EQ(cuda::attention_flash_default_form(64, 256, 16).row_tiles, 2);
  DeviceTensor qkv(3 * 100 * 72, DeviceDtype::f16), out(100 * 72, DeviceDtype::f16);
  EXPECT_THROW(cuda::attention_flash(qkv.data(), out.data(), DeviceDtype::f16, 1, 100, 1, 72, {3}, nullptr), Error);
  EXPECT_THROW(cuda::attention_flash(qkv.data(), out.data(), DeviceDtype::f16, 1, 100, 1, 72, {0}, nullptr), Error);
}

// --- unpatchify ---------------------------------------------------------------------------------

struct UnpatchifyCase {
  int B, g, p, C;
  std::string name() const {
    return "b" + std::to_string(B) + "_g" + std::to_string(g) + "_p" + std::to_string(p) + "_c" + std::to_string(C);
  }
};

class CudaUnpatchify : public testing::TestWithParam<UnpatchifyCase> {};

TEST_P(CudaUnpatchify, equals_reference) {
  const UnpatchifyCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> tokens =
      test::random_normal(static_cast<size_t>(k.B) * k.g * k.g * k.p * k.p * k.C, seed);
  vector<float> ref(tokens.size());
  cpu::unpatchify(tokens.data(), ref.data(), k.B, k.g, k.p, k.C);
  DeviceTensor dtokens(tokens), dout(ref.size());
  dout.poison();
  cuda::unpatchify(dtokens.f32(), dout.f32(), k.B, k.g, k.p, k.C, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  expect_close("unpatchify/" + k.name(), out, unwritten, test::to_double(ref), 0.0, seed);  // a permutation
}

INSTANTIATE_TEST_SUITE_P(unpatchify, CudaUnpatchify,
                         testing::Values(UnpatchifyCase{2, 16, 2, 8}, UnpatchifyCase{1, 4, 4, 8},
                                         UnpatchifyCase{3, 32, 2, 8}, UnpatchifyCase{2, 8, 8, 4}),
                         [](const auto& info) { return info.param.name(); });

// --- guidance -----------------------------------------------------------------------------------

struct GuidanceCase {
  int B, C, HW;
  float scale;
  std::string name() const {
    return "b" + std::to_string(B) + "_c" + std::to_string(C) + "_hw" + std::to_string(HW) + "_s" +
           std::to_string(static_cast<int>(scale * 10));
  }
};

class CudaGuidance : public testing::TestWithParam<GuidanceCase> {};

TEST_P(CudaGuidance, equals_reference) {
  const GuidanceCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> out0 = test::random_normal(static_cast<size_t>(2) * k.B * k.C * k.HW, seed);
  vector<float> ref = out0;
  cpu::guidance_combine(ref.data(), k.B, k.C, k.HW, k.scale, 3);
  DeviceTensor d(out0);
  cuda::guidance_combine(d.f32(), k.B, k.C, k.HW, k.scale, 3, nullptr);
  // float64 arithmetic rounded once on both sides: equal bits expected
  expect_close("guidance/" + k.name(), d.download(), 0, test::to_double(ref), 0.0, seed);
}

INSTANTIATE_TEST_SUITE_P(guidance, CudaGuidance,
                         testing::Values(GuidanceCase{2, 8, 1024, 4.0f}, GuidanceCase{1, 8, 64, 1.5f},
                                         GuidanceCase{3, 4, 4096, 7.5f}),
                         [](const auto& info) { return info.param.name(); });

// --- sampler steps ------------------------------------------------------------------------------

struct StepCase {
  bool ddim;
  int index;  // respaced index of a 250-step schedule; 0 is the last step
  float eta;
  std::string name() const {
    return std::string(ddim ? "ddim" : "ddpm") + "_index" + std::to_string(index) + "_eta" +
           std::to_string(static_cast<int>(eta * 10));
  }
};

class CudaSamplerStep : public testing::TestWithParam<StepCase> {};

TEST_P(CudaSamplerStep, matches_reference) {
  const StepCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int N = 4, C = 4, HW = 32 * 32;
  const StepCoefficients coefficients = step_coefficients(make_schedule(250), k.index);
  const vector<float> x = test::random_normal(static_cast<size_t>(N) * C * HW, seed);
  vector<float> model_out = test::random_normal(static_cast<size_t>(N) * 2 * C * HW, seed + 1);
  for (int n = 0; n < N; ++n)  // v in [-1, 1], as the learned-range variance expects
    for (size_t i = 0; i < static_cast<size_t>(C) * HW; ++i) {
      float& v = model_out[(static_cast<size_t>(n) * 2 * C + C) * HW + i];
      v = std::tanh(v);
    }
  const vector<float> noise = test::random_normal(x.size(), seed + 2);
  vector<float> ref = x;
  if (k.ddim)
    cpu::ddim_step(ref.data(), model_out.data(), noise.data(), N, C, HW, coefficients, k.eta);
  else
    cpu::ddpm_step(ref.data(), model_out.data(), noise.data(), N, C, HW, coefficients);
  DeviceTensor dx(x), dmodel(model_out), dnoise(noise);
  if (k.ddim)
    cuda::ddim_step(dx.f32(), dmodel.f32(), dnoise.f32(), N, C, HW, coefficients, k.eta, nullptr);
  else
    cuda::ddpm_step(dx.f32(), dmodel.f32(), dnoise.f32(), N, C, HW, coefficients, nullptr);
  expect_close("sampler_step/" + k.name(), dx.download(), 0, test::to_double(ref), kElementwiseF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(sampler_step, CudaSamplerStep,
                         testing::Values(StepCase{false, 249, 0}, StepCase{false, 120, 0}, StepCase{false, 0, 0},
                                         StepCase{true, 249, 0}, StepCase{true, 120, 0.5f}, StepCase{true, 0, 1.0f},
                                         StepCase{true, 3, 1.0f}),
                         [](const auto& info) { return info.param.name(); });

// --- loop_step: one table-driven step of the sampling loop ---------------------------------------
// Two consecutive launches on a two-entry table against the kernels it replaces, run in
// sequence on the device (equal bits expected: the same device arithmetic), and against the
// CPU reference of the same sequence; the token-layout cases give loop_step the model output
// before unpatchify and the kernels it replaces the same values after it.

struct LoopStepCase {
  bool ddim, guided;
  int images, C, HW;  // C * HW % 4 != 0 exercises a partial Philox group
  int index;          // respaced index of the first entry in a 250-step schedule; the second is index - 1
  float eta;
  int patch = 0;      // > 0: loop_step reads the model output in token layout (HW a square)
  std::string name() const {
    return std::string(ddim ? "ddim" : "ddpm") + (guided ? "_cfg" : "") + "_n" + std::to_string(images) + "_c" +
           std::to_string(C) + "_hw" + std::to_string(HW) + "_index" + std::to_string(index) + "_eta" +
           std::to_string(static_cast<int>(eta * 10)) + (patch > 0 ? "_tokens_p" + std::to_string(patch) : "");
  }
};

// [rows, C, S, S] -> [rows, (S/p)^2, p, p, C]: the inverse of unpatchify, on the host.
vector<float> patchify(const vector<float>& image, int rows, int C, int S, int p) {
  vector<float> tokens(image.size());
  const int g = S / p;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < C; ++c)
      for (int y = 0; y < S; ++y)
        for (int x = 0; x < S; ++x) {
          const size_t token = static_cast<size_t>(r) * g * g + static_cast<size_t>(y / p) * g + x / p;
          tokens[((token * p + y % p) * p + x % p) * C + c] = image[((static_cast<size_t>(r) * C + c) * S + y) * S + x];
        }
  return tokens;
}

class CudaLoopStep : public testing::TestWithParam<LoopStepCase> {};

TEST_P(CudaLoopStep, equals_the_kernels_it_replaces) {
  const LoopStepCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int N = k.images, rows = k.guided ? 2 * N : N, C = k.C, HW = k.HW;
  const size_t per_image = static_cast<size_t>(C) * HW, row_floats = 12;  // modulation floats of one step
  const int guided_channels = std::min(3, 2 * C);
  const float scale = 4.0f;
  const DiffusionSchedule schedule = make_schedule(250);
  vector<uint64_t> seeds(N);
  for (int n = 0; n < N; ++n) seeds[n] = seed + 17 * static_cast<uint64_t>(n);

  vector<cuda::LoopStep> table(2);
  for (int s = 0; s < 2; ++s) {
    cuda::LoopStep& e = table[s];
    e.k = step_coefficients(schedule, k.index - s);
    e.use_ddim = k.ddim;
    e.ddim = ddim_scalars(e.k, k.eta);
    e.add_noise = k.ddim ? e.ddim.add_noise : !e.k.last_step;
    e.noise_slot = noise_slot_for_step(249 - k.index + s);
    e.guidance_scale = scale;
    e.next_modulation = s == 0 ? static_cast<int64_t>(row_floats) : -1;  // then "the host copies"
  }
  const vector<float> chunk = test::random_normal(3 * row_floats, seed + 5);
  const vector<float> modulation0 = test::random_normal(row_floats, seed + 6);

  const vector<float> x = test::random_normal(static_cast<size_t>(N) * per_image, seed);
  DeviceTensor dx(x), dx_in(static_cast<size_t>(rows) * per_image), dout(static_cast<size_t>(rows) * 2 * per_image);
  DeviceTensor dchunk(chunk), dmodulation(modulation0);
  DeviceTensor ref_x(x), ref_out(static_cast<size_t>(rows) * 2 * per_image);
  DeviceTensor ref_noise(static_cast<size_t>(N) * per_image);
  const test::DeviceArray<uint64_t> dseeds(seeds);
  const test::DeviceArray<uint32_t> dstreams(vector<uint32_t>(N, 0));
  const test::DeviceArray<cuda::LoopStep> dtable(table);
  const test::DeviceArray<int> dstep(vector<int>{0});
  const test::DeviceArray<unsigned> ddone(vector<unsigned>{0});
  cuda::LoopStepArgs args;
  args.steps = dtable.data();
  args.step = dstep.data();
  args.blocks_done = ddone.data();
  args.x_state = dx.f32();
  args.x_in = dx_in.f32();
  args.model_out = dout.f32();
  args.seeds = dseeds.data();
  args.modulation_chunk = dchunk.f32();
  args.modulation = dmodulation.f32();
  args.modulation_floats = static_cast<int64_t>(row_floats);
  args.images = N;
  args.C = C;
  args.HW = HW;
  args.guided = k.guided;
  args.guided_channels = guided_channels;
  const int width = static_cast<int>(std::lround(std::sqrt(static_cast<double>(HW))));
  if (k.patch > 0) {
    ASSERT_EQ(width * width, HW) << "a token-layout case needs a square latent";
    args.patch = k.patch;
    args.width = width;
  }

  vector<float> cpu_x = x;
  for (int s = 0; s < 2; ++s) {
    const std::string name = "loop_step/" + k.name() + "/entry" + std::to_string(s);
    vector<float> model_out = test::random_normal(static_cast<size_t>(rows) * 2 * per_image, seed + 10 + s);
    for (int r = 0; r < rows; ++r)  // v in [-1, 1], as the learned-range variance expects
      for (size_t i = 0; i < per_image; ++i) {
        float& v = model_out[(static_cast<size_t>(r) * 2 + 1) * per_image + i];
        v = std::tanh(v);
      }
    dout.upload(k.patch > 0 ? patchify(model_out, rows, 2 * C, width, k.patch) : model_out);
    dx_in.poison();
    cuda::loop_step(args, nullptr);

    // the sequence it replaces, on the device
    const cuda::LoopStep& e = table[s];
    ref_out.upload(model_out);
    if (k.guided) cuda::guidance_combine(ref_out.f32(), N, 2 * C, HW, scale, guided_channels, nullptr);
    if (e.add_noise)
      cuda::gaussian_noise_rows(dseeds.data(), dstreams.data(), e.noise_slot, ref_noise.f32(), N,
                                static_cast<int64_t>(per_image), nullptr);
    if (k.ddim)
      cuda::ddim_step(ref_x.f32(), ref_out.f32(), ref_noise.f32(), N, C, HW, e.k, k.eta, nullptr);
    else
      cuda::ddpm_step(ref_x.f32(), ref_out.f32(), ref_noise.f32(), N, C, HW, e.k, nullptr);
    const vector<float> expected = ref_x.download();
    EXPECT_TRUE(expected == dx.download()) << name << ": x_state differs from the composed kernels (seed " << seed
                                           << ")";
    size_t unwritten = 0;
    const vector<float> x_in = dx_in.download(&unwritten);
    EXPECT_EQ(unwritten, 0u) << name << ": x_in not fully written";
    for (int half = 0; half < rows / N; ++half)
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), x_in.begin() + half * expected.size()))
          << name << ": x_in half " << half << " is not x_state";

    // the CPU reference of the same sequence
    if (k.guided) cpu::guidance_combine(model_out.data(), N, 2 * C, HW, scale, guided_channels);
    vector<float> noise(static_cast<size_t>(N) * per_image);
    for (int n = 0; n < N; ++n)
      cpu::gaussian_noise(seeds[n], e.noise_slot, 0, noise.data() + n * per_image, static_cast<int64_t>(per_image));
    if (k.ddim)
      cpu::ddim_step(cpu_x.data(), model_out.data(), noise.data(), N, C, HW, e.k, k.eta);
    else
      cpu::ddpm_step(cpu_x.data(), model_out.data(), noise.data(), N, C, HW, e.k);
    expect_close(name, dx.download(), 0, test::to_double(cpu_x), kElementwiseF32Bound, seed);

    // entry 0 names the chunk's second row block; entry 1 leaves the modulations as they are
    const vector<float> block(chunk.begin() + row_floats, chunk.begin() + 2 * row_floats);
    EXPECT_TRUE(dmodulation.download() == block) << name << ": the modulations are not the chunk's second block";
  }
  int step = -1;
  unsigned done = 1;
  ASSERT_EQ(cudaMemcpy(&step, dstep.data(), sizeof step, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&done, ddone.data(), sizeof done, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(step, 2) << "two launches advance the step twice";
  EXPECT_EQ(done, 0u) << "the block count is reset for the next launch";
}

INSTANTIATE_TEST_SUITE_P(loop_step, CudaLoopStep,
                         testing::Values(LoopStepCase{false, true, 2, 4, 1024, 249, 0},
                                         LoopStepCase{false, false, 3, 4, 64, 120, 0},
                                         LoopStepCase{false, true, 1, 3, 5, 1, 0},  // ends on the last step
                                         LoopStepCase{true, true, 2, 4, 256, 200, 0},
                                         LoopStepCase{true, true, 2, 4, 256, 120, 1.0f},
                                         LoopStepCase{true, false, 3, 3, 7, 1, 0.5f},
                                         LoopStepCase{false, true, 2, 4, 1024, 249, 0, 2},  // DiT-XL/2 at 256
                                         LoopStepCase{false, false, 1, 4, 64, 1, 0, 4},
                                         LoopStepCase{true, true, 2, 4, 256, 120, 1.0f, 2}),
                         [](const auto& info) { return info.param.name(); });

// --- class_embed_add (its reference is the lookup itself) ---------------------------------------

TEST(class_embed, adds_the_label_row) {
  const uint64_t seed = test::fresh_seed();
  const int B = 5, D = 1152, rows = 1001;
  const vector<int64_t> labels = {0, 7, 1000, 999, 3};
  const vector<float> t_emb = test::random_normal(static_cast<size_t>(B) * D, seed);
  const vector<float> table = test::random_normal(static_cast<size_t>(rows) * D, seed + 1);
  vector<double> ref(t_emb.size());
  for (int b = 0; b < B; ++b)
    for (int d = 0; d < D; ++d)
      ref[static_cast<size_t>(b) * D + d] =
          static_cast<float>(t_emb[static_cast<size_t>(b) * D + d] + table[static_cast<size_t>(labels[b]) * D + d]);
  DeviceTensor dt(t_emb), dtable(table), dc(t_emb.size());
  test::DeviceArray<int64_t> dlabels(labels);
  test::DeviceArray<int> bad(vector<int>{0});
  dc.poison();
  cuda::class_embed_add(dt.f32(), dtable.f32(), dlabels.data(), dc.f32(), B, D, rows, bad.data(), nullptr);
  size_t unwritten = 0;
  const vector<float> out = dc.download(&unwritten);
  expect_close("class_embed/b5_d1152", out, unwritten, ref, 0.0, seed);
  int bad_labels = -1;
  DIT_CUDA_CHECK(cudaMemcpy(&bad_labels, bad.data(), sizeof bad_labels, cudaMemcpyDeviceToHost));
  EXPECT_EQ(bad_labels, 0);
}

// --- noise: bit for bit -------------------------------------------------------------------------

struct NoiseCase {
  uint64_t seed;
  uint32_t slot, stream;
  int64_t n;
  std::string name() const {
    return "seed" + std::to_string(seed) + "_slot" + std::to_string(slot) + "_stream" + std::to_string(stream) +
           "_n" + std::to_string(n);
  }
};

class CudaNoise : public testing::TestWithParam<NoiseCase> {};

void expect_same_bits(const std::string& name, const vector<float>& gpu, const vector<float>& cpu) {
  ASSERT_EQ(gpu.size(), cpu.size());
  const bool same = std::memcmp(gpu.data(), cpu.data(), gpu.size() * sizeof(float)) == 0;
  size_t differing = 0, first = gpu.size();
  for (size_t i = 0; i < gpu.size(); ++i)
    if (std::memcmp(&gpu[i], &cpu[i], sizeof(float)) != 0) {
      if (first == gpu.size()) first = i;
      ++differing;
    }
  std::printf("  %-44s %zu samples, %zu differ\n", name.c_str(), gpu.size(), differing);
  EXPECT_TRUE(same) << name << ": " << differing << " of " << gpu.size() << " samples differ; first at " << first
                    << ": gpu " << gpu[first] << " cpu " << cpu[first];
}

TEST_P(CudaNoise, equals_cpu_bit_for_bit) {
  const NoiseCase k = GetParam();
  vector<float> cpu_noise(static_cast<size_t>(k.n));
  cpu::gaussian_noise(k.seed, k.slot, k.stream, cpu_noise.data(), k.n);
  DeviceTensor d(cpu_noise.size());
  d.poison();
  cuda::gaussian_noise(k.seed, k.slot, k.stream, d.f32(), k.n, nullptr);
  size_t unwritten = 0;
  const vector<float> gpu_noise = d.download(&unwritten);
  EXPECT_EQ(unwritten, 0u);
  expect_same_bits("noise/" + k.name(), gpu_noise, cpu_noise);
}

// 1,048,579 + 4 * 4096 + 3 * 16387 + ... samples in all: over a million, several seeds, slots
// and streams, and lengths that are not multiples of 4.
INSTANTIATE_TEST_SUITE_P(noise, CudaNoise,
                         testing::Values(NoiseCase{0, 0, 0, 1048579}, NoiseCase{1, 1, 0, 4096},
                                         NoiseCase{1, 1, 1, 4096}, NoiseCase{0xDEADBEEFCAFEBABEull, 250, 0, 16387},
                                         NoiseCase{0xDEADBEEFCAFEBABEull, 250, 1, 16387},
                                         NoiseCase{42, 0, 0, 4096}, NoiseCase{42, 1000, 1, 16387},
                                         NoiseCase{0xFFFFFFFFFFFFFFFFull, 7, 0, 5}),
                         [](const auto& info) { return info.param.name(); });

TEST(noise_rows, each_row_equals_its_own_image_noise) {
  const uint64_t base = test::fresh_seed();
  const int rows = 6;
  const int64_t n = 4 * 32 * 32;
  const vector<uint64_t> seeds = {base, base + 1, base + 2, base, base + 1, base + 2};
  const vector<uint32_t> streams = {0, 0, 0, 1, 1, 1};
  const uint32_t slot = noise_slot_for_step(17);
  test::DeviceArray<uint64_t> dseeds(seeds);
  test::DeviceArray<uint32_t> dstreams(streams);
  DeviceTensor d(static_cast<size_t>(rows) * n);
  d.poison();
  cuda::gaussian_noise_rows(dseeds.data(), dstreams.data(), slot, d.f32(), rows, n, nullptr);
  size_t unwritten = 0;
  const vector<float> all = d.download(&unwritten);
  EXPECT_EQ(unwritten, 0u);
  for (int r = 0; r < rows; ++r) {
    vector<float> cpu_noise(static_cast<size_t>(n));
    cpu::gaussian_noise(seeds[r], slot, streams[r], cpu_noise.data(), n);
    const vector<float> row(all.begin() + static_cast<size_t>(r) * n, all.begin() + static_cast<size_t>(r + 1) * n);
    expect_same_bits("noise_rows/row" + std::to_string(r), row, cpu_noise);
  }
}

// --- cuBLASLt linear ----------------------------------------------------------------------------

struct LinearCase {
  int M, N, K;
  DeviceDtype operands, output;
  cuda::GemmCompute compute;
  cuda::GemmEpilogue epilogue;
  std::string name() const {
    const char* epi = epilogue == cuda::GemmEpilogue::none ? "nobias"
                      : epilogue == cuda::GemmEpilogue::bias ? "bias"
                                                             : "gelu";
    return "m" + std::to_string(M) + "_n" + std::to_string(N) + "_k" + std::to_string(K) + "_" +
           test::dtype_suffix(operands) + "_to_" + test::dtype_suffix(output) +
           (compute == cuda::GemmCompute::tf32 ? "_tf32_" : "_") + epi;
  }
};

class CudaLinear : public testing::TestWithParam<LinearCase> {};

TEST_P(CudaLinear, matches_reference) {
  const LinearCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> in =
      test::round_to(test::random_normal(static_cast<size_t>(k.M) * k.K, seed), k.operands);
  const vector<float> weight = test::round_to(
      test::random_normal(static_cast<size_t>(k.N) * k.K, seed + 1, 1.0f / std::sqrt(static_cast<float>(k.K))),
      k.operands);
  const vector<float> bias = test::round_to(test::random_normal(k.N, seed + 2), k.output);
  vector<float> ref(static_cast<size_t>(k.M) * k.N);
  cpu::linear(in.data(), weight.data(), k.epilogue == cuda::GemmEpilogue::none ? nullptr : bias.data(), ref.data(),
              k.M, k.N, k.K);
  if (k.epilogue == cuda::GemmEpilogue::gelu_bias) cpu::gelu_tanh(ref.data(), ref.data(), static_cast<int64_t>(ref.size()));

  DeviceTensor din(in, k.operands), dweight(weight, k.operands), dbias(bias, k.output), dout(ref.size(), k.output);
  DeviceTensor workspace(cuda::GemmRunner::kWorkspaceBytes / 4);
  dout.poison();
  cuda::GemmRunner runner(workspace.data());
  cuda::GemmArgs args{din.data(), dweight.data(), dbias.data(), dout.data(), k.M, k.N, k.K,
                      k.operands, k.output, k.compute, k.epilogue};
  runner.linear(args, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  // tf32 keeps 10 mantissa bits of each operand; float32 output from 16-bit operands rounds only
  // the float32 accumulation
  double bound = bound_for(k.output);
  if (k.compute == cuda::GemmCompute::tf32) bound = 5e-3;
  else if (k.output == DeviceDtype::f32 && k.operands != DeviceDtype::f32) bound = 1e-4;
  expect_close("linear/" + k.name(), out, unwritten, test::to_double(ref), bound, seed);

  if (k.epilogue == cuda::GemmEpilogue::none) return;
  // the fallback for a missing fused epilogue: the plain GEMM, then the bias/GELU kernel
  DeviceTensor dunfused(ref.size(), k.output);
  dunfused.poison();
  runner.set_unfused_epilogues(true);
  cuda::GemmArgs unfused = args;
  unfused.out = dunfused.data();
  runner.linear(unfused, nullptr);
  const vector<float> out_unfused = dunfused.download(&unwritten);
  expect_close("linear/" + k.name() + "/unfused", out_unfused, unwritten, test::to_double(ref), bound, seed);
}

using cuda::GemmCompute;
using cuda::GemmEpilogue;
INSTANTIATE_TEST_SUITE_P(
    linear, CudaLinear,
    testing::Values(
        LinearCase{512, 3456, 1152, DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{512, 1152, 4608, DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{2, 6912, 1152, DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{48, 32, 144, DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::none},
        LinearCase{512, 4608, 1152, DeviceDtype::f32, DeviceDtype::f32, GemmCompute::tf32, GemmEpilogue::bias},
        LinearCase{512, 3456, 1152, DeviceDtype::f16, DeviceDtype::f16, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{512, 1152, 4608, DeviceDtype::f16, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{512, 4608, 1152, DeviceDtype::f16, DeviceDtype::f16, GemmCompute::fp32, GemmEpilogue::gelu_bias},
        LinearCase{2, 6912, 1152, DeviceDtype::f16, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{512, 3456, 1152, DeviceDtype::bf16, DeviceDtype::bf16, GemmCompute::fp32, GemmEpilogue::bias},
        LinearCase{512, 4608, 1152, DeviceDtype::bf16, DeviceDtype::bf16, GemmCompute::fp32, GemmEpilogue::gelu_bias},
        LinearCase{512, 32, 1152, DeviceDtype::bf16, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias}),
    [](const auto& info) { return info.param.name(); });

// --- GEMM plans: the candidate a plan names, the fallback when it no longer fits, tuning ------

class CudaGemmPlan : public testing::Test {
 protected:
  static constexpr int M = 512, N = 1152, K = 1152;  // proj at DiT-XL/2 batch 2: 8 candidates on an H200
  void SetUp() override {
    seed_ = test::fresh_seed();
    in_ = test::round_to(test::random_normal(static_cast<size_t>(M) * K, seed_), DeviceDtype::f16);
    weight_ = test::round_to(test::random_normal(static_cast<size_t>(N) * K, seed_ + 1, 1.0f / std::sqrt(float(K))),
                             DeviceDtype::f16);
    bias_ = test::random_normal(N, seed_ + 2);
    ref_.resize(static_cast<size_t>(M) * N);
    cpu::linear(in_.data(), weight_.data(), bias_.data(), ref_.data(), M, N, K);
  }
  // Runs the GEMM on a runner with `plan`; checks the output against the CPU reference and
  // returns the candidate the runner took.
  int run(std::optional<GemmPlan> plan, const std::string& label) {
    DeviceTensor din(in_, DeviceDtype::f16), dweight(weight_, DeviceDtype::f16), dbias(bias_), dout(ref_.size());
    DeviceTensor workspace(cuda::GemmRunner::kWorkspaceBytes / 4);
    dout.poison();
    cuda::GemmRunner runner(workspace.data(), std::move(plan));
    const cuda::GemmArgs a = args(din, dweight, dbias, dout);
    runner.linear(a, nullptr);
    size_t unwritten = 0;
    const vector<float> out = dout.download(&unwritten);
    expect_close("gemm_plan/" + label, out, unwritten, test::to_double(ref_), 1e-4, seed_);
    return runner.candidate_for(a);
  }
  static cuda::GemmArgs args(DeviceTensor& in, DeviceTensor& weight, DeviceTensor& bias, DeviceTensor& out) {
    return {in.data(), weight.data(), bias.data(), out.data(), M, N, K, DeviceDtype::f16, DeviceDtype::f32,
            cuda::GemmCompute::fp32, cuda::GemmEpilogue::bias};
  }
  static GemmPlan plan_with(const cuda::GemmArgs& a, int candidate, std::map<std::string, int64_t> algo) {
    GemmPlan plan;
    plan.source = "test plan";
    plan.device = cuda::GemmRunner::current_device();
    GemmPlanChoice choice;
    choice.key = cuda::GemmRunner::plan_key(a);
    choice.candidate = candidate;
    choice.algo = std::move(algo);
    plan.choices = {choice};
    return plan;
  }
  uint64_t seed_ = 0;
  vector<float> in_, weight_, bias_, ref_;
};

TEST_F(CudaGemmPlan, takes_the_planned_candidate_and_falls_back_when_it_changed) {
  DeviceTensor scratch(16);
  const cuda::GemmArgs shape = args(scratch, scratch, scratch, scratch);  // pointers unused below
  DeviceTensor workspace(cuda::GemmRunner::kWorkspaceBytes / 4);
  const auto configs = cuda::GemmRunner(workspace.data()).candidate_configs(shape, 4);
  ASSERT_GE(configs.size(), 2u) << "the heuristic offers one algorithm for this shape";
  EXPECT_NE(configs[0], configs[1]);

  EXPECT_EQ(run(std::nullopt, "no_plan"), 0);
  EXPECT_EQ(run(plan_with(shape, 1, configs[1]), "candidate_1"), 1);
  // A plan whose configuration is not the heuristic's candidate 1 any more: the first is taken.
  EXPECT_EQ(run(plan_with(shape, 1, configs[0]), "stale"), 0);
  // A plan for another shape leaves this one on the first.
  cuda::GemmArgs other = shape;
  other.M = 256;
  EXPECT_EQ(run(plan_with(other, 1, configs[1]), "other_shape"), 0);
}

TEST_F(CudaGemmPlan, tuning_records_a_measured_choice) {
  cuda::GemmTuning& tuning = cuda::gemm_tuning();
  tuning = cuda::GemmTuning{};
  tuning.candidates = 4;
  tuning.margin = 0.0;
  const int taken = run(std::nullopt, "tuned");
  tuning.candidates = 0;
  ASSERT_EQ(tuning.choices.size(), 1u);
  const GemmPlanChoice choice = tuning.choices[0];
  tuning = cuda::GemmTuning{};
  DeviceTensor scratch(16);
  const cuda::GemmArgs shape = args(scratch, scratch, scratch, scratch);
  EXPECT_EQ(choice.key, cuda::GemmRunner::plan_key(shape));
  EXPECT_EQ(choice.candidate, taken);
  EXPECT_GT(choice.first_us, 0.0);
  EXPECT_GT(choice.us, 0.0);
  EXPECT_LE(choice.us, choice.first_us);  // margin 0: the fastest, the first included
  DeviceTensor workspace(cuda::GemmRunner::kWorkspaceBytes / 4);
  const auto configs = cuda::GemmRunner(workspace.data()).candidate_configs(shape, 4);
  ASSERT_LT(static_cast<size_t>(choice.candidate), configs.size());
  EXPECT_EQ(choice.algo, configs[static_cast<size_t>(choice.candidate)]);
  // The recorded choice, as a plan, is taken again by a fresh runner.
  GemmPlan plan = plan_with(shape, choice.candidate, choice.algo);
  EXPECT_EQ(run(plan, "replanned"), choice.candidate);
}

TEST(CudaLinearChecks, rejects_misaligned_and_mismatched_arguments) {
  DeviceTensor a(1024), w(1024), bias(64), out(1024), workspace(cuda::GemmRunner::kWorkspaceBytes / 4);
  cuda::GemmRunner runner(workspace.data());
  cuda::GemmArgs args{a.data(), w.data(), bias.data(), out.data(), 16, 16, 16,
                      DeviceDtype::f32, DeviceDtype::f32, GemmCompute::fp32, GemmEpilogue::bias};
  cuda::GemmArgs misaligned = args;
  misaligned.in = a.f32() + 1;
  EXPECT_THROW(runner.linear(misaligned, nullptr), Error);
  cuda::GemmArgs mixed = args;
  mixed.operands = DeviceDtype::f16;
  mixed.output = DeviceDtype::bf16;
  EXPECT_THROW(runner.linear(mixed, nullptr), Error);
  cuda::GemmArgs tf32_half = args;
  tf32_half.operands = DeviceDtype::f16;
  tf32_half.output = DeviceDtype::f16;
  tf32_half.compute = GemmCompute::tf32;
  EXPECT_THROW(runner.linear(tf32_half, nullptr), Error);
}

}  // namespace
}  // namespace dit
