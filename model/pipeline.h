// The image pipeline: (class labels, seeds, sampler, steps, guidance) -> latents -> / 0.18215
// -> VAE decode -> uint8 RGB images.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/image.h"
#include "model/dit_model.h"
#include "model/sampler.h"
#include "model/vae.h"

namespace dit {

constexpr float kVaeScalingFactor = 0.18215f;

struct PipelineResult {
  Tensor latents;             // [N, 4, s, s] as sampled (before the scaling factor)
  std::vector<Image> images;  // N images
};

// Decoded [N, 3, H, W] in [-1, 1] -> uint8 via round(clamp((x + 1) * 127.5, 0, 255)).
std::vector<Image> to_images(const Tensor& decoded);

PipelineResult generate(DitModel& model, VaeDecoder& vae, const SampleRequest& request,
                        const ProgressFn& progress = {});

}  // namespace dit
