// Multi-head self-attention core: softmax(q k^T / sqrt(hd)) v per head.
#pragma once

namespace dit::cpu {

// qkv [B, T, 3, H, hd] (the qkv Linear's output as upstream lays it out) ->
// out [B, T, H, hd] (heads concatenated head-major). float64 scores, softmax and sums.
void attention(const float* qkv, float* out, int B, int T, int H, int hd);

}  // namespace dit::cpu

#if defined(DIT_WITH_CUDA)
#include "kernels/cuda_types.h"

namespace dit::cuda {

// As dit::cpu::attention, for any head size and dtype (float32 scores, softmax and sums): one
// block per (query, head, batch). The correctness reference for the fast kernels.
// qkv [B, T, 3, H, hd] -> out [B, T, H, hd], both in `dtype`.
void attention_naive(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, cudaStream_t stream);

// The engine's attention: attention_flash where supported (f16/bf16, kernels/attention_flash.h),
// else attention_tiled (f32, kernels/attention_tiled.h) where supported, else attention_naive.
void attention(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, cudaStream_t stream);

}  // namespace dit::cuda
#endif
