// Model configurations (model/config.h): the DiT family table of upstream models.py and the
// JSON form the reference vectors carry.
#include "model/config.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

#include "core/checked_math.h"
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

// A config's name as its messages quote it: printable, and cut short when it is too long.
std::string display_name(const std::string& name) {
  if (name.empty()) return "(unnamed)";
  constexpr size_t kShown = 64;
  std::string shown = name.substr(0, kShown);
  for (char& c : shown) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) c = '?';
  }
  return name.size() > kShown ? shown + "..." : shown;
}

std::string number_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// "depth 2000000000 is outside [1, 1024]"
std::string out_of_bounds(const std::string& field, const std::string& value, int64_t min, int64_t max) {
  return field + " " + value + " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}
std::string out_of_bounds(const std::string& field, int64_t value, int64_t min, int64_t max) {
  return out_of_bounds(field, std::to_string(value), min, max);
}

// As upstream's train.py counts model.parameters(): the frozen pos_embed included (DiT-XL/2 at
// 256: 675,129,632). Each term is a sum of tensor sizes, every product and sum checked: nothing
// when the count does not fit in int64. Needs the fields validate() checks before calling it
// (a positive patch_size, a finite mlp_ratio whose MLP width fits in int).
std::optional<int64_t> counted_parameters(const ModelConfig& c) {
  const int64_t D = c.hidden_size, M = c.mlp_hidden(), P = c.patch_size, C = c.in_channels, O = c.out_channels();
  const int64_t g = c.grid(), L = c.depth;
  std::optional<int64_t> total = 0;
  const auto add = [&total](std::initializer_list<int64_t> factors) {
    const std::optional<int64_t> product = checked_product(factors);
    total = total && product ? checked_add(*total, *product) : std::nullopt;
  };
  add({g, g, D});                        // pos_embed
  add({D, C, P, P}), add({D});           // x_embedder.proj
  add({D, 256}), add({D});               // t_embedder.mlp.0 (the 256-wide timestep sinusoid)
  add({D, D}), add({D});                 // t_embedder.mlp.2
  add({int64_t{c.num_classes} + 1, D});  // y_embedder.embedding_table: + the null class
  // Per block: qkv (3D x D + 3D), proj (D x D + D), fc1 (M x D + M), fc2 (D x M + D) and adaLN
  // (6D x D + 6D): 10 D^2 + 2 M D + 11 D + M.
  add({L, 10, D, D}), add({L, 2, M, D}), add({L, 11, D}), add({L, M});
  add({2, D, D}), add({2, D});        // final_layer.adaLN_modulation.1
  add({P, P, O, D}), add({P, P, O});  // final_layer.linear
  return total;
}

}  // namespace

int64_t ModelConfig::parameter_count() const {
  validate();  // which also proves the count fits
  return *counted_parameters(*this);
}

