// The VAE decoder's structure, derived from a VaeConfig, in diffusers' naming: which resnets,
// attention and upsamplers there are, their channels and parameter names. Shared by the
// weights loader and every backend, so they walk the same graph. Internal to model/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/vae.h"

namespace dit::vae {

struct ResnetLayout {
  std::string prefix;  // "decoder.up_blocks.1.resnets.0."
  int in_channels = 0, out_channels = 0;
  bool has_shortcut() const { return in_channels != out_channels; }  // 1x1 conv_shortcut
};

struct UpBlockLayout {
  std::vector<ResnetLayout> resnets;  // layers_per_block + 1
  int channels = 0;
  std::string upsampler_prefix;  // "decoder.up_blocks.0.upsamplers.0.conv."; empty on the last
};

struct DecoderLayout {
  int latent_channels = 0;
  int top_channels = 0;     // block_out_channels.back(): conv_in, mid block
  int bottom_channels = 0;  // block_out_channels.front(): conv_norm_out, conv_out
  int out_channels = 0;
  ResnetLayout mid_resnets[2];
  std::vector<UpBlockLayout> up_blocks;  // diffusers order: lowest resolution first
  int upscale() const;                   // 2^(number of upsamplers)
};

inline constexpr const char* kMidAttentionPrefix = "decoder.mid_block.attentions.0.";

DecoderLayout decoder_layout(const VaeConfig& config);

// Every parameter of the decoder by diffusers name, with its shape (attention projections as
// Linear weights [C, C]).
std::map<std::string, std::vector<int64_t>> parameter_shapes(const VaeConfig& config);

// The original LDM (CompVis) name of a diffusers parameter name; the names that both layouts
// share map to themselves. `config` gives the number of up blocks (LDM numbers them in reverse).
std::string ldm_name(const std::string& diffusers_name, const VaeConfig& config);

}  // namespace dit::vae
