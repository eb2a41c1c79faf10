// DiT weights (model/weights.h): the expected tensors of a configuration, the fixed sin-cos
// positional table and seeded random weights. DitWeights::load lives in weights_load.cpp.
#include "model/weights.h"

#include <cmath>
#include <optional>
#include <string>

#include "core/checked_math.h"
#include "core/error.h"
#include "kernels/random_normal.h"

namespace dit {

// FNV-1a: a tensor's stream id from its name, so adding a tensor never reshuffles the others.
uint32_t random_weight_stream(const std::string& name) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : name) hash = (hash ^ c) * 16777619u;
  return hash;
}

void check_random_weights(const RandomDitWeights& random) {
  if (!(random.std > 0.0f) || !std::isfinite(random.std))
    throw Error(ErrorKind::invalid_argument,
                "random weights need a positive finite std, got " + std::to_string(random.std));
}

const Tensor& DitWeights::at(const std::string& name) const {
  const auto found = tensors.find(name);
  if (found == tensors.end()) throw Error(ErrorKind::invalid_argument, "missing weight tensor '" + name + "'");
  return found->second;
}

std::map<std::string, std::vector<int64_t>> expected_weight_shapes(const ModelConfig& config) {
  // validate() bounds every field, so every extent below stays under 2^24 and no product can
  // overflow; the few products of fields are checked all the same.
  config.validate();
  const auto product = [&config](std::initializer_list<int64_t> factors) {
    const std::optional<int64_t> value = checked_product(factors);
    if (!value) throw Error(ErrorKind::invalid_argument, "model config " + config.name + ": a weight extent overflows");
    return *value;
  };
  const int64_t D = config.hidden_size, M = config.mlp_hidden(), p = config.patch_size;
  const int64_t out = product({p, p, config.out_channels()});
  const int64_t grid = config.grid();
  std::map<std::string, std::vector<int64_t>> shapes;
  shapes["pos_embed"] = {1, product({grid, grid}), D};
  shapes["x_embedder.proj.weight"] = {D, config.in_channels, p, p};
  shapes["x_embedder.proj.bias"] = {D};
  shapes["t_embedder.mlp.0.weight"] = {D, 256};  // the 256-wide timestep sinusoid
  shapes["t_embedder.mlp.0.bias"] = {D};
  shapes["t_embedder.mlp.2.weight"] = {D, D};
  shapes["t_embedder.mlp.2.bias"] = {D};
  shapes["y_embedder.embedding_table.weight"] = {int64_t{config.num_classes} + 1, D};  // + the null class
  for (int i = 0; i < config.depth; ++i) {
    const std::string block = "blocks." + std::to_string(i) + ".";
    shapes[block + "attn.qkv.weight"] = {3 * D, D};
    shapes[block + "attn.qkv.bias"] = {3 * D};
    shapes[block + "attn.proj.weight"] = {D, D};
    shapes[block + "attn.proj.bias"] = {D};
    shapes[block + "mlp.fc1.weight"] = {M, D};
    shapes[block + "mlp.fc1.bias"] = {M};
    shapes[block + "mlp.fc2.weight"] = {D, M};
    shapes[block + "mlp.fc2.bias"] = {D};
    shapes[block + "adaLN_modulation.1.weight"] = {6 * D, D};
    shapes[block + "adaLN_modulation.1.bias"] = {6 * D};
  }
  shapes["final_layer.adaLN_modulation.1.weight"] = {2 * D, D};
  shapes["final_layer.adaLN_modulation.1.bias"] = {2 * D};
  shapes["final_layer.linear.weight"] = {out, D};
  shapes["final_layer.linear.bias"] = {out};
  return shapes;
}

Tensor sincos_pos_embed(int hidden_size, int grid) {
  if (hidden_size <= 0 || hidden_size % 4 || grid <= 0)
    throw Error(ErrorKind::invalid_argument,
                "sincos_pos_embed needs hidden_size a positive multiple of 4 "
                "and a positive grid, got " +
                    std::to_string(hidden_size) + " and " + std::to_string(grid));
  const int quarter = hidden_size / 4, half = hidden_size / 2;
  Tensor table({1, static_cast<int64_t>(grid) * grid, hidden_size});
  for (int row = 0; row < grid; ++row)
    for (int col = 0; col < grid; ++col) {
      float* out = table.ptr() + (static_cast<int64_t>(row) * grid + col) * hidden_size;
      for (int i = 0; i < quarter; ++i) {
        const double omega = 1.0 / std::pow(10000.0, i / static_cast<double>(quarter));
        // Upstream's meshgrid puts the column index in the first half, the row in the second.
        out[i] = static_cast<float>(std::sin(col * omega));
        out[quarter + i] = static_cast<float>(std::cos(col * omega));
        out[half + i] = static_cast<float>(std::sin(row * omega));
        out[half + quarter + i] = static_cast<float>(std::cos(row * omega));
      }
    }
  return table;
}

DitWeights DitWeights::random(const ModelConfig& config, uint64_t seed, float std) {
  config.validate();
  check_random_weights({seed, std});
  DitWeights weights;
  for (const auto& [name, shape] : expected_weight_shapes(config)) {
    if (name == "pos_embed") {
      weights.tensors.emplace(name, sincos_pos_embed(config.hidden_size, config.grid()));
      continue;
    }
    Tensor tensor(shape);
    cpu::random_normal(seed, random_weight_stream(name), kRandomWeightsTag, std, tensor.ptr(), tensor.numel());
    weights.tensors.emplace(name, std::move(tensor));
  }
  return weights;
}

}  // namespace dit
