// Model configurations: DiT-S/B/L/XL with patch 2/4/8 at 256 and 512, and the tiny configs of
// the reference vectors. Everything a kernel needs to size itself derives from ModelConfig.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dit {

// The bounds ModelConfig::validate enforces, inclusive. Generous: the DiT family at 512 (DiT-XL/2:
// depth 28, hidden 1152, 16 heads, input 64, 1,024 tokens, 675 M parameters) sits far inside
// them, and so do wider, deeper or larger-latent research variants; what they refuse is a
// config no engine here could build, before any arithmetic on it can overflow or any allocation
// starts. Every count derived from a config within them fits in int (tokens, the MLP width, the
// CUDA model's concatenated adaLN width) and every tensor size in int64.
namespace model_limits {
inline constexpr int kMaxInputSize = 1024;        // latent side: 8192-pixel images through an 8x VAE
inline constexpr int kMaxPatchSize = 64;          // DiT uses 2, 4 and 8
inline constexpr int kMaxInChannels = 1024;       // SD latents have 4, newer autoencoders 16 to 128
inline constexpr int kMaxHiddenSize = 32768;      // DiT-XL has 1152; one block of this fits below kMaxParameters
inline constexpr int kMaxDepth = 1024;            // DiT-XL has 28
inline constexpr int kMaxNumHeads = 1024;         // heads of 32 at the largest hidden size
inline constexpr float kMaxMlpRatio = 64.0f;      // DiT uses 4
inline constexpr int kMaxNumClasses = 1'000'000;  // ImageNet-1k has 1000, ImageNet-21k 21841
inline constexpr int64_t kMaxTokens = 65536;      // (input / patch)^2: a 256 x 256 grid
inline constexpr int64_t kMaxParameters = int64_t{1} << 34;  // 16 Gi: 64 GiB as float32; DiT-XL/2 has 0.675 G
inline constexpr size_t kMaxNameLength = 256;
}  // namespace model_limits

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

  // The derived counts below assume a validated config (they fit in int within model_limits).
  int grid() const { return input_size / patch_size; }                                    // g
  int tokens() const { return static_cast<int>(static_cast<int64_t>(grid()) * grid()); }  // T = g * g
  int head_dim() const { return hidden_size / num_heads; }                                // 72 for XL, else 64
  int mlp_hidden() const { return static_cast<int>(hidden_size * mlp_ratio); }
  int out_channels() const { return learn_sigma ? 2 * in_channels : in_channels; }
  int null_class() const { return num_classes; }
  // Every weight tensor's elements together, pos_embed included (DiT-XL/2 at 256: 675,129,632),
  // counted in overflow-checked int64 after validate() (and throwing what it throws).
  int64_t parameter_count() const;
  // Throws dit::Error (invalid_argument) naming the first field outside model_limits or
  // inconsistent with another, with its value and the bound; then checks the token count and
  // parameter_count() against theirs. Called before anything is sized from a config.
  void validate() const;
};

// "DiT-XL/2" (also "XL/2", "DiT-XL-2") at image_size 256 or 512.
ModelConfig model_config(std::string_view name, int image_size);
// The names model_config accepts, in canonical form.
std::vector<std::string> model_names();
// From the JSON object the reference vectors keep in __metadata__.config (timm/DiT field names:
// input_size, patch_size, hidden_size, depth, num_heads and num_classes are required;
// in_channels, mlp_ratio and learn_sigma default to DiT's 4, 4.0 and true; unknown fields are
// ignored). Throws dit::Error naming a missing or ill-typed field, an integer outside its
// model_limits bound (checked before it is narrowed to int), and whatever validate() refuses.
ModelConfig model_config_from_json(std::string_view json_text);
std::string to_json(const ModelConfig& config);

}  // namespace dit
