// The VAE's CUDA kernels (GroupNorm+SiLU, nearest 2x upsampling, bias, row softmax, the planar
// image) and cuDNN's fused convolution + bias (+ residual) against their CPU references: one
// table-driven case per shape and dtype, fresh random inputs each run (the seed is printed on
// failure), outputs poisoned first, normwise error under a per-dtype bound (exact equality for
// the pure data movements).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "kernels/group_norm.h"
#include "kernels/upsample.h"
#include "kernels/vae_bias.h"
#include "kernels/vae_conv2d.h"
#include "kernels/vae_image.h"
#include "kernels/vae_softmax.h"
#include "model/cuda/vae_cuda_conv.h"
#include "tests/support/test_support.h"
#include "tests/vae/device_buffer.h"

namespace dit {
namespace {

using cuda::DeviceDtype;

// Output rounding dominates: about 2^-11 (f16) and 2^-8 (bf16) relative per element.
double bound_for(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::f16: return 2e-3;
    case DeviceDtype::bf16: return 1.5e-2;
    default: return 2e-6;
  }
}

std::vector<float> rounded_input(size_t n, uint64_t seed, DeviceDtype dtype, float scale, float shift = 0) {
  std::vector<float> v = test::random_normal(n, seed, scale);
  for (float& x : v) x = test::round_to(x + shift, dtype);
  return v;
}

void expect_close(const std::vector<float>& out, const std::vector<float>& ref_float, DeviceDtype dtype,
                  uint64_t seed) {
  const std::vector<double> ref(ref_float.begin(), ref_float.end());
  const auto c = test::compare(out, ref);
  EXPECT_EQ(c.non_finite, 0u) << "unwritten or non-finite elements; seed " << seed << "\n" << c.describe(out, ref);
  EXPECT_LT(c.relative_error, bound_for(dtype)) << "seed " << seed << "\n" << c.describe(out, ref);
}

// ---------------------------------------------------------------------------------------------
// GroupNorm (+ SiLU)

struct GroupNormCase {
  int N;
  int64_t P;
  int C, groups;
  bool silu, in_place;
  DeviceDtype dtype;
};

std::string name_of(const GroupNormCase& c) {
  return "n" + std::to_string(c.N) + "_p" + std::to_string(c.P) + "_c" + std::to_string(c.C) + "_g" +
         std::to_string(c.groups) + (c.silu ? "_silu" : "") + (c.in_place ? "_inplace" : "") + "_" +
         cuda::dtype_name(c.dtype);
}

class GroupNormKernel : public testing::TestWithParam<GroupNormCase> {};

TEST_P(GroupNormKernel, MatchesReference) {
  const GroupNormCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const size_t n = static_cast<size_t>(c.N) * c.P * c.C;
  // An offset mean exercises the two-pass variance.
  const std::vector<float> x = rounded_input(n, seed, c.dtype, 2.0f, 3.0f);
  std::vector<float> gamma = test::random_normal(c.C, seed + 1, 0.2f), beta = test::random_normal(c.C, seed + 2, 0.5f);
  for (float& g : gamma) g += 1.0f;
  std::vector<float> ref(n);
  cpu::group_norm(x.data(), gamma.data(), beta.data(), ref.data(), c.N, c.P, c.C, c.groups, 1e-6f, c.silu);

  test::DeviceBuffer in(x, c.dtype), out(n, c.dtype), gamma_d(gamma, DeviceDtype::f32), beta_d(beta, DeviceDtype::f32);
  test::DeviceBuffer workspace(cuda::group_norm_workspace_floats(c.N, c.P, c.groups), DeviceDtype::f32);
  out.poison();
  workspace.poison();
  test::DeviceBuffer& target = c.in_place ? in : out;
  cuda::group_norm(in.get(), static_cast<float*>(gamma_d.get()), static_cast<float*>(beta_d.get()), target.get(),
                   c.dtype, c.N, c.P, c.C, c.groups, 1e-6f, c.silu, static_cast<float*>(workspace.get()), nullptr);
  expect_close(target.download(), ref, c.dtype, seed);
}

INSTANTIATE_TEST_SUITE_P(
    Vae, GroupNormKernel,
    testing::Values(GroupNormCase{2, 64, 64, 8, true, false, DeviceDtype::f32},
                    GroupNormCase{2, 100, 48, 4, false, false, DeviceDtype::f32},  // partial last chunk
                    GroupNormCase{1, 1024, 512, 32, true, true, DeviceDtype::f32},
                    GroupNormCase{3, 4096, 128, 32, true, false, DeviceDtype::f16},
                    GroupNormCase{1, 16384, 256, 32, true, true, DeviceDtype::f16},
                    GroupNormCase{2, 1024, 512, 32, false, false, DeviceDtype::bf16},
                    GroupNormCase{1, 7, 1536, 32, true, false, DeviceDtype::bf16}),
    [](const auto& info) { return name_of(info.param); });

// ---------------------------------------------------------------------------------------------
// Nearest 2x upsampling

struct UpsampleCase {
  int N, H, W, C;
  DeviceDtype dtype;
};

class UpsampleKernel : public testing::TestWithParam<UpsampleCase> {};

TEST_P(UpsampleKernel, CopiesExactly) {
  const UpsampleCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const std::vector<float> x = rounded_input(static_cast<size_t>(c.N) * c.H * c.W * c.C, seed, c.dtype, 1.0f);
  std::vector<float> ref(x.size() * 4);
  cpu::upsample_nearest2x(x.data(), ref.data(), c.N, c.H, c.W, c.C);
  test::DeviceBuffer in(x, c.dtype), out(ref.size(), c.dtype);
  out.poison();
  cuda::upsample_nearest2x(in.get(), out.get(), c.dtype, c.N, c.H, c.W, c.C, nullptr);
  const std::vector<float> got = out.download();
  const std::vector<double> ref_double(ref.begin(), ref.end());
  const auto cmp = test::compare(got, ref_double);
  EXPECT_EQ(cmp.non_finite, 0u) << "seed " << seed << "\n" << cmp.describe(got, ref_double);
  EXPECT_EQ(cmp.max_abs_error, 0.0) << "seed " << seed << "\n" << cmp.describe(got, ref_double);
}

INSTANTIATE_TEST_SUITE_P(Vae, UpsampleKernel,
                         testing::Values(UpsampleCase{2, 4, 4, 64, DeviceDtype::f32},
                                         UpsampleCase{1, 3, 5, 6, DeviceDtype::f32},
                                         UpsampleCase{2, 32, 32, 512, DeviceDtype::f16},
                                         UpsampleCase{1, 64, 64, 256, DeviceDtype::bf16},
                                         UpsampleCase{3, 7, 2, 2, DeviceDtype::f16}),
                         [](const auto& info) {
                           const UpsampleCase& c = info.param;
                           return "n" + std::to_string(c.N) + "_h" + std::to_string(c.H) + "_w" + std::to_string(c.W) +
                                  "_c" + std::to_string(c.C) + "_" + cuda::dtype_name(c.dtype);
                         });

TEST(UpsampleKernel, RejectsOddChannelsAndOverlap) {
  test::DeviceBuffer buffer(4 * 4 * 4 * 4, DeviceDtype::f16);
  EXPECT_THROW(cuda::upsample_nearest2x(buffer.get(), static_cast<char*>(buffer.get()) + 64, DeviceDtype::f16, 1, 2, 2, 3,
                                        nullptr),
               Error);
  EXPECT_THROW(cuda::upsample_nearest2x(buffer.get(), buffer.get(), DeviceDtype::f16, 1, 2, 2, 4, nullptr), Error);
}

// ---------------------------------------------------------------------------------------------
// Per-channel bias

struct BiasCase {
  int64_t rows;
  int C;
  DeviceDtype dtype;
};

class BiasKernel : public testing::TestWithParam<BiasCase> {};

TEST_P(BiasKernel, MatchesReference) {
  const BiasCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const std::vector<float> x = rounded_input(static_cast<size_t>(c.rows) * c.C, seed, c.dtype, 1.0f);
  const std::vector<float> bias = test::random_normal(c.C, seed + 1, 1.0f);
  std::vector<float> ref = x;
  cpu::vae_add_bias(ref.data(), bias.data(), c.rows, c.C);
  test::DeviceBuffer data(x, c.dtype), bias_d(bias, DeviceDtype::f32);
  cuda::vae_add_bias(data.get(), static_cast<float*>(bias_d.get()), c.dtype, c.rows, c.C, nullptr);
  expect_close(data.download(), ref, c.dtype, seed);
}

INSTANTIATE_TEST_SUITE_P(Vae, BiasKernel,
                         testing::Values(BiasCase{64, 8, DeviceDtype::f32}, BiasCase{4096, 512, DeviceDtype::f32},
                                         BiasCase{65536, 128, DeviceDtype::f16}, BiasCase{1000, 6, DeviceDtype::bf16}),
                         [](const auto& info) {
                           const BiasCase& c = info.param;
                           return "rows" + std::to_string(c.rows) + "_c" + std::to_string(c.C) + "_" +
                                  cuda::dtype_name(c.dtype);
                         });

// ---------------------------------------------------------------------------------------------
// cuDNN convolution with the bias, and the residual, in the same call (CudnnConv::run_with_bias)

struct ConvBiasCase {
  int N, S, Cin, Cout, k;
  bool accumulate;  // out = conv + bias + out (a resnet's conv2) rather than conv + bias
  DeviceDtype dtype;
};

class CudnnConvBias : public testing::TestWithParam<ConvBiasCase> {};

// The fused call and the path the decoder falls back to (the plain call, then the bias kernel)
// against the float64 reference, each within the output rounding bound. Without accumulation
// the output is poisoned first: alpha2 = 0 with z = out must not read it. The decoder's shapes
// (1x1 and 3x3, padded channels, a residual) at the tiny config's sizes and one SD mid-block.
TEST_P(CudnnConvBias, FusedMatchesReference) {
  const ConvBiasCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const Precision precision = c.dtype == DeviceDtype::f16 ? Precision::fp16 : Precision::bf16;
  const size_t pixels = static_cast<size_t>(c.N) * c.S * c.S, taps = static_cast<size_t>(c.k) * c.k;
  const std::vector<float> x = rounded_input(pixels * c.Cin, seed, c.dtype, 1.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.Cin * taps));
  const std::vector<float> w = rounded_input(c.Cout * c.Cin * taps, seed + 1, c.dtype, scale);  // [Cout, Cin, k, k]
  std::vector<float> w_nhwc(w.size());                                                          // [Cout, k, k, Cin]
  for (int o = 0; o < c.Cout; ++o)
    for (int i = 0; i < c.Cin; ++i)
      for (size_t t = 0; t < taps; ++t) w_nhwc[(o * taps + t) * c.Cin + i] = w[(o * c.Cin + i) * taps + t];
  const std::vector<float> bias = test::random_normal(c.Cout, seed + 2, 0.5f);  // float32, as the weights hold it
  const std::vector<float> prior = c.accumulate ? rounded_input(pixels * c.Cout, seed + 3, c.dtype, 1.0f)
                                                : std::vector<float>(pixels * c.Cout, 0.0f);
  std::vector<float> ref(pixels * c.Cout);
  cpu::vae_conv2d(x.data(), w.data(), bias.data(), ref.data(), c.N, c.S, c.S, c.Cin, c.Cout, c.k);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] += prior[i];

  cudnnHandle_t handle = nullptr;
  DIT_CUDNN_CHECK(cudnnCreate(&handle));
  const std::unique_ptr<cudnnContext, cudnnStatus_t (*)(cudnnHandle_t)> owned(handle, cudnnDestroy);
  cuda::CudnnConv conv(handle, {c.N, c.S, c.S, c.Cin, c.Cout, c.k}, precision, /*fuse_bias=*/true);
  ASSERT_FALSE(conv.fused_algorithm_name().empty()) << "no fused form planned (plain " << conv.algorithm_name() << ")";
  SCOPED_TRACE(conv.fused_algorithm_name() + " beside " + conv.algorithm_name());
  test::DeviceBuffer in(x, c.dtype), weight(w_nhwc, c.dtype);
  test::DeviceBuffer bias_storage(bias, c.dtype), bias_f32(bias, DeviceDtype::f32);
  test::DeviceBuffer workspace(conv.workspace_bytes() / sizeof(float) + 1, DeviceDtype::f32);
  test::DeviceBuffer fused(ref.size(), c.dtype), unfused(ref.size(), c.dtype);
  for (test::DeviceBuffer* out : {&fused, &unfused}) {
    if (c.accumulate)
      out->upload(prior);
    else
      out->poison();
  }

  EXPECT_TRUE(
      conv.run_with_bias(in.get(), weight.get(), bias_storage.get(), fused.get(), c.accumulate, workspace.get()))
      << "cuDNN declined " << conv.fused_algorithm_name();
  EXPECT_TRUE(conv.fuses_bias(c.accumulate));
  conv.run(in.get(), weight.get(), unfused.get(), c.accumulate, workspace.get());
  cuda::vae_add_bias(unfused.get(), static_cast<float*>(bias_f32.get()), c.dtype, static_cast<int64_t>(pixels), c.Cout,
                     nullptr);
  expect_close(fused.download(), ref, c.dtype, seed);
  expect_close(unfused.download(), ref, c.dtype, seed);
}

