// A DiT's weights in diffusers' layout, for the tests that load or sample from such a file
// (weights_diffusers_test, dit_sample_test).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"
#include "model/weights.h"

namespace dit::test {

// Rows [first, first + count) of a tensor, as a tensor of its own.
inline Tensor rows(const Tensor& tensor, int64_t first, int64_t count) {
  std::vector<int64_t> shape = tensor.shape;
  const int64_t row = tensor.numel() / shape[0];
  shape[0] = count;
  Tensor out(shape);
  std::memcpy(out.data.data(), tensor.data.data() + first * row, count * row * sizeof(float));
  return out;
}

inline std::string replaced(const std::string& name, const std::string& from, const std::string& to) {
  return name.rfind(from, 0) == 0 ? to + name.substr(from.size()) : std::string();
}

// The engine's tensors under diffusers' names (DiTTransformer2DModel, as model/README.md's table
// says), written out independently of the loader's own table; `unmapped` receives the engine
// names this table has no diffusers name for.
inline std::map<std::string, Tensor> diffusers_layout(const DitWeights& weights, const ModelConfig& config,
                                                      bool with_pos_embed, std::vector<std::string>& unmapped) {
  const std::map<std::string, std::string> top = {
      {"x_embedder.proj.", "pos_embed.proj."},
      {"final_layer.adaLN_modulation.1.", "proj_out_1."},
      {"final_layer.linear.", "proj_out_2."},
  };
  const std::map<std::string, std::string> embedders = {
      {"t_embedder.mlp.0.", "norm1.emb.timestep_embedder.linear_1."},
      {"t_embedder.mlp.2.", "norm1.emb.timestep_embedder.linear_2."},
      {"y_embedder.embedding_table.", "norm1.emb.class_embedder.embedding_table."},
  };
  const std::map<std::string, std::string> in_block = {
      {"attn.proj.", "attn1.to_out.0."},
      {"mlp.fc1.", "ff.net.0.proj."},
      {"mlp.fc2.", "ff.net.2."},
      {"adaLN_modulation.1.", "norm1.linear."},
  };
  const int64_t D = config.hidden_size;
  std::map<std::string, Tensor> out;
  for (const auto& [name, tensor] : weights.tensors) {
    if (name == "pos_embed") {
      if (with_pos_embed) out.emplace("pos_embed.pos_embed", tensor);
      continue;
    }
    bool mapped = false;
    for (const auto& [from, to] : top)
      if (std::string renamed = replaced(name, from, to); !renamed.empty()) out.emplace(renamed, tensor), mapped = true;
    for (const auto& [from, to] : embedders)
      if (std::string renamed = replaced(name, from, to); !renamed.empty()) {
        for (int block = 0; block < config.depth; ++block)
          out.emplace("transformer_blocks." + std::to_string(block) + "." + renamed, tensor);
        mapped = true;
      }
    for (int block = 0; block < config.depth && !mapped; ++block) {
      const std::string original = "blocks." + std::to_string(block) + ".";
      const std::string diffusers = "transformer_blocks." + std::to_string(block) + ".";
      for (const char* suffix : {"weight", "bias"})
        if (name == original + "attn.qkv." + suffix) {
          out.emplace(diffusers + "attn1.to_q." + suffix, rows(tensor, 0, D));
          out.emplace(diffusers + "attn1.to_k." + suffix, rows(tensor, D, D));
          out.emplace(diffusers + "attn1.to_v." + suffix, rows(tensor, 2 * D, D));
          mapped = true;
        }
      for (const auto& [from, to] : in_block)
        if (std::string renamed = replaced(name, original + from, diffusers + to); !renamed.empty())
          out.emplace(renamed, tensor), mapped = true;
    }
    if (!mapped) unmapped.push_back(name);
  }
  return out;
}

}  // namespace dit::test
