// Which entry of cuDNN's heuristic ranking a convolution plan takes for the fused bias call
// (model/cuda/vae_cuda_conv.h: fused_bias_candidate), on made-up rankings: no GPU needed, since the
// choice reads only the ranking. The fused call itself runs in tests/kernels/vae_conv2d_test.cpp
// (CudnnConvBias).
#include <gtest/gtest.h>

#include "model/cuda/vae_cuda_conv.h"

namespace dit {
namespace {

using cuda::fused_bias_candidate;
using cuda::kConvWorkspaceLimit;

cudnnConvolutionFwdAlgoPerf_t candidate(cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math) {
  cudnnConvolutionFwdAlgoPerf_t c{};
  c.algo = algo;
  c.status = CUDNN_STATUS_SUCCESS;
  c.memory = 1 << 20;
  c.determinism = CUDNN_DETERMINISTIC;
  c.mathType = math;
  return c;
}

constexpr auto kPrecomp = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;

TEST(VaeCudaConvPlan, FusedBiasTakesOnlyImplicitPrecompGemm) {
  for (Precision precision : {Precision::fp16, Precision::bf16}) {
    EXPECT_TRUE(fused_bias_candidate(candidate(kPrecomp, CUDNN_TENSOR_OP_MATH), precision));
    for (auto algo : {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                      CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
                      CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, CUDNN_CONVOLUTION_FWD_ALGO_FFT})
      EXPECT_FALSE(fused_bias_candidate(candidate(algo, CUDNN_TENSOR_OP_MATH), precision)) << algo;
  }
}

// The fused algorithm passes the same filter as the plain one: a ranking entry cuDNN marks
// failed, nondeterministic or over the workspace limit is not taken just because it fuses.
TEST(VaeCudaConvPlan, FusedBiasKeepsThePlainFilter) {
  auto failed = candidate(kPrecomp, CUDNN_TENSOR_OP_MATH);
  failed.status = CUDNN_STATUS_NOT_SUPPORTED;
  auto nondeterministic = candidate(kPrecomp, CUDNN_TENSOR_OP_MATH);
  nondeterministic.determinism = CUDNN_NON_DETERMINISTIC;
  auto large = candidate(kPrecomp, CUDNN_TENSOR_OP_MATH);
  large.memory = kConvWorkspaceLimit + 1;
  for (const auto& c : {failed, nondeterministic, large}) EXPECT_FALSE(fused_bias_candidate(c, Precision::fp16));
  large.memory = kConvWorkspaceLimit;
  EXPECT_TRUE(fused_bias_candidate(large, Precision::fp16));
}

// fp32 is the golden path: were it ever fused, still no tensor cores (no TF32).
TEST(VaeCudaConvPlan, FusedBiasAtFp32StaysOffTensorCores) {
  EXPECT_FALSE(fused_bias_candidate(candidate(kPrecomp, CUDNN_TENSOR_OP_MATH), Precision::fp32));
  EXPECT_FALSE(fused_bias_candidate(candidate(kPrecomp, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION), Precision::fp32));
  EXPECT_TRUE(fused_bias_candidate(candidate(kPrecomp, CUDNN_FMA_MATH), Precision::fp32));
}

}  // namespace
}  // namespace dit
