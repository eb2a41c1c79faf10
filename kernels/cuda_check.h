// Checks for every CUDA runtime and cuBLASLt call and every kernel launch: a failure throws
// dit::Error(ErrorKind::device) naming the file, the line, the call and the library's message.
//   DIT_CUDA_CHECK(cudaMemcpyAsync(...));
//   kernel<<<grid, block, 0, stream>>>(...); DIT_LAUNCH_CHECK();
//   DIT_CUBLAS_CHECK(cublasLtMatmul(...));
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "core/error.h"

namespace dit::cuda {

[[noreturn]] inline void throw_device_error(const char* file, int line, const char* call, const std::string& message) {
  throw Error(ErrorKind::device, std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + message);
}

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    throw_device_error(file, line, call,
                       std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")");
}

// cublasGetStatusString lives in libcublas, which this project does not link: name them here.
inline const char* cublas_status_name(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED (no usable GPU or context)";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE (bad argument or layout)";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED (no kernel for this type/layout combination)";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cublasStatus_t";
  }
}

inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw_device_error(
        file, line, call,
        std::string(cublas_status_name(status)) + " (status " + std::to_string(static_cast<int>(status)) + ")");
}

}  // namespace dit::cuda

#define DIT_CUDA_CHECK(call) ::dit::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define DIT_CUBLAS_CHECK(call) ::dit::cuda::check_cublas((call), #call, __FILE__, __LINE__)
// After every launch: reports a bad launch configuration (grid, block, shared memory) at once.
// Faults inside the kernel surface at the next synchronising call, which is checked too.
#define DIT_LAUNCH_CHECK() ::dit::cuda::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
