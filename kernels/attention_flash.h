// FlashAttention-2-style attention on tensor cores (sm_80+: mma.sync, ldmatrix, cp.async) for
// fp16/bf16 and head sizes 64 and 72 (DiT-XL/2); float32 softmax statistics and accumulation.
// Same layout and result as dit::cuda::attention_naive (kernels/attention.h), its reference.
#pragma once

#include "kernels/cuda_types.h"

namespace dit::cuda {

// Whether attention_flash handles this dtype and head size.
bool attention_flash_supported(DeviceDtype dtype, int head_dim);

// qkv [B, T, 3, H, hd] -> out [B, T, H, hd], both in `dtype` (f16 or bf16), 16-byte aligned.
void attention_flash(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd,
                     cudaStream_t stream);

// attention_flash where supported (f16/bf16), else attention_tiled (f32, kernels/attention_tiled.h)
// where supported, else attention_naive.
void attention(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, cudaStream_t stream);

}  // namespace dit::cuda