void ModelConfig::validate() const {
  namespace limits = model_limits;
  const std::string label = "model config " + display_name(name) + ": ";
  auto fail = [&label](const std::string& what) { throw Error(ErrorKind::invalid_argument, label + what); };
  auto bound = [&fail](const char* field, int64_t value, int64_t min, int64_t max) {
    if (value < min || value > max) fail(out_of_bounds(field, value, min, max));
  };
  if (name.size() > limits::kMaxNameLength)
    fail("name is " + std::to_string(name.size()) + " characters long, more than the limit of " +
         std::to_string(limits::kMaxNameLength));
  bound("input_size", input_size, 1, limits::kMaxInputSize);
  bound("patch_size", patch_size, 1, limits::kMaxPatchSize);
  if (input_size % patch_size)
    fail("input_size " + std::to_string(input_size) + " is not a multiple of patch_size " + std::to_string(patch_size));
  bound("in_channels", in_channels, 1, limits::kMaxInChannels);
  bound("hidden_size", hidden_size, 4, limits::kMaxHiddenSize);
  bound("depth", depth, 1, limits::kMaxDepth);
  bound("num_heads", num_heads, 1, limits::kMaxNumHeads);
  if (hidden_size % num_heads)
    fail("hidden_size " + std::to_string(hidden_size) + " is not a multiple of num_heads " + std::to_string(num_heads));
  // The 2-D sin-cos table splits D into two halves of [sin, cos] pairs.
  if (hidden_size % 4) fail("hidden_size " + std::to_string(hidden_size) + " is not a multiple of 4");
  // Checked before mlp_hidden() narrows hidden_size * mlp_ratio to int.
  if (!std::isfinite(mlp_ratio) || !(mlp_ratio > 0.0f) || mlp_ratio > limits::kMaxMlpRatio)
    fail("mlp_ratio " + number_text(mlp_ratio) + " is outside (0, " + number_text(limits::kMaxMlpRatio) + "]");
  if (mlp_hidden() < 1)
    fail("mlp_ratio " + number_text(mlp_ratio) + " leaves no MLP width (hidden_size " + std::to_string(hidden_size) +
         " x mlp_ratio < 1)");
  bound("num_classes", num_classes, 1, limits::kMaxNumClasses);
  const int64_t g = input_size / patch_size, tokens = g * g;  // both at most kMaxInputSize^2
  if (tokens > limits::kMaxTokens)
    fail("input_size " + std::to_string(input_size) + " / patch_size " + std::to_string(patch_size) + " gives " +
         std::to_string(tokens) + " tokens, more than the limit of " + std::to_string(limits::kMaxTokens));
  // Within the bounds above the count stays below 2^50; checked all the same.
  const std::optional<int64_t> counted = counted_parameters(*this);
  if (!counted) fail("the parameter count does not fit in a 64-bit integer");
  const int64_t parameters = *counted;
  if (parameters > limits::kMaxParameters)
    fail("depth " + std::to_string(depth) + ", hidden_size " + std::to_string(hidden_size) + ", mlp_ratio " +
         number_text(mlp_ratio) + " and num_classes " + std::to_string(num_classes) + " give " +
         std::to_string(parameters) + " parameters, more than the limit of " + std::to_string(limits::kMaxParameters));
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
  const std::string name =
      json.contains("name") && json["name"].is_string() ? json["name"].get<std::string>() : std::string("custom");
  // An integer field, range-checked before it is narrowed to int (nlohmann's get<int> would wrap).
  auto integer = [&json, &name](const char* field, bool required, int fallback, int64_t min, int64_t max) {
    if (!json.contains(field)) {
      if (required) throw Error(ErrorKind::invalid_file, std::string("model config lacks '") + field + "'");
      return fallback;
    }
    const auto& value = json[field];
    if (!value.is_number_integer())
      throw Error(ErrorKind::invalid_file, std::string("model config field '") + field + "' is not an integer");
    const bool above_int64 = value.is_number_unsigned() &&
                             value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    const int64_t number = above_int64 ? std::numeric_limits<int64_t>::max() : value.get<int64_t>();
    if (above_int64 || number < min || number > max)
      throw Error(ErrorKind::invalid_argument,
                  "model config " + display_name(name) + ": " + out_of_bounds(field, value.dump(), min, max));
    return static_cast<int>(number);
  };
  namespace limits = model_limits;
  ModelConfig config;
  config.name = name;
  config.input_size = integer("input_size", true, 0, 1, limits::kMaxInputSize);
  config.patch_size = integer("patch_size", true, 0, 1, limits::kMaxPatchSize);
  config.hidden_size = integer("hidden_size", true, 0, 4, limits::kMaxHiddenSize);
  config.depth = integer("depth", true, 0, 1, limits::kMaxDepth);
  config.num_heads = integer("num_heads", true, 0, 1, limits::kMaxNumHeads);
  config.num_classes = integer("num_classes", true, 0, 1, limits::kMaxNumClasses);
  config.in_channels = integer("in_channels", false, 4, 1, limits::kMaxInChannels);
  if (json.contains("mlp_ratio")) {
    if (!json["mlp_ratio"].is_number())
      throw Error(ErrorKind::invalid_file, "model config field 'mlp_ratio' is not a number");
    // Checked as a double: narrowing a value beyond float's range is undefined.
    const double ratio = json["mlp_ratio"].get<double>();
    if (!(ratio > 0.0 && ratio <= limits::kMaxMlpRatio))
      throw Error(ErrorKind::invalid_argument, "model config " + display_name(name) + ": mlp_ratio " +
                                                   json["mlp_ratio"].dump() + " is outside (0, " +
                                                   number_text(limits::kMaxMlpRatio) + "]");
    config.mlp_ratio = static_cast<float>(ratio);
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
