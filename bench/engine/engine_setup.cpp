#include "bench/engine/engine_setup.h"

#include <cstdlib>
#include <random>
#include <thread>

#include "core/safetensors.h"
#include "model/weights.h"

namespace dit::bench {

EngineOptions environment_engine_options() {
  EngineOptions options = engine_options_from(std::getenv);
  if (const char* form = std::getenv("DIT_ATTENTION")) options.attention = form;
  return options;
}

DitWeights bench_weights(const EngineChoice& choice, const ModelConfig& config) {
  if (choice.weights_path.empty()) return DitWeights::random(config, choice.weights_seed);
  const SafetensorsFile file = SafetensorsFile::open(choice.weights_path);
  int checkpoint_size = 256;
  const auto metadata = file.metadata().find("config");
  if (metadata != file.metadata().end()) {
    checkpoint_size = 8 * model_config_from_json(metadata->second).input_size;
  }
  DitWeights weights = DitWeights::load(choice.weights_path, model_config(config.name, checkpoint_size));
  weights.tensors["pos_embed"] = sincos_pos_embed(config.hidden_size, config.grid());
  return weights;
}

DitModel& ModelCache::get(int image_size) {
  if (!model_ || image_size_ != image_size) {
    model_.reset();
    const ModelConfig config = model_config(choice_.model, image_size);
    model_ =
        choice_.weights_path.empty()  // drawn on the device for cuda (the same bits as bench_weights')
            ? make_model(choice_.backend, config, RandomDitWeights{choice_.weights_seed}, choice_.precision,
                         choice_.engine)
            : make_model(choice_.backend, config, bench_weights(choice_, config), choice_.precision, choice_.engine);
    image_size_ = image_size;
  }
  return *model_;
}

ForwardInputs random_forward_inputs(const ModelConfig& config, int batch, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal;
  ForwardInputs inputs{Tensor({batch, config.in_channels, config.input_size, config.input_size}), {}, {}};
  for (float& value : inputs.x.data) value = normal(generator);
  for (int i = 0; i < batch; ++i) {
    inputs.t.push_back(static_cast<int64_t>(generator() % 1000));
    inputs.y.push_back(static_cast<int64_t>(generator() % (config.num_classes + 1)));
  }
  return inputs;
}

std::unique_ptr<VaeDecoder> bench_vae(Backend backend, Precision precision, uint64_t seed,
                                      const EngineOptions& options) {
  const VaeConfig config = sd_vae_config();
  // The backend's libraries load beside the weights' drawing, as in dit-sample.
  std::jthread preload([backend] { preload_vae_backend(backend); });
  const VaeWeights weights = VaeWeights::random(config, seed);
  preload.join();
  return make_vae_decoder(backend, config, weights, precision, options);
}

}  // namespace dit::bench
