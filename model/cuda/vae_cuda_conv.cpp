// cuDNN convolutions for the VAE decoder (model/cuda/vae_cuda_conv.h).
#include "model/cuda/vae_cuda_conv.h"

#include <vector>

#include "kernels/cuda_check.h"

namespace dit::cuda {

void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status != CUDNN_STATUS_SUCCESS) throw_device_error(file, line, call, cudnnGetErrorString(status));
}

DeviceDtype storage_dtype(Precision precision) {
  switch (precision) {
    case Precision::fp16: return DeviceDtype::f16;
    case Precision::bf16: return DeviceDtype::bf16;
    default: return DeviceDtype::f32;
  }
}

cudnnDataType_t cudnn_dtype(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::f16: return CUDNN_DATA_HALF;
    case DeviceDtype::bf16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

static const char* algorithm_label(cudnnConvolutionFwdAlgo_t algorithm) {
  switch (algorithm) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "unknown";
  }
}

static const char* math_label(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor-op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor-op-conversion";
    case CUDNN_FMA_MATH: return "fma";
    default: return "?";
  }
}

// The float32 golden path keeps to GEMM-style algorithms without tensor cores (the descriptor
// stays at CUDNN_FMA_MATH, so no TF32): exact products, float32 sums, no Winograd or FFT
// transforms (whose rounding is larger). The other precisions take any deterministic algorithm
// but FFT (large workspaces, larger error).
static bool acceptable(const cudnnConvolutionFwdAlgoPerf_t& candidate, Precision precision) {
  if (candidate.status != CUDNN_STATUS_SUCCESS || candidate.determinism != CUDNN_DETERMINISTIC ||
      candidate.memory > kConvWorkspaceLimit)
    return false;
  const auto algorithm = candidate.algo;
  if (algorithm == CUDNN_CONVOLUTION_FWD_ALGO_FFT || algorithm == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING) return false;
  if (precision == Precision::fp32)
    return candidate.mathType != CUDNN_TENSOR_OP_MATH && candidate.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
           (algorithm == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
            algorithm == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
            algorithm == CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
  return true;
}

bool fused_bias_candidate(const cudnnConvolutionFwdAlgoPerf_t& candidate, Precision precision) {
  return candidate.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM && acceptable(candidate, precision);
}

CudnnConv::TensorDesc CudnnConv::tensor_desc(cudnnDataType_t type, int N, int C, int H, int W) {
  cudnnTensorDescriptor_t raw = nullptr;
  DIT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&raw));
  TensorDesc desc(raw);
  DIT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NHWC, type, N, C, H, W));
  return desc;
}

CudnnConv::ConvDesc CudnnConv::conv_desc(const ConvShape& shape, cudnnMathType_t math) {
  cudnnConvolutionDescriptor_t raw = nullptr;
  DIT_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&raw));
  ConvDesc desc(raw);
  const int pad = shape.kernel / 2;
  DIT_CUDNN_CHECK(
      cudnnSetConvolution2dDescriptor(raw, pad, pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DIT_CUDNN_CHECK(cudnnSetConvolutionMathType(raw, math));
  return desc;
}

CudnnConv::CudnnConv(cudnnHandle_t handle, const ConvShape& shape, Precision precision, bool fuse_bias)
    : handle_(handle) {
  const cudnnDataType_t type = cudnn_dtype(storage_dtype(precision));
  in_desc_ = tensor_desc(type, shape.N, shape.in_channels, shape.H, shape.W);
  out_desc_ = tensor_desc(type, shape.N, shape.out_channels, shape.H, shape.W);
  cudnnFilterDescriptor_t filter = nullptr;
  DIT_CUDNN_CHECK(cudnnCreateFilterDescriptor(&filter));
  filter_desc_.reset(filter);
  DIT_CUDNN_CHECK(cudnnSetFilter4dDescriptor(filter, type, CUDNN_TENSOR_NHWC, shape.out_channels, shape.in_channels,
                                             shape.kernel, shape.kernel));
  const cudnnMathType_t requested = precision == Precision::fp32   ? CUDNN_FMA_MATH
                                    : precision == Precision::tf32 ? CUDNN_DEFAULT_MATH
                                                                   : CUDNN_TENSOR_OP_MATH;
  conv_desc_ = conv_desc(shape, requested);
  cudnnConvolutionDescriptor_t conv = conv_desc_.get();

  std::vector<cudnnConvolutionFwdAlgoPerf_t> candidates(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  int returned = 0;
  DIT_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle_, in_desc_.get(), filter, conv, out_desc_.get(),
                                                         static_cast<int>(candidates.size()), &returned,
                                                         candidates.data()));
  std::string considered;
  for (int i = 0; i < returned; ++i) {
    const auto& candidate = candidates[i];
    considered += std::string(" ") + algorithm_label(candidate.algo) + "/" + math_label(candidate.mathType) + "/" +
                  (candidate.determinism == CUDNN_DETERMINISTIC ? "det" : "nondet") + "/" +
                  std::to_string(candidate.memory) + "B/" + cudnnGetErrorString(candidate.status);
    if (!acceptable(candidate, precision)) continue;
    const cudnnMathType_t math = precision == Precision::fp32 ? CUDNN_FMA_MATH : candidate.mathType;
    DIT_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, math));
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(handle_, in_desc_.get(), filter, conv, out_desc_.get(), candidate.algo,
                                                &bytes) != CUDNN_STATUS_SUCCESS ||
        bytes > kConvWorkspaceLimit)
      continue;
    algorithm_ = candidate.algo;
    workspace_bytes_ = bytes;
    algorithm_name_ = std::string(algorithm_label(candidate.algo)) + "/" + math_label(math);
    if (fuse_bias) plan_fused_bias(shape, precision, type, candidates.data(), returned);
    return;
  }
  throw Error(ErrorKind::device, "cuDNN offers no deterministic " + std::string(precision_name(precision)) +
                                     " algorithm for a " + std::to_string(shape.kernel) + "x" +
                                     std::to_string(shape.kernel) + " convolution " +
                                     std::to_string(shape.in_channels) + "->" + std::to_string(shape.out_channels) +
                                     " at " + std::to_string(shape.N) + "x" + std::to_string(shape.H) + "x" +
                                     std::to_string(shape.W) + "; candidates:" + considered);
}

