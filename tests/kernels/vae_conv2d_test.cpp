// The VAE decoder's convolutions (kernels/vae_conv2d.h). CPU cases: the reference against a float64
// re-derivation with zero padding. CUDA cases: cuDNN's fused convolution + bias (+ residual) and
// the unfused fallback (the plain call, then the bias kernel) against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/vae_conv2d.h"
#include "tests/kernels/harness.h"

#if DIT_CUDA_CASES
#include "kernels/vae_bias.h"
#include "model/cuda/vae_cuda_conv.h"
#endif

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuConvCase {
  int N, H, W, Cin, Cout, k;
  bool with_bias = true;
  std::string name() const {
    return test::dims_name({{"n", N}, {"h", H}, {"w", W}}) + "_" + std::to_string(Cin) + "to" + std::to_string(Cout) +
           "_k" + std::to_string(k) + (with_bias ? "" : "_nobias");
  }
};

class CpuVaeConv2d : public testing::TestWithParam<CpuConvCase> {};

TEST_P(CpuVaeConv2d, matches_float64_rederivation) {
  const auto [N, H, W, Cin, Cout, k, with_bias] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> in = test::random_normal(size_t(N) * H * W * Cin, seed);
  const vector<float> weight = test::random_normal(size_t(Cout) * Cin * k * k, seed + 1, 0.2f);  // [Cout, Cin, k, k]
  const vector<float> bias = test::random_normal(Cout, seed + 2);
  vector<float> out = test::poisoned(size_t(N) * H * W * Cout);
  cpu::vae_conv2d(in.data(), weight.data(), with_bias ? bias.data() : nullptr, out.data(), N, H, W, Cin, Cout, k);
  const int pad = k / 2;
  vector<double> ref(out.size());
  for (int n = 0; n < N; ++n)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        for (int o = 0; o < Cout; ++o) {
          double acc = with_bias ? bias[o] : 0.0;
          for (int i = 0; i < Cin; ++i)
            for (int ky = 0; ky < k; ++ky)
              for (int kx = 0; kx < k; ++kx) {
                const int sy = y + ky - pad, sx = x + kx - pad;
                if (sy < 0 || sy >= H || sx < 0 || sx >= W) continue;  // zero padding
                acc += double(weight[((size_t(o) * Cin + i) * k + ky) * k + kx]) *
                       in[((size_t(n) * H + sy) * W + sx) * Cin + i];
              }
          ref[((size_t(n) * H + y) * W + x) * Cout + o] = acc;
        }
  expect_close("vae_conv2d/" + GetParam().name(), out, test::count_poisoned(out), ref, test::kElementwiseF32Bound,
               seed);
}