INSTANTIATE_TEST_SUITE_P(Vae, CudnnConvBias,
                         testing::Values(ConvBiasCase{1, 8, 8, 8, 1, false, DeviceDtype::f16},
                                         ConvBiasCase{2, 8, 8, 64, 3, false, DeviceDtype::f16},
                                         ConvBiasCase{2, 16, 64, 64, 3, true, DeviceDtype::f16},
                                         ConvBiasCase{2, 32, 64, 32, 1, false, DeviceDtype::f16},
                                         ConvBiasCase{1, 32, 512, 512, 3, true, DeviceDtype::f16},
                                         ConvBiasCase{1, 8, 8, 8, 1, false, DeviceDtype::bf16},
                                         ConvBiasCase{2, 16, 64, 64, 3, false, DeviceDtype::bf16},
                                         ConvBiasCase{2, 16, 64, 64, 3, true, DeviceDtype::bf16},
                                         ConvBiasCase{1, 64, 32, 8, 3, false, DeviceDtype::bf16}),
                         [](const auto& info) {
                           const ConvBiasCase& c = info.param;
                           return "n" + std::to_string(c.N) + "_s" + std::to_string(c.S) + "_" +
                                  std::to_string(c.Cin) + "to" + std::to_string(c.Cout) + "_k" + std::to_string(c.k) +
                                  (c.accumulate ? "_residual" : "") + "_" + cuda::dtype_name(c.dtype);
                         });

