// Element types of the CUDA backend's device tensors, the argument checks every public CUDA
// entry runs before launching, and (under nvcc) the float conversions the kernels share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/error.h"

// The runtime's own declaration of cudaStream_t, so that headers declaring CUDA entries can be
// included by host code without the CUDA headers.
typedef struct CUstream_st* cudaStream_t;

namespace dit::cuda {

enum class DeviceDtype { f32, f16, bf16 };

inline const char* dtype_name(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::f32: return "f32";
    case DeviceDtype::f16: return "f16";
    case DeviceDtype::bf16: return "bf16";
  }
  return "?";
}

inline size_t dtype_bytes(DeviceDtype dtype) { return dtype == DeviceDtype::f32 ? 4 : 2; }

// Throws dit::Error(invalid_argument) "<op>: <message>" unless `condition` holds.
inline void require(bool condition, const char* op, const std::string& message) {
  if (!condition) throw Error(ErrorKind::invalid_argument, std::string(op) + ": " + message);
}

inline void require_aligned(const void* pointer, size_t alignment, const char* op, const char* name) {
  require(pointer != nullptr, op, std::string(name) + " is null");
  require(reinterpret_cast<uintptr_t>(pointer) % alignment == 0, op,
          std::string(name) + " is not " + std::to_string(alignment) + "-byte aligned");
}

}  // namespace dit::cuda

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace dit::cuda {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(x);
  else
    return __float2bfloat16_rn(x);
}

// Calls f(std::type_identity<T>{}) with T the element type of `dtype`.
template <typename F>
void dispatch_dtype(DeviceDtype dtype, F&& f) {
  switch (dtype) {
    case DeviceDtype::f32: f(std::type_identity<float>{}); return;
    case DeviceDtype::f16: f(std::type_identity<__half>{}); return;
    case DeviceDtype::bf16: f(std::type_identity<__nv_bfloat16>{}); return;
  }
}

}  // namespace dit::cuda
#endif
