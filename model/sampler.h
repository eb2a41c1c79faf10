// Sampling requests and the host-side sampling loop shared by every backend that does not run
// its own. The loop follows upstream DiT: x_T from the noise source, then for each respaced
// step i (highest t first) a guided forward pass and a DDPM or DDIM update.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kernels/sampler_step.h"
#include "model/config.h"
#include "model/schedule.h"
#include "core/tensor.h"

namespace dit {

class DitModel;

enum class SamplerKind { ddpm, ddim };
const char* sampler_name(SamplerKind kind);
SamplerKind parse_sampler(const std::string& name);  // throws dit::Error

struct SampleRequest {
  std::vector<int> class_labels;  // one per image, in [0, num_classes)
  std::vector<uint64_t> seeds;    // one per image; an image's noise depends on its seed only
  int steps = 250;
  float cfg_scale = 4.0f;  // guidance is on when cfg_scale != 1
  SamplerKind sampler = SamplerKind::ddpm;
  float eta = 0.0f;  // DDIM only
};

// Called after each step with (steps done, steps total).
using ProgressFn = std::function<void(int, int)>;

// Throws dit::Error naming the bad field.
void validate(const SampleRequest& request, int num_classes);

// --- The pieces of the loop, for backends that run it on their device and for tests. ---

// Guidance doubles the batch: rows [0, N) are the images (conditional), rows [N, 2N) the
// unconditional copies (null class).
inline bool guidance_enabled(const SampleRequest& request) { return request.cfg_scale != 1.0f; }
// The model batch's labels: the N class labels, then (under guidance) N null labels.
std::vector<int64_t> batch_labels(const SampleRequest& request, const ModelConfig& config);
// x_T [rows, C, S, S]: image n is noise(seeds[n], slot 0, stream 0); under guidance the
// unconditional rows repeat it (upstream's cat([z, z])).
Tensor initial_latents(const SampleRequest& request, const ModelConfig& config);
// The noise of sampler iteration i for every row of `noise` [rows, C, S, S]: row n < N is
// noise(seeds[n], slot 1 + i, stream 0), row N + n is noise(seeds[n], slot 1 + i, stream 1).
void step_noise(const SampleRequest& request, int iteration, Tensor& noise);
// The float32 coefficients of respaced index `index` (iteration i uses index N - 1 - i).
StepCoefficients step_coefficients(const DiffusionSchedule& schedule, int index);

// Fills `noise` (already shaped like x) with the noise of iteration i (0 = the highest t).
using NoiseSource = std::function<void(int iteration, Tensor& noise)>;
// Sees the whole batch after each iteration.
using StepObserver = std::function<void(int iteration, const Tensor& x)>;

// The sampling loop from an explicit x_T [rows, C, S, S] with labels [rows]: for i = 0 .. N-1,
// the model (forward_with_cfg when cfg_scale != 1, which needs rows = 2B with the null labels
// in the second half; else forward) at timestep_map[N - 1 - i], then the DDPM or DDIM update
// of every row. Noise is asked for only where a step adds some. Returns the final batch.
Tensor run_sampler(DitModel& model, Tensor x, std::span<const int64_t> labels, const DiffusionSchedule& schedule,
                   SamplerKind kind, float cfg_scale, float eta, const NoiseSource& noise,
                   const StepObserver& observer = {});

}  // namespace dit
