// Model configurations (model/config.h): the DiT family table of upstream models.py and the
// JSON form the reference vectors carry.
#include "model/config.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cctype>
#include <string>

#include "core/error.h"

namespace dit {
namespace {

struct Family {
  const char* size;  // "XL"
  int depth, hidden_size, num_heads;
};
constexpr std::array<Family, 4> kFamilies{
    {{"S", 12, 384, 6}, {"B", 12, 768, 12}, {"L", 24, 1024, 16}, {"XL", 28, 1152, 16}}};
constexpr std::array<int, 3> kPatchSizes{2, 4, 8};

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

int64_t ModelConfig::parameter_count() const {
  // As upstream's train.py counts model.parameters(): the frozen pos_embed included
  // (DiT-XL/2 at 256: 675,129,632).
  const int64_t D = hidden_size, M = mlp_hidden(), P = patch_size;
  const int64_t positions = static_cast<int64_t>(tokens()) * D;
  const int64_t patch = D * in_channels * P * P + D;
  const int64_t timestep = 256 * D + D + D * D + D;
  const int64_t labels = (num_classes + 1) * D;
  const int64_t block = (6 * D * D + 6 * D) + (3 * D * D + 3 * D) + (D * D + D) + (M * D + M) + (D * M + D);
  const int64_t final_layer = (2 * D * D + 2 * D) + (P * P * out_channels() * D + P * P * out_channels());
  return positions + patch + timestep + labels + depth * block + final_layer;
}

void ModelConfig::validate() const {
  auto fail = [this](const std::string& what) {
    throw Error(ErrorKind::invalid_argument,
                "model config " + (name.empty() ? std::string("(unnamed)") : name) + ": " + what);
  };
  if (input_size <= 0) fail("input_size must be positive, got " + std::to_string(input_size));
  if (patch_size <= 0) fail("patch_size must be positive, got " + std::to_string(patch_size));
  if (input_size % patch_size)
    fail("input_size " + std::to_string(input_size) + " is not a multiple of patch_size " + std::to_string(patch_size));
  if (in_channels <= 0) fail("in_channels must be positive, got " + std::to_string(in_channels));
  if (depth <= 0) fail("depth must be positive, got " + std::to_string(depth));
  if (num_heads <= 0) fail("num_heads must be positive, got " + std::to_string(num_heads));
  if (hidden_size <= 0 || hidden_size % num_heads)
    fail("hidden_size " + std::to_string(hidden_size) + " is not a positive multiple of num_heads " +
         std::to_string(num_heads));
  // The 2-D sin-cos table splits D into two halves of [sin, cos] pairs.
  if (hidden_size % 4) fail("hidden_size " + std::to_string(hidden_size) + " is not a multiple of 4");
  if (!(mlp_ratio > 0.0f) || mlp_hidden() <= 0) fail("mlp_ratio must be positive");
  if (num_classes <= 0) fail("num_classes must be positive, got " + std::to_string(num_classes));
}

ModelConfig model_config(std::string_view name, int image_size) {
  if (image_size != 256 && image_size != 512)
    throw Error(ErrorKind::invalid_argument,
                "image size " + std::to_string(image_size) + " is not supported (256 or 512)");
  // Accept "DiT-XL/2", "XL/2", "DiT-XL-2" and "XL-2", in any case.
  std::string key = upper(name);
  if (key.rfind("DIT-", 0) == 0) key = key.substr(4);
  for (const Family& family : kFamilies)
    for (int patch : kPatchSizes)
      for (char separator : {'/', '-'})
        if (key == std::string(family.size) + separator + std::to_string(patch)) {
          ModelConfig config;
          config.name = "DiT-" + std::string(family.size) + "/" + std::to_string(patch);
          config.input_size = image_size / 8;
          config.patch_size = patch;
          config.depth = family.depth;
          config.hidden_size = family.hidden_size;
          config.num_heads = family.num_heads;
          config.validate();
          return config;
        }
  std::string known;
  for (const std::string& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorKind::invalid_argument, "unknown model '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const Family& family : kFamilies)
    for (int patch : kPatchSizes) names.push_back("DiT-" + std::string(family.size) + "/" + std::to_string(patch));
  return names;
}

ModelConfig model_config_from_json(std::string_view json_text) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::invalid_file, std::string("model config is not valid JSON: ") + e.what());
  }
  if (!json.is_object()) throw Error(ErrorKind::invalid_file, "model config is not a JSON object");
  auto integer = [&json](const char* field, bool required, int fallback) {
    if (!json.contains(field)) {
      if (required) throw Error(ErrorKind::invalid_file, std::string("model config lacks '") + field + "'");
      return fallback;
    }
    const auto& value = json[field];
    if (!value.is_number_integer())
      throw Error(ErrorKind::invalid_file, std::string("model config field '") + field + "' is not an integer");
    return value.get<int>();
  };
  ModelConfig config;
  config.name =
      json.contains("name") && json["name"].is_string() ? json["name"].get<std::string>() : std::string("custom");
  config.input_size = integer("input_size", true, 0);
  config.patch_size = integer("patch_size", true, 0);
  config.hidden_size = integer("hidden_size", true, 0);
  config.depth = integer("depth", true, 0);
  config.num_heads = integer("num_heads", true, 0);
  config.num_classes = integer("num_classes", true, 0);
  config.in_channels = integer("in_channels", false, 4);
  if (json.contains("mlp_ratio")) {
    if (!json["mlp_ratio"].is_number())
      throw Error(ErrorKind::invalid_file, "model config field 'mlp_ratio' is not a number");
    config.mlp_ratio = json["mlp_ratio"].get<float>();
  }
  if (json.contains("learn_sigma")) {
    if (!json["learn_sigma"].is_boolean())
      throw Error(ErrorKind::invalid_file, "model config field 'learn_sigma' is not a boolean");
    config.learn_sigma = json["learn_sigma"].get<bool>();
  }
  config.validate();
  return config;
}

std::string to_json(const ModelConfig& config) {
  const nlohmann::json json = {{"name", config.name},
                               {"input_size", config.input_size},
                               {"patch_size", config.patch_size},
                               {"in_channels", config.in_channels},
                               {"hidden_size", config.hidden_size},
                               {"depth", config.depth},
                               {"num_heads", config.num_heads},
                               {"mlp_ratio", config.mlp_ratio},
                               {"num_classes", config.num_classes},
                               {"learn_sigma", config.learn_sigma}};
  return json.dump();
}

}  // namespace dit
