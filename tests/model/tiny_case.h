// The tiny end-to-end case the pipeline tests share: the dit_tiny_a DiT (8x8x4 latents) with
// its reference weights, a tiny 8x-upscaling VAE with seeded weights, two guided images.
#pragma once

#include <cmath>

#include "model/pipeline.h"
#include "core/safetensors.h"
#include "tests/support/test_support.h"

namespace dit::test {

struct TinyCase {
  ModelConfig model_config;
  DitWeights model_weights;
  VaeConfig vae_config;
  VaeWeights vae_weights;
  SampleRequest request;
};

inline TinyCase tiny_case() {
  TinyCase c;
  const std::string path = data_path("dit_tiny_a.weights.safetensors");
  c.model_config = model_config_from_json(SafetensorsFile::open(path).metadata().at("config"));
  c.model_weights = DitWeights::load(path, c.model_config);
  c.vae_config = tiny_vae_config();
  c.vae_weights = VaeWeights::random(c.vae_config, 11);
  c.request.class_labels = {3, 7};
  c.request.seeds = {1, 2};
  c.request.steps = 6;
  c.request.cfg_scale = 4.0f;
  c.request.sampler = SamplerKind::ddpm;
  return c;
}

// Peak signal-to-noise ratio between two images of the same size, in dB (infinite if equal).
inline double psnr(const Image& a, const Image& b) {
  double squared = 0;
  for (size_t i = 0; i < a.rgb.size(); ++i) {
    const double d = double(a.rgb[i]) - double(b.rgb[i]);
    squared += d * d;
  }
  const double mse = squared / static_cast<double>(a.rgb.size());
  return mse == 0 ? INFINITY : 10.0 * std::log10(255.0 * 255.0 / mse);
}

}  // namespace dit::test