// ---------------------------------------------------------------------------------------------
// Row softmax

struct SoftmaxCase {
  int64_t R, L;
  float scale;  // spread of the scores
  DeviceDtype dtype;
};

class SoftmaxKernel : public testing::TestWithParam<SoftmaxCase> {};

TEST_P(SoftmaxKernel, MatchesReference) {
  const SoftmaxCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const std::vector<float> x = rounded_input(static_cast<size_t>(c.R * c.L), seed, c.dtype, c.scale);
  std::vector<float> ref(x.size());
  cpu::vae_softmax(x.data(), ref.data(), c.R, c.L);
  test::DeviceBuffer in(x, c.dtype), out(x.size(), c.dtype);
  out.poison();
  cuda::vae_softmax(in.get(), out.get(), c.dtype, c.R, c.L, nullptr);
  expect_close(out.download(), ref, c.dtype, seed);
}

INSTANTIATE_TEST_SUITE_P(Vae, SoftmaxKernel,
                         testing::Values(SoftmaxCase{16, 16, 1.0f, DeviceDtype::f32},
                                         SoftmaxCase{64, 1024, 4.0f, DeviceDtype::f32},
                                         SoftmaxCase{3, 77, 30.0f, DeviceDtype::f32},
                                         SoftmaxCase{4096, 4096, 3.0f, DeviceDtype::f16},
                                         SoftmaxCase{1024, 1024, 3.0f, DeviceDtype::bf16}),
                         [](const auto& info) {
                           const SoftmaxCase& c = info.param;
                           return "r" + std::to_string(c.R) + "_l" + std::to_string(c.L) + "_s" +
                                  std::to_string(static_cast<int>(c.scale)) + "_" + cuda::dtype_name(c.dtype);
                         });

