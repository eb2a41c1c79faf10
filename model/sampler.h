// Sampling requests and the host-side sampling loop shared by every backend that does not run
// its own. The loop follows upstream DiT: x_T from the noise source, then for each respaced
// step i (highest t first) a guided forward pass and a DDPM or DDIM update.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/tensor.h"

namespace dit {

enum class SamplerKind { ddpm, ddim };
const char* sampler_name(SamplerKind kind);
SamplerKind parse_sampler(const std::string& name);  // throws dit::Error

struct SampleRequest {
  std::vector<int> class_labels;  // one per image, in [0, num_classes)
  std::vector<uint64_t> seeds;    // one per image; an image's noise depends on its seed only
  int steps = 250;
  float cfg_scale = 4.0f;         // guidance is on when cfg_scale != 1
  SamplerKind sampler = SamplerKind::ddpm;
  float eta = 0.0f;               // DDIM only
};

// Called after each step with (steps done, steps total).
using ProgressFn = std::function<void(int, int)>;

// Throws dit::Error naming the bad field.
void validate(const SampleRequest& request, int num_classes);

}  // namespace dit
