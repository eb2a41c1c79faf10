// Device buffers for the CUDA tests: upload float values converted to a device dtype, poison
// the buffer (float32: test::poison_value(); 16-bit: 0xFFFF, a NaN no kernel writes), and
// download back to float with a count of the elements that were never overwritten.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/cuda_types.h"
#include "tests/support/test_support.h"

namespace dit::test {

constexpr uint16_t kPoison16 = 0xFFFF;

inline uint16_t encode16(float v, cuda::DeviceDtype dtype) {
  if (dtype == cuda::DeviceDtype::f16) return static_cast<__half_raw>(__float2half_rn(v)).x;
  return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(v)).x;
}

inline float decode16(uint16_t bits, cuda::DeviceDtype dtype) {
  if (dtype == cuda::DeviceDtype::f16) {
    __half_raw raw;
    raw.x = bits;
    return __half2float(__half(raw));
  }
  __nv_bfloat16_raw raw;
  raw.x = bits;
  return __bfloat162float(__nv_bfloat16(raw));
}

// The values a device buffer of `dtype` holds after uploading `values`.
inline std::vector<float> round_to(const std::vector<float>& values, cuda::DeviceDtype dtype) {
  if (dtype == cuda::DeviceDtype::f32) return values;
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = decode16(encode16(values[i], dtype), dtype);
  return out;
}

inline std::vector<double> to_double(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

class DeviceTensor {
 public:
  DeviceTensor(size_t count, cuda::DeviceDtype dtype = cuda::DeviceDtype::f32) : count_(count), dtype_(dtype) {
    DIT_CUDA_CHECK(cudaMalloc(&data_, bytes() ? bytes() : 1));
  }
  explicit DeviceTensor(const std::vector<float>& values, cuda::DeviceDtype dtype = cuda::DeviceDtype::f32)
      : DeviceTensor(values.size(), dtype) {
    upload(values);
  }
  ~DeviceTensor() { cudaFree(data_); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  void* data() const { return data_; }
  float* f32() const { return static_cast<float*>(data_); }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * cuda::dtype_bytes(dtype_); }

  void upload(const std::vector<float>& values) {
    if (values.size() != count_) throw Error(ErrorKind::invalid_argument, "DeviceTensor::upload: size mismatch");
    if (dtype_ == cuda::DeviceDtype::f32) {
      DIT_CUDA_CHECK(cudaMemcpy(data_, values.data(), bytes(), cudaMemcpyHostToDevice));
      return;
    }
    std::vector<uint16_t> raw(count_);
    for (size_t i = 0; i < count_; ++i) raw[i] = encode16(values[i], dtype_);
    DIT_CUDA_CHECK(cudaMemcpy(data_, raw.data(), bytes(), cudaMemcpyHostToDevice));
  }

  void poison() {
    if (dtype_ == cuda::DeviceDtype::f32) {
      std::vector<float> values(count_);
      test::poison(values);
      DIT_CUDA_CHECK(cudaMemcpy(data_, values.data(), bytes(), cudaMemcpyHostToDevice));
    } else {
      DIT_CUDA_CHECK(cudaMemset(data_, 0xFF, bytes()));
    }
  }

  // Synchronises the device first (so a kernel fault is reported here, by name).
  std::vector<float> download(size_t* never_written = nullptr) const {
    DIT_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> out(count_);
    size_t poisoned = 0;
    if (dtype_ == cuda::DeviceDtype::f32) {
      DIT_CUDA_CHECK(cudaMemcpy(out.data(), data_, bytes(), cudaMemcpyDeviceToHost));
      poisoned = test::count_poisoned(out);
    } else {
      std::vector<uint16_t> raw(count_);
      DIT_CUDA_CHECK(cudaMemcpy(raw.data(), data_, bytes(), cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < count_; ++i) {
        poisoned += raw[i] == kPoison16;
        out[i] = decode16(raw[i], dtype_);
      }
    }
    if (never_written) *never_written = poisoned;
    return out;
  }

 private:
  void* data_ = nullptr;
  size_t count_;
  cuda::DeviceDtype dtype_;
};

// A device copy of a plain array (labels, timesteps, seeds).
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& values) : count_(values.size()) {
    DIT_CUDA_CHECK(cudaMalloc(&data_, count_ * sizeof(T) + 1));
    DIT_CUDA_CHECK(cudaMemcpy(data_, values.data(), count_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* data() const { return data_; }

 private:
  T* data_ = nullptr;
  size_t count_;
};

inline const char* dtype_suffix(cuda::DeviceDtype dtype) {
  switch (dtype) {
    case cuda::DeviceDtype::f32: return "fp32";
    case cuda::DeviceDtype::f16: return "fp16";
    case cuda::DeviceDtype::bf16: return "bf16";
  }
  return "?";
}

}  // namespace dit::test
