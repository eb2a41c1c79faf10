// Device buffers for the VAE GPU tests: upload float values as f32/f16/bf16, download them
// back as float, and poison with all-one bytes (a NaN in every element type), so an element a
// kernel never wrote shows up as non-finite.
#pragma once

#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/cuda_types.h"
#include "core/safetensors.h"

namespace dit::test {

// The value a float becomes when stored as `dtype` (what the kernel sees as input).
inline float round_to(float value, cuda::DeviceDtype dtype) {
  switch (dtype) {
    case cuda::DeviceDtype::f16: return f16_bits_to_float(float_to_f16_bits(value));
    case cuda::DeviceDtype::bf16: return bf16_bits_to_float(float_to_bf16_bits(value));
    default: return value;
  }
}

class DeviceBuffer {
 public:
  DeviceBuffer(size_t count, cuda::DeviceDtype dtype) : count_(count), dtype_(dtype) {
    DIT_CUDA_CHECK(cudaMalloc(&pointer_, bytes()));
  }
  DeviceBuffer(const std::vector<float>& values, cuda::DeviceDtype dtype) : DeviceBuffer(values.size(), dtype) {
    upload(values);
  }
  ~DeviceBuffer() { cudaFree(pointer_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return pointer_; }
  size_t bytes() const { return count_ * cuda::dtype_bytes(dtype_); }

  void upload(const std::vector<float>& values) {
    std::vector<std::byte> raw(bytes());
    for (size_t i = 0; i < count_; ++i) {
      if (dtype_ == cuda::DeviceDtype::f32) {
        std::memcpy(raw.data() + 4 * i, &values[i], 4);
      } else {
        const uint16_t bits = dtype_ == cuda::DeviceDtype::f16 ? float_to_f16_bits(values[i]) : float_to_bf16_bits(values[i]);
        std::memcpy(raw.data() + 2 * i, &bits, 2);
      }
    }
    DIT_CUDA_CHECK(cudaMemcpy(pointer_, raw.data(), raw.size(), cudaMemcpyHostToDevice));
  }

  std::vector<float> download() const {
    std::vector<std::byte> raw(bytes());
    DIT_CUDA_CHECK(cudaDeviceSynchronize());
    DIT_CUDA_CHECK(cudaMemcpy(raw.data(), pointer_, raw.size(), cudaMemcpyDeviceToHost));
    std::vector<float> values(count_);
    for (size_t i = 0; i < count_; ++i) {
      if (dtype_ == cuda::DeviceDtype::f32) {
        std::memcpy(&values[i], raw.data() + 4 * i, 4);
      } else {
        uint16_t bits;
        std::memcpy(&bits, raw.data() + 2 * i, 2);
        values[i] = dtype_ == cuda::DeviceDtype::f16 ? f16_bits_to_float(bits) : bf16_bits_to_float(bits);
      }
    }
    return values;
  }

  void poison() { DIT_CUDA_CHECK(cudaMemset(pointer_, 0xff, bytes())); }

 private:
  size_t count_;
  cuda::DeviceDtype dtype_;
  void* pointer_ = nullptr;
};

}  // namespace dit::test
