// The image pipeline: (class labels, seeds, sampler, steps, guidance) -> latents -> / 0.18215
// -> VAE decode -> uint8 RGB images.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/dit_model.h"
#include "model/sampler.h"
#include "model/vae.h"

namespace dit {

constexpr float kVaeScalingFactor = 0.18215f;

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3], row-major
};

struct PipelineResult {
  Tensor latents;             // [N, 4, s, s] as sampled (before the scaling factor)
  std::vector<Image> images;  // N images
};

// Decoded [N, 3, H, W] in [-1, 1] -> uint8 via round(clamp((x + 1) * 127.5, 0, 255)).
std::vector<Image> to_images(const Tensor& decoded);

PipelineResult generate(DitModel& model, VaeDecoder& vae, const SampleRequest& request,
                        const ProgressFn& progress = {});

// PNG through libpng; writes atomically (temporary file, fsync, rename). Throws dit::Error.
void write_png(const std::string& path, const Image& image);
Image read_png(const std::string& path);

}  // namespace dit
