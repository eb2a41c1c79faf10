// The host image of the CUDA VAE decoder's weights (model/cuda/vae_cuda.cpp): one allocation and
// one copy to the device, every parameter at a 256-byte-aligned offset in it. Host code only, so
// it is tested without a GPU (tests/model/cuda/vae_weight_staging_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/cuda_types.h"
#include "model/vae.h"

namespace dit::cuda {

// Offsets into the device copy of the weights.
struct ConvParams {
  size_t weight = 0, bias = 0;  // [Cout, k, k, Cin] storage type, [Cout] float32
  // The same bias [Cout] in the 16-bit storage type, for cuDNN's fused call; staged only when
  // the decoder fuses biases.
  std::optional<size_t> fused_bias;
  int in_channels = 0, out_channels = 0, kernel = 0;
};
struct NormParams {
  size_t gamma = 0, beta = 0;  // [C] float32
};

// Built parameter by parameter. With `fused_bias`, each convolution's bias is staged twice:
// float32 for the bias kernel, the storage type for cuDNN.
class WeightStaging {
 public:
  // `reserve_bytes`: about what the staged image will hold, so that it grows without copies.
  explicit WeightStaging(DeviceDtype dtype, bool fused_bias = false, size_t reserve_bytes = 0);

  // `values` in `dtype` (narrowed to nearest even from float32) at the next offset; returns it.
  size_t add(const std::vector<float>& values, DeviceDtype dtype);
  size_t add(const std::vector<float>& values) { return add(values, dtype_); }

  // The convolution `prefix`weight and `prefix`bias: PyTorch [Cout, Cin, k, k] to
  // [out_pad, k, k, in_pad] in the storage type (zero padded), the bias (plus `extra_bias`, in
  // float32) to [out_pad] float32, and again in the storage type when biases are fused.
  ConvParams conv(const VaeWeights& weights, const std::string& prefix, int in_pad, int out_pad,
                  const Tensor* extra_bias = nullptr);
  NormParams norm(const VaeWeights& weights, const std::string& prefix);

  const std::vector<std::byte>& bytes() const { return bytes_; }
  std::vector<std::byte> take_bytes() { return std::move(bytes_); }

 private:
  // `count` zero bytes at the next aligned offset of the image; returns that offset.
  size_t append_zeros(size_t count);

  DeviceDtype dtype_;
  bool fused_bias_;
  std::vector<std::byte> bytes_;
  std::vector<uint16_t> narrowed_;  // 16-bit images of the tensor being added
};

}  // namespace dit::cuda
