// VaeConfig: presets, validation, JSON; and the decoder layout derived from it.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/vae.h"
#include "model/vae_layout.h"

namespace dit::vae {
// Without validation: for VaeConfig::validate's parameter count, on fields already in bounds.
DecoderLayout layout_of(const VaeConfig& config);
std::map<std::string, std::vector<int64_t>> shapes_of(const DecoderLayout& layout);
}  // namespace dit::vae

namespace dit {

void VaeConfig::validate() const {
  auto fail = [](const std::string& message) { throw Error(ErrorKind::invalid_argument, "VAE config: " + message); };
  auto bound = [&](const std::string& field, int value, int most) {
    if (value <= 0 || value > most)
      fail(field + " = " + std::to_string(value) + " is outside 1.." + std::to_string(most));
  };
  bound("latent_channels", latent_channels, vae_limits::kMaxLatentChannels);
  bound("out_channels", out_channels, vae_limits::kMaxOutChannels);
  bound("layers_per_block", layers_per_block, vae_limits::kMaxLayersPerBlock);
  bound("norm_num_groups", norm_num_groups, vae_limits::kMaxNormGroups);
  if (!(norm_eps > 0) || !(norm_eps < 1)) fail("norm_eps must be in (0, 1)");
  if (block_out_channels.empty()) fail("block_out_channels is empty");
  if (block_out_channels.size() > static_cast<size_t>(vae_limits::kMaxBlocks))
    fail("block_out_channels has " + std::to_string(block_out_channels.size()) + " blocks, more than " +
         std::to_string(vae_limits::kMaxBlocks));
  for (size_t i = 0; i < block_out_channels.size(); ++i) {
    const int channels = block_out_channels[i];
    const std::string field = "block_out_channels[" + std::to_string(i) + "]";
    bound(field, channels, vae_limits::kMaxBlockChannels);
    if (channels % norm_num_groups != 0)
      fail(field + " = " + std::to_string(channels) +
           " is not a multiple of norm_num_groups = " + std::to_string(norm_num_groups));
  }
  // Within the bounds above every shape's count fits in int64; the total must fit the limit.
  int64_t parameters = 0;
  for (const auto& [name, shape] : vae::shapes_of(vae::layout_of(*this))) parameters += Tensor::count(shape);
  if (parameters > vae_limits::kMaxParameters)
    fail(std::to_string(parameters) + " parameters, more than " + std::to_string(vae_limits::kMaxParameters));
}

VaeConfig sd_vae_config() { return VaeConfig{}; }

// Four blocks like the real decoder (so latents upscale 8x and DiT's image sizes hold), with
// channel counts small enough that a 256x256 decode takes about a second on two CPU cores.
VaeConfig tiny_vae_config() {
  VaeConfig config;
  config.block_out_channels = {32, 32, 64, 64};
  config.layers_per_block = 1;
  config.norm_num_groups = 8;
  return config;
}

VaeConfig vae_config_from_json(const std::string& json_text) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::invalid_file, std::string("VAE config: not JSON: ") + e.what());
  }
  if (!json.is_object()) throw Error(ErrorKind::invalid_file, "VAE config: not a JSON object");
  VaeConfig config;
  auto read = [&](const char* field, auto& target, bool required) {
    if (!json.contains(field)) {
      if (required) throw Error(ErrorKind::invalid_file, std::string("VAE config: missing field ") + field);
      return;
    }
    try {
      json.at(field).get_to(target);
    } catch (const nlohmann::json::exception&) {
      throw Error(ErrorKind::invalid_file, std::string("VAE config: field ") + field + " has the wrong type");
    }
  };
  read("block_out_channels", config.block_out_channels, true);
  read("layers_per_block", config.layers_per_block, true);
  read("latent_channels", config.latent_channels, false);
  read("norm_num_groups", config.norm_num_groups, false);
  read("norm_eps", config.norm_eps, false);
  read("out_channels", config.out_channels, false);
  config.validate();
  return config;
}

}  // namespace dit