INSTANTIATE_TEST_SUITE_P(vae_conv2d, CpuVaeConv2d,
                         testing::Values(CpuConvCase{2, 8, 8, 8, 16, 3}, CpuConvCase{1, 5, 7, 3, 4, 3},
                                         CpuConvCase{2, 6, 4, 16, 8, 1}, CpuConvCase{1, 4, 4, 4, 4, 3, false}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// cuDNN's convolution with the bias, and the residual, in the same call (CudnnConv::run_with_bias,
// model/cuda/vae_cuda_conv.h): the CUDA form of this op.
struct CudaConvBiasCase {
  int N, S, Cin, Cout, k;
  bool accumulate;  // out = conv + bias + out (a resnet's conv2) rather than conv + bias
  DeviceDtype dtype;
  std::string name() const {
    return test::dims_name({{"n", N}, {"s", S}}) + "_" + std::to_string(Cin) + "to" + std::to_string(Cout) + "_k" +
           std::to_string(k) + (accumulate ? "_residual" : "") + "_" + test::dtype_suffix(dtype);
  }
};

class CudnnConvBias : public testing::TestWithParam<CudaConvBiasCase> {};

// The fused call and the path the decoder falls back to (the plain call, then the bias kernel)
// against the float64 reference, each within the output rounding bound. Without accumulation
// the output is poisoned first: alpha2 = 0 with z = out must not read it. The decoder's shapes
// (1x1 and 3x3, padded channels, a residual) at the tiny config's sizes and one SD mid-block.
TEST_P(CudnnConvBias, fused_matches_reference) {
  const CudaConvBiasCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const Precision precision = c.dtype == DeviceDtype::f16 ? Precision::fp16 : Precision::bf16;
  const size_t pixels = static_cast<size_t>(c.N) * c.S * c.S, taps = static_cast<size_t>(c.k) * c.k;
  const vector<float> x = test::rounded_normal(pixels * c.Cin, seed, c.dtype, 1.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.Cin * taps));
  const vector<float> w = test::rounded_normal(c.Cout * c.Cin * taps, seed + 1, c.dtype, scale);  // [Cout, Cin, k, k]
  vector<float> w_nhwc(w.size());                                                                 // [Cout, k, k, Cin]
  for (int o = 0; o < c.Cout; ++o)
    for (int i = 0; i < c.Cin; ++i)
      for (size_t t = 0; t < taps; ++t) w_nhwc[(o * taps + t) * c.Cin + i] = w[(o * c.Cin + i) * taps + t];
  const vector<float> bias = test::random_normal(c.Cout, seed + 2, 0.5f);  // float32, as the weights hold it
  const vector<float> prior = c.accumulate ? test::rounded_normal(pixels * c.Cout, seed + 3, c.dtype, 1.0f)
                                           : vector<float>(pixels * c.Cout, 0.0f);
  vector<float> ref(pixels * c.Cout);
  cpu::vae_conv2d(x.data(), w.data(), bias.data(), ref.data(), c.N, c.S, c.S, c.Cin, c.Cout, c.k);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] += prior[i];

  cudnnHandle_t handle = nullptr;
  DIT_CUDNN_CHECK(cudnnCreate(&handle));
  const std::unique_ptr<cudnnContext, cudnnStatus_t (*)(cudnnHandle_t)> owned(handle, cudnnDestroy);
  cuda::CudnnConv conv(handle, {c.N, c.S, c.S, c.Cin, c.Cout, c.k}, precision, /*fuse_bias=*/true);
  ASSERT_FALSE(conv.fused_algorithm_name().empty()) << "no fused form planned (plain " << conv.algorithm_name() << ")";
  SCOPED_TRACE(conv.fused_algorithm_name() + " beside " + conv.algorithm_name());
  DeviceTensor in(x, c.dtype), weight(w_nhwc, c.dtype);
  DeviceTensor bias_storage(bias, c.dtype), bias_f32(bias);
  DeviceTensor workspace(conv.workspace_bytes() / sizeof(float) + 1);
  DeviceTensor fused(ref.size(), c.dtype), unfused(ref.size(), c.dtype);
  for (DeviceTensor* out : {&fused, &unfused}) {
    if (c.accumulate)
      out->upload(prior);
    else
      out->poison();
  }

  EXPECT_TRUE(
      conv.run_with_bias(in.data(), weight.data(), bias_storage.data(), fused.data(), c.accumulate, workspace.data()))
      << "cuDNN declined " << conv.fused_algorithm_name();
  EXPECT_TRUE(conv.fuses_bias(c.accumulate));
  conv.run(in.data(), weight.data(), unfused.data(), c.accumulate, workspace.data());
  cuda::vae_add_bias(unfused.data(), bias_f32.f32(), c.dtype, static_cast<int64_t>(pixels), c.Cout, nullptr);
  const double bound = test::vae_output_bound(c.dtype);
  size_t unwritten = 0;
  const vector<float> fused_out = fused.download(&unwritten);
  expect_close("vae_conv2d/" + c.name() + "/fused", fused_out, unwritten, test::to_double(ref), bound, seed);
  const vector<float> unfused_out = unfused.download(&unwritten);
  expect_close("vae_conv2d/" + c.name() + "/unfused", unfused_out, unwritten, test::to_double(ref), bound, seed);
}

INSTANTIATE_TEST_SUITE_P(vae_conv2d, CudnnConvBias,
                         testing::Values(CudaConvBiasCase{1, 8, 8, 8, 1, false, DeviceDtype::f16},
                                         CudaConvBiasCase{2, 8, 8, 64, 3, false, DeviceDtype::f16},
                                         CudaConvBiasCase{2, 16, 64, 64, 3, true, DeviceDtype::f16},
                                         CudaConvBiasCase{2, 32, 64, 32, 1, false, DeviceDtype::f16},
                                         CudaConvBiasCase{1, 32, 512, 512, 3, true, DeviceDtype::f16},
                                         CudaConvBiasCase{1, 8, 8, 8, 1, false, DeviceDtype::bf16},
                                         CudaConvBiasCase{2, 16, 64, 64, 3, false, DeviceDtype::bf16},
                                         CudaConvBiasCase{2, 16, 64, 64, 3, true, DeviceDtype::bf16},
                                         CudaConvBiasCase{1, 64, 32, 8, 3, false, DeviceDtype::bf16}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