// The fused call's algorithm is the best-ranked fused_bias_candidate(), which is the plain
// algorithm itself whenever the heuristic already ranks IMPLICIT_PRECOMP_GEMM first. None found
// leaves the fused form unplanned: the plain call and the bias kernel do the work, as before.
void CudnnConv::plan_fused_bias(const ConvShape& shape, Precision precision, cudnnDataType_t type,
                                const cudnnConvolutionFwdAlgoPerf_t* candidates, int count) {
  for (int i = 0; i < count; ++i) {
    const auto& candidate = candidates[i];
    if (!fused_bias_candidate(candidate, precision)) continue;
    const cudnnMathType_t math = precision == Precision::fp32 ? CUDNN_FMA_MATH : candidate.mathType;
    ConvDesc conv = conv_desc(shape, math);
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(handle_, in_desc_.get(), filter_desc_.get(), conv.get(),
                                                out_desc_.get(), candidate.algo, &bytes) != CUDNN_STATUS_SUCCESS ||
        bytes > kConvWorkspaceLimit)
      continue;
    cudnnActivationDescriptor_t identity = nullptr;
    DIT_CUDNN_CHECK(cudnnCreateActivationDescriptor(&identity));
    identity_.reset(identity);
    DIT_CUDNN_CHECK(cudnnSetActivationDescriptor(identity, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    // The bias is a 1 x C x 1 x 1 tensor of the output's type: with 16-bit tensors and float32
    // compute cuDNN takes a 16-bit bias (seen running on an H200 with cuDNN 9.19, every shape of
    // the SD decoder), so the decoder stages one beside the float32 copy.
    bias_desc_ = tensor_desc(type, 1, shape.out_channels, 1, 1);
    fused_conv_desc_ = std::move(conv);
    fused_algorithm_ = candidate.algo;
    fused_workspace_bytes_ = bytes;
    fused_algorithm_name_ = std::string(algorithm_label(candidate.algo)) + "/" + math_label(math) + "+bias";
    fused_ = {Fused::untried, Fused::untried};
    return;
  }
}

void CudnnConv::run(const void* in, const void* weight, void* out, bool accumulate, void* workspace) const {
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  DIT_CUDNN_CHECK(cudnnConvolutionForward(handle_, &one, in_desc_.get(), in, filter_desc_.get(), weight,
                                          conv_desc_.get(), algorithm_, workspace, workspace_bytes_, &beta,
                                          out_desc_.get(), out));
}

bool CudnnConv::run_with_bias(const void* in, const void* weight, const void* bias, void* out, bool accumulate,
                              void* workspace) {
  Fused& state = fused_[accumulate];
  if (state == Fused::off) return false;
  // z is the output itself: alpha2 = 1 adds the residual already there, alpha2 = 0 ignores it
  // (cuDNN then does not read z, so an unwritten output is fine).
  const float one = 1.0f, alpha2 = accumulate ? 1.0f : 0.0f;
  const cudnnStatus_t status = cudnnConvolutionBiasActivationForward(
      handle_, &one, in_desc_.get(), in, filter_desc_.get(), weight, fused_conv_desc_.get(), fused_algorithm_,
      workspace, fused_workspace_bytes_, &alpha2, out_desc_.get(), out, bias_desc_.get(), bias, identity_.get(),
      out_desc_.get(), out);
  // cuDNN picks its kernel on the host, so a "not supported" answer comes before anything is
  // enqueued and leaves the output for the caller's unfused path. It counts as an answer only on
  // the first call in a mode; a call that has run before and then fails has met a real error.
  if (state == Fused::untried && CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED) {
    state = Fused::off;
    return false;
  }
  check_cudnn(status, "cudnnConvolutionBiasActivationForward", __FILE__, __LINE__);
  state = Fused::on;
  return true;
}

}  // namespace dit::cuda
