// Diffusers' DiTTransformer2DModel layout (model/weights.h): the name map onto the original DiT
// names, its config.json, and the configuration a checkpoint carries. The map follows diffusers'
// scripts/convert_dit_to_diffusers.py; both models chunk adaLN in the same order (per block
// shift, scale, gate for attention then MLP; the final layer shift, scale), so no tensor is
// reordered, only renamed, and qkv split in three.
#include <nlohmann/json.hpp>

#include <array>
#include <filesystem>
#include <utility>

#include "core/error.h"
#include "core/files.h"
#include "core/safetensors.h"
#include "model/weights.h"

namespace dit {
namespace {

bool starts_with(const std::string& text, std::string_view prefix) { return text.rfind(prefix, 0) == 0; }

// Original prefix -> diffusers prefix, for the tensors outside the blocks.
constexpr std::array<std::pair<const char*, const char*>, 6> kTopLevel{{
    {"x_embedder.proj.", "pos_embed.proj."},
    {"t_embedder.mlp.0.", "transformer_blocks.0.norm1.emb.timestep_embedder.linear_1."},
    {"t_embedder.mlp.2.", "transformer_blocks.0.norm1.emb.timestep_embedder.linear_2."},
    {"y_embedder.embedding_table.", "transformer_blocks.0.norm1.emb.class_embedder.embedding_table."},
    {"final_layer.adaLN_modulation.1.", "proj_out_1."},
    {"final_layer.linear.", "proj_out_2."},
}};
// Inside block N: original part -> diffusers part (after "transformer_blocks.N.").
constexpr std::array<std::pair<const char*, const char*>, 4> kInBlock{{
    {"attn.proj.", "attn1.to_out.0."},
    {"mlp.fc1.", "ff.net.0.proj."},
    {"mlp.fc2.", "ff.net.2."},
    {"adaLN_modulation.1.", "norm1.linear."},
}};

[[noreturn]] void unknown_name(const std::string& name) {
  throw Error(ErrorKind::invalid_argument, "no diffusers name for '" + name + "': not a DiT weight");
}

// The suffix after `prefix` when it is "weight" or "bias", else empty.
std::string parameter_suffix(const std::string& name, size_t prefix_length) {
  const std::string rest = name.substr(prefix_length);
  return rest == "weight" || rest == "bias" ? rest : std::string();
}

}  // namespace

std::vector<std::string> diffusers_tensor_names(const std::string& name) {
  if (name == "pos_embed") return {"pos_embed.pos_embed"};
  for (const auto& [original, diffusers] : kTopLevel)
    if (starts_with(name, original)) {
      const std::string suffix = parameter_suffix(name, std::string_view(original).size());
      if (suffix.empty()) unknown_name(name);
      return {diffusers + suffix};
    }
  if (!starts_with(name, "blocks.")) unknown_name(name);
  const size_t dot = name.find('.', 7);
  if (dot == std::string::npos || dot == 7 || name.find_first_not_of("0123456789", 7) != dot) unknown_name(name);
  const std::string block = "transformer_blocks." + name.substr(7, dot - 7) + ".";
  const std::string rest = name.substr(dot + 1);
  if (starts_with(rest, "attn.qkv.")) {
    const std::string suffix = parameter_suffix(rest, 9);
    if (suffix.empty()) unknown_name(name);
    return {block + "attn1.to_q." + suffix, block + "attn1.to_k." + suffix, block + "attn1.to_v." + suffix};
  }
  for (const auto& [original, diffusers] : kInBlock)
    if (starts_with(rest, original)) {
      const std::string suffix = parameter_suffix(rest, std::string_view(original).size());
      if (suffix.empty()) unknown_name(name);
      return {block + diffusers + suffix};
    }
  unknown_name(name);
}

ModelConfig model_config_from_diffusers_json(std::string_view json_text) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::invalid_file, std::string("diffusers config is not valid JSON: ") + e.what());
  }
  if (!json.is_object()) throw Error(ErrorKind::invalid_file, "diffusers config is not a JSON object");
  const auto fail = [](const std::string& what) { throw Error(ErrorKind::invalid_file, "diffusers config: " + what); };
  const auto text = [&](const char* field) -> std::string {
    if (!json.contains(field) || json[field].is_null()) return {};
    if (!json[field].is_string()) fail(std::string("'") + field + "' is not a string");
    return json[field].get<std::string>();
  };
  const std::string class_name = text("_class_name");
  if (class_name != "DiTTransformer2DModel" && class_name != "Transformer2DModel")
    fail("_class_name '" + class_name + "' is not DiTTransformer2DModel (nor Transformer2DModel)");
  // DiTTransformer2DModel has no other norm_type; Transformer2DModel defaults to layer_norm.
  const std::string norm =
      json.contains("norm_type") || class_name != "DiTTransformer2DModel" ? text("norm_type") : "ada_norm_zero";
  if (norm != "ada_norm_zero") fail("norm_type '" + norm + "' is not ada_norm_zero: not a class-conditional DiT");
  if (const std::string activation = text("activation_fn"); !activation.empty() && activation != "gelu-approximate")
    fail("activation_fn '" + activation + "' is not gelu-approximate (DiT's tanh GELU)");
  for (const char* field : {"cross_attention_dim", "num_vector_embeds"})
    if (json.contains(field) && !json[field].is_null()) fail(std::string("'") + field + "' is set: not a DiT");
  for (const auto& [field, wanted] : {std::pair{"attention_bias", true}, std::pair{"norm_elementwise_affine", false}})
    if (json.contains(field) && json[field] != wanted)
      fail(std::string("'") + field + "' is " + json[field].dump() + ", DiT has " + (wanted ? "true" : "false"));
  // Each integer is bounded before any arithmetic on it; validate() then checks the config.
  const auto integer = [&](const char* field, bool required, int64_t fallback) -> int {
    if (!json.contains(field) || json[field].is_null()) {
      if (required) fail(std::string("missing '") + field + "'");
      return static_cast<int>(fallback);
    }
    const auto& value = json[field];
    if (!value.is_number_integer()) fail(std::string("'") + field + "' is not an integer");
    if (value.is_number_unsigned() ? value.get<uint64_t>() > 1'000'000u
                                   : (value.get<int64_t>() < 1 || value.get<int64_t>() > 1'000'000))
      fail(std::string("'") + field + "' " + value.dump() + " is outside [1, 1000000]");
    return static_cast<int>(value.get<int64_t>());
  };
  ModelConfig config;
  config.input_size = integer("sample_size", true, 0);
  config.patch_size = integer("patch_size", true, 0);
  config.in_channels = integer("in_channels", true, 0);
  config.depth = integer("num_layers", true, 0);
  config.num_heads = integer("num_attention_heads", true, 0);
  const int64_t hidden_size = int64_t{config.num_heads} * integer("attention_head_dim", true, 0);
  if (hidden_size > model_limits::kMaxHiddenSize)
    fail("num_attention_heads x attention_head_dim = " + std::to_string(hidden_size) + " is more than the limit of " +
         std::to_string(model_limits::kMaxHiddenSize));
  config.hidden_size = static_cast<int>(hidden_size);
  config.num_classes = integer("num_embeds_ada_norm", true, 0);
  config.mlp_ratio = 4.0f;  // diffusers' FeedForward default mult; a DiT config has no other
  const int out_channels = integer("out_channels", false, config.in_channels);
  if (out_channels != config.in_channels && out_channels != 2 * config.in_channels)
    fail("out_channels " + std::to_string(out_channels) + " is neither in_channels " +
         std::to_string(config.in_channels) + " nor twice it (learned sigma)");
  config.learn_sigma = out_channels == 2 * config.in_channels;
  config.name = "diffusers";
  config.validate();
  for (const std::string& name : model_names())
    for (int image_size : {256, 512}) {
      ModelConfig known = model_config(name, image_size);
      known.name = config.name;
      if (to_json(known) == to_json(config)) config.name = name;
    }
  return config;
}

std::optional<ModelConfig> checkpoint_model_config(const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  const auto metadata = file.metadata().find("config");
  if (metadata != file.metadata().end()) return model_config_from_json(metadata->second);
  if (!is_diffusers_dit_checkpoint(path)) return std::nullopt;
  const std::filesystem::path beside = std::filesystem::path(path).parent_path() / "config.json";
  if (!std::filesystem::exists(beside)) return std::nullopt;
  try {
    return model_config_from_diffusers_json(read_text_file(beside, "diffusers config "));
  } catch (const Error& e) {
    throw Error(e.kind(), beside.string() + ": " + e.what());
  }
}

}  // namespace dit
