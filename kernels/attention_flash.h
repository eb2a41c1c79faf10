// FlashAttention-2-style attention on tensor cores (sm_80+: mma.sync, ldmatrix, cp.async) for
// fp16/bf16 and head sizes 64 and 72 (DiT-XL/2); float32 softmax statistics and accumulation.
// Same layout and result as dit::cuda::attention_naive (kernels/attention.h), its reference.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda_types.h"

namespace dit::cuda {

// How a call is laid out (kernels/attention_flash.cu says why): blocks of four warps with 16 x
// row_tiles (1 or 2) query rows each. Every form gives bit-identical results.
struct FlashForm {
  int row_tiles = 1;
};

// Whether attention_flash handles this dtype and head size.
bool attention_flash_supported(DeviceDtype dtype, int head_dim);

// Every form, and the one attention_flash takes for a shape on the current device (two row tiles
// where their 128-row blocks fill every SM at least once).
std::vector<FlashForm> attention_flash_forms();
FlashForm attention_flash_default_form(int B, int T, int H);
std::string flash_form_name(FlashForm form);  // "rows64", "rows128"

// qkv [B, T, 3, H, hd] -> out [B, T, H, hd], both in `dtype` (f16 or bf16), 16-byte aligned.
void attention_flash(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, cudaStream_t stream);
// The same in a given form (one of attention_flash_forms(); any other throws).
void attention_flash(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, FlashForm form,
                     cudaStream_t stream);

}  // namespace dit::cuda
