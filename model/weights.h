// DiT weights by the original DiT key names (a converted DiT-XL-2-256x256.pt loads as is).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "core/tensor.h"

namespace dit {

struct DitWeights {
  std::map<std::string, Tensor> tensors;  // float32, original DiT names and layouts

  // Throws dit::Error naming the missing tensor.
  const Tensor& at(const std::string& name) const;

  // Loads a safetensors checkpoint and checks every expected tensor's presence and shape
  // against `config` (validated first: no allocation for a config beyond model_limits); extra
  // tensors are an error too (a checkpoint of another model), and so is a NaN or infinite value,
  // named by tensor and element.
  static DitWeights load(const std::string& path, const ModelConfig& config);
  // Seeded N(0, std) weights in which every layer, adaLN and the final layer included, is
  // non-zero; pos_embed is the fixed 2-D sin-cos table (reference-vectors README, Model facts).
  static DitWeights random(const ModelConfig& config, uint64_t seed, float std = 0.02f);
};

// Every tensor a DiT of `config` has: name -> shape, in a stable order.
std::map<std::string, std::vector<int64_t>> expected_weight_shapes(const ModelConfig& config);
// The fixed 2-D sin-cos positional table [1, T, D], computed in float64, stored as float32.
Tensor sincos_pos_embed(int hidden_size, int grid);

}  // namespace dit
