// One forward pass of a tiny DiT with seeded random weights, on the CPU backend, through the
// installed engine's public API only; prints the output's shape and whether every value is finite.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include "core/tensor.h"
#include "model/dit_model.h"
#include "model/weights.h"

int main() {
  try {
    dit::ModelConfig config;
    config.name = "DiT-consumer";
    config.input_size = 8;
    config.patch_size = 2;
    config.hidden_size = 32;
    config.depth = 1;
    config.num_heads = 2;
    config.num_classes = 10;
    config.validate();

    dit::check_backend(dit::Backend::cpu, dit::Precision::fp32);
    const dit::DitWeights weights = dit::DitWeights::random(config, /*seed=*/0);
    auto model = dit::make_model(dit::Backend::cpu, config, weights);

    dit::Tensor x({1, config.in_channels, config.input_size, config.input_size});  // [B, C, S, S]
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = std::sin(0.1f * static_cast<float>(i));
    const std::vector<int64_t> timesteps{500};
    const std::vector<int64_t> labels{3};
    const dit::Tensor out = model->forward(x, timesteps, labels);  // [B, out_channels, S, S]

    bool finite = !out.data.empty();
    for (float value : out.data) finite = finite && std::isfinite(value);
    std::printf("dit::engine %s on %s: output %s, %s\n", config.name.c_str(), dit::backend_name(model->backend()),
                dit::shape_string(out.shape).c_str(), finite ? "finite" : "NOT FINITE");
    return finite ? 0 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dit-install-consumer: %s\n", error.what());
    return 1;
  }
}
