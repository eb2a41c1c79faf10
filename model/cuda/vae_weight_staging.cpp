#include "model/cuda/vae_weight_staging.h"

#include <cstring>

#include "core/half.h"
#include "model/cuda/device_arena.h"

namespace dit::cuda {

WeightStaging::WeightStaging(DeviceDtype dtype, bool fused_bias, size_t reserve_bytes)
    : dtype_(dtype), fused_bias_(fused_bias) {
  bytes_.reserve(reserve_bytes);
}

size_t WeightStaging::append_zeros(size_t count) {
  const size_t offset = align_up(bytes_.size());
  bytes_.resize(offset + count);
  return offset;
}

size_t WeightStaging::add(const std::vector<float>& values, DeviceDtype dtype) {
  const size_t offset = append_zeros(values.size() * dtype_bytes(dtype));
  std::byte* out = bytes_.data() + offset;
  if (dtype == DeviceDtype::f32) {
    std::memcpy(out, values.data(), values.size() * 4);
  } else {
    narrowed_.resize(values.size());
    if (dtype == DeviceDtype::f16)
      floats_to_f16_bits(values.data(), narrowed_.data(), values.size());
    else
      floats_to_bf16_bits(values.data(), narrowed_.data(), values.size());
    std::memcpy(out, narrowed_.data(), values.size() * 2);
  }
  return offset;
}

// PyTorch [Cout, Cin, k, k] -> [Cout_pad, k, k, Cin_pad] (zero padded), bias [Cout_pad]. Each
// (output channel, tap) row of Cin values is gathered and narrowed straight into the image,
// rows split over the cores: a float32 copy of the packed weight would cost a page fault per
// 4 KB of fresh memory, and the narrowing a second pass (230-340 ms on an H200 host that way).
ConvParams WeightStaging::conv(const VaeWeights& weights, const std::string& prefix, int in_pad, int out_pad,
                               const Tensor* extra_bias) {
  const Tensor& w = weights.at(prefix + "weight");
  const Tensor& b = weights.at(prefix + "bias");
  const int out = static_cast<int>(w.shape[0]), in = static_cast<int>(w.shape[1]), k = static_cast<int>(w.shape[2]);
  const int taps = k * k;
  const size_t element = dtype_bytes(dtype_);
  const size_t offset = append_zeros(static_cast<size_t>(out_pad) * taps * in_pad * element);
  std::byte* image = bytes_.data() + offset;
  const DeviceDtype dtype = dtype_;
  const float* source = w.data.data();
  const int64_t rows = static_cast<int64_t>(out) * taps;
#pragma omp parallel if (rows * in > 65536)
  {
    std::vector<float> row(static_cast<size_t>(in));
    std::vector<uint16_t> narrowed(dtype == DeviceDtype::f32 ? 0 : static_cast<size_t>(in));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r / taps, t = r % taps;
      for (int i = 0; i < in; ++i) row[static_cast<size_t>(i)] = source[(o * in + i) * taps + t];
      std::byte* target = image + static_cast<size_t>(r) * in_pad * element;
      if (dtype == DeviceDtype::f32) {
        std::memcpy(target, row.data(), static_cast<size_t>(in) * sizeof(float));
        continue;
      }
      if (dtype == DeviceDtype::f16)
        floats_to_f16_bits_serial(row.data(), narrowed.data(), static_cast<size_t>(in));
      else
        floats_to_bf16_bits_serial(row.data(), narrowed.data(), static_cast<size_t>(in));
      std::memcpy(target, narrowed.data(), static_cast<size_t>(in) * sizeof(uint16_t));
    }
  }
  std::vector<float> bias(out_pad, 0.0f);
  for (int o = 0; o < out; ++o) bias[o] = b.data[o] + (extra_bias ? extra_bias->data[o] : 0.0f);
  ConvParams params;
  params.weight = offset;
  params.bias = add(bias, DeviceDtype::f32);
  if (fused_bias_) params.fused_bias = add(bias);  // rounded once from the float32 sum above
  params.in_channels = in_pad;
  params.out_channels = out_pad;
  params.kernel = k;
  return params;
}

NormParams WeightStaging::norm(const VaeWeights& weights, const std::string& prefix) {
  return {add(weights.at(prefix + "weight").data, DeviceDtype::f32),
          add(weights.at(prefix + "bias").data, DeviceDtype::f32)};
}

}  // namespace dit::cuda
