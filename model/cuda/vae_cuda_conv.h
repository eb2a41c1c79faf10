// The VAE decoder's convolutions on cuDNN: channels-last (NHWC) tensors, stride 1, zero padding
// k/2, float32 accumulation. The algorithm comes from cuDNN's heuristic ranking
// (cudnnGetConvolutionForwardAlgorithm_v7; no timing), filtered to deterministic algorithms, so
// the same GPU, cuDNN and shape give the same algorithm, and the same bytes, in every process.
// cuDNN 9 marks this classic API deprecated but ships it; it is enough for fixed 3x3/1x1 shapes.
//
// A plan may also carry the fused form, cudnnConvolutionBiasActivationForward with an identity
// activation: out = conv(in) + z + bias in one call, where z is the output itself (a residual)
// or nothing. With that activation cuDNN runs the call only with IMPLICIT_PRECOMP_GEMM, so the
// plan keeps a second algorithm for it, taken from the same ranking and filter. Where cuDNN has
// no such algorithm for the shape, or declines the call, the caller adds the bias with its own
// kernel.
// Internal to model/.
#pragma once

#include <cudnn.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>

#include "kernels/cuda_types.h"
#include "model/dit_model.h"

#define DIT_CUDNN_CHECK(call) ::dit::cuda::check_cudnn((call), #call, __FILE__, __LINE__)

namespace dit::cuda {

void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line);

// Largest workspace one convolution may take; algorithms needing more are passed over.
constexpr size_t kConvWorkspaceLimit = size_t{256} << 20;

struct ConvShape {
  int N = 0, H = 0, W = 0, in_channels = 0, out_channels = 0, kernel = 3;
  auto operator<=>(const ConvShape&) const = default;
};

// Whether `candidate`, one entry of cuDNN's heuristic ranking, may run the fused bias call at
// `precision`: an algorithm the plain call would accept there (deterministic, within the
// workspace limit, the fp32 restrictions), and IMPLICIT_PRECOMP_GEMM, the only algorithm
// cudnnConvolutionBiasActivationForward takes with an identity activation.
bool fused_bias_candidate(const cudnnConvolutionFwdAlgoPerf_t& candidate, Precision precision);

class CudnnConv {
 public:
  // Picks the algorithm for `shape` at `precision` (fp32: FMA-only arithmetic, no TF32; tf32:
  // TF32 allowed; fp16/bf16: tensor cores, 16-bit tensors). Throws dit::Error(device) naming
  // the candidates when no deterministic algorithm fits. With `fuse_bias`, also plans the fused
  // call where the ranking holds a fused_bias_candidate() whose workspace fits; without one the
  // plan simply has no fused form (fused_algorithm_name() is empty).
  CudnnConv(cudnnHandle_t handle, const ConvShape& shape, Precision precision, bool fuse_bias = false);

  // What run() and run_with_bias() together may need.
  size_t workspace_bytes() const { return std::max(workspace_bytes_, fused_workspace_bytes_); }
  const std::string& algorithm_name() const { return algorithm_name_; }
  const std::string& fused_algorithm_name() const { return fused_algorithm_name_; }

  // out = conv(in, weight) + (accumulate ? out : 0). in [N, H, W, Cin], weight [Cout, k, k, Cin],
  // out [N, H, W, Cout], all in the precision's storage type; `workspace` of workspace_bytes().
  // Enqueued on the handle's stream. The bias, if any, is then the caller's (kernels/vae_bias.h).
  void run(const void* in, const void* weight, void* out, bool accumulate, void* workspace) const;

  // As run(), plus bias [Cout] (storage type) added inside the same cuDNN call, so the sum is
  // rounded once. Returns false, having enqueued nothing, where the plan has no fused form or
  // cuDNN has declined it for this `accumulate` (the first call in each mode finds out, and a
  // "not supported" answer turns the fused form off for that mode, for good); the caller then
  // runs run() and adds the bias itself. Other cuDNN errors throw, as in run().
  bool run_with_bias(const void* in, const void* weight, const void* bias, void* out, bool accumulate, void* workspace);

  // Whether run_with_bias() would try the fused call in this mode.
  bool fuses_bias(bool accumulate) const { return fused_[accumulate] != Fused::off; }

 private:
  template <typename Descriptor, cudnnStatus_t (*kDestroy)(Descriptor)>
  struct Destroy {
    void operator()(Descriptor d) const { kDestroy(d); }
  };
  using TensorDesc = std::unique_ptr<cudnnTensorStruct, Destroy<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>>;
  using FilterDesc = std::unique_ptr<cudnnFilterStruct, Destroy<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>>;
  using ConvDesc =
      std::unique_ptr<cudnnConvolutionStruct, Destroy<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>>;
  using ActivationDesc =
      std::unique_ptr<cudnnActivationStruct, Destroy<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>>;
  static TensorDesc tensor_desc(cudnnDataType_t type, int N, int C, int H, int W);
  static ConvDesc conv_desc(const ConvShape& shape, cudnnMathType_t math);
  void plan_fused_bias(const ConvShape& shape, Precision precision, cudnnDataType_t type,
                       const cudnnConvolutionFwdAlgoPerf_t* candidates, int count);

  // off: no fused call (not planned, or declined); untried: planned, not yet run in this mode;
  // on: cuDNN has run it in this mode.
  enum class Fused : unsigned char { off, untried, on };

  cudnnHandle_t handle_;
  TensorDesc in_desc_, out_desc_;
  FilterDesc filter_desc_;
  ConvDesc conv_desc_;
  cudnnConvolutionFwdAlgo_t algorithm_{};
  size_t workspace_bytes_ = 0;
  std::string algorithm_name_;
  // The fused form: its own convolution descriptor, since its algorithm's math type may differ.
  TensorDesc bias_desc_;
  ConvDesc fused_conv_desc_;
  ActivationDesc identity_;
  cudnnConvolutionFwdAlgo_t fused_algorithm_{};
  size_t fused_workspace_bytes_ = 0;
  std::string fused_algorithm_name_;
  std::array<Fused, 2> fused_{Fused::off, Fused::off};  // [accumulate]
};

// The storage type of activations and weights at `precision` (f32 for fp32 and tf32).
DeviceDtype storage_dtype(Precision precision);
cudnnDataType_t cudnn_dtype(DeviceDtype dtype);

}  // namespace dit::cuda
