// Work counts for the rate counters: floating-point operations of one DiT forward pass (two per
// multiply-accumulate, matrix products and attention only, as the DiT paper counts) and the
// bytes a pass must at least move (every weight read once at the run's precision).
#pragma once

#include "model/config.h"
#include "model/dit_model.h"

namespace dit::bench {

// Multiply-accumulates of one forward pass of one sample: patch embedding, timestep MLP, per
// block adaLN + qkv + attention (q k^T and p v) + projection + MLP, final layer.
double forward_macs_per_sample(const ModelConfig& config);
double forward_flops(const ModelConfig& config, int batch);
// Bytes of the weights at `precision` (2 for fp16/bf16, 4 otherwise).
double weight_bytes(const ModelConfig& config, Precision precision);

}  // namespace dit::bench
