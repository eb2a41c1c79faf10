// Shared by the smoke tests of this folder: a CUDA runtime call that must succeed, asserted with
// the call's text, its place and the runtime's message.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#define ASSERT_CUDA_SUCCESS(call)                                                             \
  do {                                                                                        \
    const cudaError_t status_ = (call);                                                       \
    ASSERT_EQ(status_, cudaSuccess) << #call << " at " << __FILE__ << ":" << __LINE__ << ": " \
                                    << cudaGetErrorString(status_);                           \
  } while (0)
