// Tiled attention on CUDA cores for float32 storage (the fp32 and tf32 compute paths): fp32 FMA
// throughout, an online softmax in float32, any head size from 1 to 128. Same layout and result
// as dit::cuda::attention_naive (kernels/attention.h), its reference.
#pragma once

#include "kernels/cuda_types.h"

namespace dit::cuda {

// Whether attention_tiled handles this dtype and head size (f32, 1 <= head_dim <= 128).
bool attention_tiled_supported(DeviceDtype dtype, int head_dim);

// qkv [B, T, 3, H, hd] -> out [B, T, H, hd], both float32 (4-byte aligned; 16-byte aligned qkv
// with hd % 4 == 0 takes the vector loads).
void attention_tiled(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, cudaStream_t stream);

}  // namespace dit::cuda
