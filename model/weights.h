// DiT weights by the original DiT key names. DitWeights::load reads two checkpoint layouts: the
// engine's own (the original DiT names, as tools/convert_checkpoint.py writes a converted
// DiT-XL-2-256x256.pt) and diffusers' DiTTransformer2DModel (transformer/
// diffusion_pytorch_model.safetensors), mapped onto the original names on load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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
  // named by tensor and element. The layout is told from the names: a file with diffusers'
  // names (transformer_blocks.N...) is mapped onto the original ones, q, k and v concatenated
  // into qkv, and gives the same bytes as the same values in the engine's layout; its errors
  // name diffusers' tensors (model/README.md, "Checkpoint layouts").
  static DitWeights load(const std::string& path, const ModelConfig& config);
  // Seeded N(0, std) weights in which every layer, adaLN and the final layer included, is
  // non-zero; pos_embed is the fixed 2-D sin-cos table (reference-vectors README, Model facts).
  static DitWeights random(const ModelConfig& config, uint64_t seed, float std = 0.02f);
};

// A checkpoint opened and checked against a configuration as DitWeights::load checks it (every
// expected tensor present with its shape, nothing else, diffusers' repeated embedders equal), its
// values still in the file's mapping: a backend converts them piece by piece straight into its
// own memory (make_model, model/dit_model.h), with no float32 copy of the whole model. Finiteness
// is checked by each read. Copies share the mapping; reads are safe from any thread.
class DitCheckpoint {
 public:
  // Throws dit::Error as DitWeights::load does (io, invalid_file), before any value is read.
  static DitCheckpoint open(const std::string& path, const ModelConfig& config);

  const std::string& path() const;
  const ModelConfig& config() const;
  const std::string& layout() const;  // "" for the engine's own, "diffusers"
  // Elements [first, first + count) of engine tensor `name` (its original name and layout, flat)
  // as float32 into `out`. A NaN or an infinity throws invalid_file naming the stored tensor and
  // element; a range past the tensor, or a name no DiT of the config has, invalid_argument.
  void read(const std::string& name, size_t first, size_t count, float* out) const;
  // Every tensor as float32, converted on every core: DitWeights::load.
  DitWeights read_all() const;

 private:
  struct State;
  explicit DitCheckpoint(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

// Seeded random weights described, not made: make_model (model/dit_model.h) makes them where the
// model keeps them (the CUDA backend on the device, in its compute dtype), with the same bits as
// DitWeights::random(config, seed, std) converted as the backend converts a checkpoint.
struct RandomDitWeights {
  uint64_t seed = 0;
  float std = 0.02f;
};

// Throws dit::Error (invalid_argument) unless std is positive and finite.
void check_random_weights(const RandomDitWeights& random);
// How DitWeights::random draws tensor `name` (kernels/random_normal.h): this stream id (FNV-1a of
// the name, so adding a tensor never reshuffles the others), this domain tag ("Wght", never the
// noise's), and random.std as the scale; pos_embed is the sin-cos table instead.
uint32_t random_weight_stream(const std::string& name);
inline constexpr uint32_t kRandomWeightsTag = 0x57676874u;

// Every tensor a DiT of `config` has: name -> shape, in a stable order.
std::map<std::string, std::vector<int64_t>> expected_weight_shapes(const ModelConfig& config);
// The fixed 2-D sin-cos positional table [1, T, D], computed in float64, stored as float32.
Tensor sincos_pos_embed(int hidden_size, int grid);

// Whether a safetensors checkpoint holds diffusers' DiTTransformer2DModel names.
bool is_diffusers_dit_checkpoint(const std::string& path);
// The diffusers name(s) an engine tensor is read from, in concatenation order (three for qkv;
// one otherwise). pos_embed maps to the buffer pos_embed.pos_embed, which diffusers does not
// save (the loader then computes the fixed table). Throws dit::Error for a name no DiT has.
std::vector<std::string> diffusers_tensor_names(const std::string& engine_name);
// A DiT configuration from diffusers' transformer/config.json (DiTTransformer2DModel, or the
// older Transformer2DModel with norm_type ada_norm_zero). Named after the DiT family member it
// matches ("DiT-XL/2"), else "diffusers". Throws dit::Error naming a missing, ill-typed or
// unsupported field, and whatever ModelConfig::validate refuses.
ModelConfig model_config_from_diffusers_json(std::string_view json_text);
// The configuration a checkpoint carries: its __metadata__.config (the engine's layout), or for
// diffusers' layout the config.json beside it; nullopt when it has neither.
std::optional<ModelConfig> checkpoint_model_config(const std::string& path);

}  // namespace dit
