#include "bench/engine/model_costs.h"

namespace dit::bench {

double forward_macs_per_sample(const ModelConfig& config) {
  const double tokens = config.tokens();
  const double hidden = config.hidden_size;
  const double patch_inputs = static_cast<double>(config.in_channels) * config.patch_size * config.patch_size;
  const double patch_outputs = static_cast<double>(config.patch_size) * config.patch_size * config.out_channels();
  const double embed = tokens * hidden * patch_inputs + 256.0 * hidden + hidden * hidden;
  const double block = 6.0 * hidden * hidden                           // adaLN modulation
                       + tokens * hidden * 3.0 * hidden                // qkv
                       + 2.0 * tokens * tokens * hidden                // q k^T and p v over all heads
                       + tokens * hidden * hidden                      // attention projection
                       + 2.0 * tokens * hidden * config.mlp_hidden();  // fc1 and fc2
  const double final_layer = 2.0 * hidden * hidden + tokens * hidden * patch_outputs;
  return embed + config.depth * block + final_layer;
}

double forward_flops(const ModelConfig& config, int batch) { return 2.0 * forward_macs_per_sample(config) * batch; }

double weight_bytes(const ModelConfig& config, Precision precision) {
  const double element = (precision == Precision::fp16 || precision == Precision::bf16) ? 2.0 : 4.0;
  return element * static_cast<double>(config.parameter_count());
}

double vae_decoder_macs(const VaeConfig& config, int latent_size) {
  auto conv = [](double size, double in, double out, double kernel) {
    return size * size * in * out * kernel * kernel;
  };
  const std::vector<int>& channels = config.block_out_channels;
  double size = latent_size;
  double channel = channels.back();
  double macs = conv(size, config.latent_channels, config.latent_channels, 1)  // post_quant_conv
                + conv(size, config.latent_channels, channel, 3);              // conv_in
  auto resnet = [&](double in, double out) {
    return conv(size, in, out, 3) + conv(size, out, out, 3) + (in != out ? conv(size, in, out, 1) : 0.0);
  };
  const double pixels = size * size;
  macs += 2 * resnet(channel, channel) + 4 * pixels * channel * channel + 2 * pixels * pixels * channel;
  for (size_t block = 0; block < channels.size(); ++block) {
    const double out = channels[channels.size() - 1 - block];
    for (int layer = 0; layer <= config.layers_per_block; ++layer) {
      macs += resnet(layer == 0 ? channel : out, out);
    }
    channel = out;
    if (block + 1 < channels.size()) {
      size *= 2;
      macs += conv(size, channel, channel, 3);  // the upsampler's convolution after 2x nearest
    }
  }
  return macs + conv(size, channel, config.out_channels, 3);  // conv_out
}

}  // namespace dit::bench
