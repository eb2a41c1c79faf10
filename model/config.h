// Model configurations: DiT-S/B/L/XL with patch 2/4/8 at 256 and 512, and the tiny configs of
// the reference vectors. Everything a kernel needs to size itself derives from ModelConfig.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dit {

struct ModelConfig {
  std::string name;     // "DiT-XL/2"
  int input_size = 32;  // latent height == width (image size / 8)
  int patch_size = 2;
  int in_channels = 4;
  int hidden_size = 1152;
  int depth = 28;
  int num_heads = 16;
  float mlp_ratio = 4.0f;
  int num_classes = 1000;  // the embedding table has num_classes + 1 rows; the last is null
  bool learn_sigma = true;

  int grid() const { return input_size / patch_size; }      // g
  int tokens() const { return grid() * grid(); }            // T = g * g
  int head_dim() const { return hidden_size / num_heads; }  // 72 for XL, else 64
  int mlp_hidden() const { return static_cast<int>(hidden_size * mlp_ratio); }
  int out_channels() const { return learn_sigma ? 2 * in_channels : in_channels; }
  int null_class() const { return num_classes; }
  int64_t parameter_count() const;
  // Throws dit::Error naming the first inconsistent field.
  void validate() const;
};

// "DiT-XL/2" (also "XL/2", "DiT-XL-2") at image_size 256 or 512.
ModelConfig model_config(std::string_view name, int image_size);
// The names model_config accepts, in canonical form.
std::vector<std::string> model_names();
// From the JSON object the reference vectors keep in __metadata__.config (timm/DiT field names:
// input_size, patch_size, hidden_size, depth, num_heads and num_classes are required;
// in_channels, mlp_ratio and learn_sigma default to DiT's 4, 4.0 and true; unknown fields are
// ignored). Throws dit::Error naming a missing or ill-typed field.
ModelConfig model_config_from_json(std::string_view json_text);
std::string to_json(const ModelConfig& config);

}  // namespace dit
