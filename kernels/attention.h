// Multi-head self-attention core: softmax(q k^T / sqrt(hd)) v per head.
#pragma once

namespace dit::cpu {

// qkv [B, T, 3, H, hd] (the qkv Linear's output as upstream lays it out) ->
// out [B, T, H, hd] (heads concatenated head-major). float64 scores, softmax and sums.
void attention(const float* qkv, float* out, int B, int T, int H, int hd);

}  // namespace dit::cpu
