#include "bench/support/model_costs.h"

namespace dit::bench {

double forward_macs_per_sample(const ModelConfig& config) {
  const double tokens = config.tokens();
  const double hidden = config.hidden_size;
  const double patch_inputs = static_cast<double>(config.in_channels) * config.patch_size * config.patch_size;
  const double patch_outputs = static_cast<double>(config.patch_size) * config.patch_size * config.out_channels();
  const double embed = tokens * hidden * patch_inputs + 256.0 * hidden + hidden * hidden;
  const double block = 6.0 * hidden * hidden                       // adaLN modulation
                       + tokens * hidden * 3.0 * hidden            // qkv
                       + 2.0 * tokens * tokens * hidden            // q k^T and p v over all heads
                       + tokens * hidden * hidden                  // attention projection
                       + 2.0 * tokens * hidden * config.mlp_hidden();  // fc1 and fc2
  const double final_layer = 2.0 * hidden * hidden + tokens * hidden * patch_outputs;
  return embed + config.depth * block + final_layer;
}

double forward_flops(const ModelConfig& config, int batch) {
  return 2.0 * forward_macs_per_sample(config) * batch;
}

double weight_bytes(const ModelConfig& config, Precision precision) {
  const double element = (precision == Precision::fp16 || precision == Precision::bf16) ? 2.0 : 4.0;
  return element * static_cast<double>(config.parameter_count());
}

}  // namespace dit::bench
