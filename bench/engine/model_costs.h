// Fixed during a session (the performance harness).
// Work counts for the rate counters: floating-point operations of one DiT forward pass (two per
// multiply-accumulate, matrix products and attention only, as the DiT paper counts) and the
// bytes a pass must at least move (every weight read once at the run's precision).
#pragma once

#include "model/config.h"
#include "model/dit_model.h"
#include "model/vae.h"

namespace dit::bench {

// Multiply-accumulates of one forward pass of one sample: patch embedding, timestep MLP, per
// block adaLN + qkv + attention (q k^T and p v) + projection + MLP, final layer.
double forward_macs_per_sample(const ModelConfig& config);
double forward_flops(const ModelConfig& config, int batch);
// Bytes of the weights at `precision` (2 for fp16/bf16, 4 otherwise).
double weight_bytes(const ModelConfig& config, Precision precision);

// Multiply-accumulates of the VAE decoder for one latent of `latent_size` squared: every
// convolution (3x3 and 1x1 shortcuts) and the mid-block attention (projections, q k^T, p v).
double vae_decoder_macs(const VaeConfig& config, int latent_size);

}  // namespace dit::bench