namespace dit::vae {

int DecoderLayout::upscale() const {
  int factor = 1;
  for (const auto& block : up_blocks) factor *= block.upsampler_prefix.empty() ? 1 : 2;
  return factor;
}

DecoderLayout decoder_layout(const VaeConfig& config) {
  config.validate();
  return layout_of(config);
}

DecoderLayout layout_of(const VaeConfig& config) {
  DecoderLayout layout;
  layout.latent_channels = config.latent_channels;
  layout.top_channels = config.block_out_channels.back();
  layout.bottom_channels = config.block_out_channels.front();
  layout.out_channels = config.out_channels;
  for (int i = 0; i < 2; ++i)
    layout.mid_resnets[i] = {"decoder.mid_block.resnets." + std::to_string(i) + ".", layout.top_channels,
                             layout.top_channels};
  const int blocks = static_cast<int>(config.block_out_channels.size());
  int previous = layout.top_channels;
  for (int i = 0; i < blocks; ++i) {
    UpBlockLayout block;
    block.channels = config.block_out_channels[blocks - 1 - i];
    const std::string prefix = "decoder.up_blocks." + std::to_string(i) + ".";
    for (int j = 0; j <= config.layers_per_block; ++j)
      block.resnets.push_back(
          {prefix + "resnets." + std::to_string(j) + ".", j == 0 ? previous : block.channels, block.channels});
    if (i + 1 < blocks) block.upsampler_prefix = prefix + "upsamplers.0.conv.";
    previous = block.channels;
    layout.up_blocks.push_back(std::move(block));
  }
  return layout;
}

std::map<std::string, std::vector<int64_t>> parameter_shapes(const VaeConfig& config) {
  return shapes_of(decoder_layout(config));
}

std::map<std::string, std::vector<int64_t>> shapes_of(const DecoderLayout& layout) {
  std::map<std::string, std::vector<int64_t>> shapes;
  auto conv = [&](const std::string& prefix, int in, int out, int k) {
    shapes[prefix + "weight"] = {out, in, k, k};
    shapes[prefix + "bias"] = {out};
  };
  auto norm = [&](const std::string& prefix, int channels) {
    shapes[prefix + "weight"] = {channels};
    shapes[prefix + "bias"] = {channels};
  };
  auto resnet = [&](const ResnetLayout& r) {
    norm(r.prefix + "norm1.", r.in_channels);
    conv(r.prefix + "conv1.", r.in_channels, r.out_channels, 3);
    norm(r.prefix + "norm2.", r.out_channels);
    conv(r.prefix + "conv2.", r.out_channels, r.out_channels, 3);
    if (r.has_shortcut()) conv(r.prefix + "conv_shortcut.", r.in_channels, r.out_channels, 1);
  };
  const int c = layout.top_channels;
  conv("post_quant_conv.", layout.latent_channels, layout.latent_channels, 1);
  conv("decoder.conv_in.", layout.latent_channels, c, 3);
  resnet(layout.mid_resnets[0]);
  const std::string attention = kMidAttentionPrefix;
  norm(attention + "group_norm.", c);
  for (const char* projection : {"to_q.", "to_k.", "to_v.", "to_out.0."}) {
    shapes[attention + projection + "weight"] = {c, c};
    shapes[attention + projection + "bias"] = {c};
  }
  resnet(layout.mid_resnets[1]);
  for (const auto& block : layout.up_blocks) {
    for (const auto& r : block.resnets) resnet(r);
    if (!block.upsampler_prefix.empty()) conv(block.upsampler_prefix, block.channels, block.channels, 3);
  }
  norm("decoder.conv_norm_out.", layout.bottom_channels);
  conv("decoder.conv_out.", layout.bottom_channels, layout.out_channels, 3);
  return shapes;
}

static bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

static std::string replace_prefix(const std::string& s, const std::string& prefix, const std::string& replacement) {
  return replacement + s.substr(prefix.size());
}

std::string ldm_name(const std::string& name, const VaeConfig& config) {
  static const std::pair<const char*, const char*> fixed[] = {
      {"decoder.mid_block.resnets.0.", "decoder.mid.block_1."},
      {"decoder.mid_block.resnets.1.", "decoder.mid.block_2."},
      {"decoder.mid_block.attentions.0.group_norm.", "decoder.mid.attn_1.norm."},
      {"decoder.mid_block.attentions.0.to_q.", "decoder.mid.attn_1.q."},
      {"decoder.mid_block.attentions.0.to_k.", "decoder.mid.attn_1.k."},
      {"decoder.mid_block.attentions.0.to_v.", "decoder.mid.attn_1.v."},
      {"decoder.mid_block.attentions.0.to_out.0.", "decoder.mid.attn_1.proj_out."},
      {"decoder.conv_norm_out.", "decoder.norm_out."},
  };
  for (const auto& [from, to] : fixed)
    if (starts_with(name, from)) return replace_prefix(name, from, to);
  const std::string up = "decoder.up_blocks.";
  if (!starts_with(name, up)) return name;
  // decoder.up_blocks.I.rest -> decoder.up.(blocks - 1 - I).rest'
  const size_t dot = name.find('.', up.size());
  const int index = std::stoi(name.substr(up.size(), dot - up.size()));
  const int blocks = static_cast<int>(config.block_out_channels.size());
  std::string rest = name.substr(dot + 1);
  std::string out = "decoder.up." + std::to_string(blocks - 1 - index) + ".";
  if (starts_with(rest, "resnets.")) {
    rest = replace_prefix(rest, "resnets.", "block.");
    const size_t shortcut = rest.find(".conv_shortcut.");
    if (shortcut != std::string::npos) rest.replace(shortcut, 15, ".nin_shortcut.");
  } else if (starts_with(rest, "upsamplers.0.")) {
    rest = replace_prefix(rest, "upsamplers.0.", "upsample.");
  }
  return out + rest;
}

}  // namespace dit::vae
