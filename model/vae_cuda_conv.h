// The VAE decoder's convolutions on cuDNN: channels-last (NHWC) tensors, stride 1, zero padding
// k/2, float32 accumulation. The algorithm comes from cuDNN's heuristic ranking
// (cudnnGetConvolutionForwardAlgorithm_v7; no timing), filtered to deterministic algorithms, so
// the same GPU, cuDNN and shape give the same algorithm, and the same bytes, in every process.
// cuDNN 9 marks this classic API deprecated but ships it; it is enough for fixed 3x3/1x1 shapes.
// Internal to model/.
#pragma once

#include <cudnn.h>

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

class CudnnConv {
 public:
  // Picks the algorithm for `shape` at `precision` (fp32: FMA-only arithmetic, no TF32; tf32:
  // TF32 allowed; fp16/bf16: tensor cores, 16-bit tensors). Throws dit::Error(device) naming
  // the candidates when no deterministic algorithm fits.
  CudnnConv(cudnnHandle_t handle, const ConvShape& shape, Precision precision);

  size_t workspace_bytes() const { return workspace_bytes_; }
  const std::string& algorithm_name() const { return algorithm_name_; }

  // out = conv(in, weight) + (accumulate ? out : 0). in [N, H, W, Cin], weight [Cout, k, k, Cin],
  // out [N, H, W, Cout], all in the precision's storage type; `workspace` of workspace_bytes().
  // Enqueued on the handle's stream. (The bias is a separate kernel, kernels/vae_bias.h.)
  void run(const void* in, const void* weight, void* out, bool accumulate, void* workspace) const;

 private:
  template <typename Descriptor, cudnnStatus_t (*kDestroy)(Descriptor)>
  struct Destroy {
    void operator()(Descriptor d) const { kDestroy(d); }
  };
  using TensorDesc = std::unique_ptr<cudnnTensorStruct, Destroy<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>>;
  using FilterDesc = std::unique_ptr<cudnnFilterStruct, Destroy<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>>;
  using ConvDesc = std::unique_ptr<cudnnConvolutionStruct,
                                   Destroy<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>>;
  static TensorDesc tensor_desc(cudnnDataType_t type, int N, int C, int H, int W);

  cudnnHandle_t handle_;
  TensorDesc in_desc_, out_desc_;
  FilterDesc filter_desc_;
  ConvDesc conv_desc_;
  cudnnConvolutionFwdAlgo_t algorithm_{};
  size_t workspace_bytes_ = 0;
  std::string algorithm_name_;
};

// The storage type of activations and weights at `precision` (f32 for fp32 and tf32).
DeviceDtype storage_dtype(Precision precision);
cudnnDataType_t cudnn_dtype(DeviceDtype dtype);


}  // namespace dit::cuda