// ---------------------------------------------------------------------------------------------
// Channels-last to planar float32 image

struct ImageCase {
  int N;
  int64_t P;
  int C_stride, C;
  DeviceDtype dtype;
};

class PlanarImageKernel : public testing::TestWithParam<ImageCase> {};

TEST_P(PlanarImageKernel, WidensExactly) {
  const ImageCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const std::vector<float> x = rounded_input(static_cast<size_t>(c.N) * c.P * c.C_stride, seed, c.dtype, 1.0f);
  std::vector<float> ref(static_cast<size_t>(c.N) * c.C * c.P);
  cpu::channels_last_to_planar(x.data(), ref.data(), c.N, c.P, c.C_stride, c.C);
  test::DeviceBuffer in(x, c.dtype), out(ref.size(), DeviceDtype::f32);
  out.poison();
  cuda::channels_last_to_planar(in.get(), c.dtype, static_cast<float*>(out.get()), c.N, c.P, c.C_stride, c.C, nullptr);
  EXPECT_EQ(out.download(), ref) << "seed " << seed;
}

INSTANTIATE_TEST_SUITE_P(Vae, PlanarImageKernel,
                         testing::Values(ImageCase{1, 65536, 8, 3, DeviceDtype::f16},
                                         ImageCase{2, 100, 8, 3, DeviceDtype::f32},
                                         ImageCase{3, 17, 5, 5, DeviceDtype::bf16},
                                         ImageCase{2, 4096, 8, 3, DeviceDtype::bf16},
                                         ImageCase{1, 33, 4, 1, DeviceDtype::f32}),
                         [](const auto& info) {
                           const ImageCase& c = info.param;
                           return "n" + std::to_string(c.N) + "_p" + std::to_string(c.P) + "_s" +
                                  std::to_string(c.C_stride) + "_c" + std::to_string(c.C) + "_" +
                                  cuda::dtype_name(c.dtype);
                         });

TEST(PlanarImageKernel, RejectsBadChannelsAndOverlap) {
  test::DeviceBuffer buffer(1024, DeviceDtype::f32);
  auto* base = static_cast<float*>(buffer.get());
  EXPECT_THROW(cuda::channels_last_to_planar(base, DeviceDtype::f32, base + 512, 1, 16, 4, 5, nullptr), Error);
  EXPECT_THROW(cuda::channels_last_to_planar(base, DeviceDtype::f32, base + 8, 1, 16, 8, 3, nullptr), Error);
}

}  // namespace
}  // namespace dit
