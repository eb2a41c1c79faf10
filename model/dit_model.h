// The engine's public API: one interface for every backend (cpu, cuda).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "model/backend.h"
#include "model/config.h"
#include "model/engine_options.h"
#include "model/sampler.h"
#include "core/tensor.h"
#include "model/weights.h"

namespace dit {

class DitModel {
 public:
  virtual ~DitModel() = default;
  virtual const ModelConfig& config() const = 0;
  virtual Backend backend() const = 0;
  virtual Precision precision() const = 0;

  // model(x, t, y): x [B, C, S, S], t [B] (original timesteps), y [B] (num_classes = null);
  // returns [B, out_channels, S, S].
  virtual Tensor forward(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y) = 0;
  // Upstream forward_with_cfg: x [2B, ...]; only x[:B] is used (run twice); y holds the B real
  // labels then B null labels; channels 0-2 get uncond + s * (cond - uncond) in both halves,
  // channels 3.. keep each half's own output.
  virtual Tensor forward_with_cfg(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y,
                                  float cfg_scale) = 0;
  // Final latents [N, C, S, S] for N = request.class_labels.size() images (the first half of
  // the guided batch). The default runs the host loop of sampler.cpp over forward_with_cfg;
  // a backend may run the whole loop on its device instead (same result).
  virtual Tensor sample(const SampleRequest& request, const ProgressFn& progress = {});
};

// Throws what make_model would for this backend and precision before any weights exist:
// dit::Error (device) when the backend is not built in or no GPU is usable (one runtime query,
// milliseconds), (invalid_argument) for a precision the backend does not run. A program calls it
// before it builds or loads weights, so a missing GPU is reported at once, not after them.
void check_backend(Backend backend, Precision precision);
// Starts the backend's device now: for cuda, the runtime's primary context on the current device
// (the first runtime call that needs one would start it otherwise, inside whichever load came
// first); nothing for cpu. A program that times its start calls it after check_backend, so the
// context is a phase of its own. Throws dit::Error (device) when the context cannot be made.
void start_backend(Backend backend);

// Throws dit::Error (device) when the backend is not built in or no GPU is usable.
std::unique_ptr<DitModel> make_model(Backend backend, const ModelConfig& config, const DitWeights& weights,
                                     Precision precision = Precision::fp32, const EngineOptions& options = {});
// The same with DitWeights::random(config, weights.seed, weights.std), made where the model keeps
// them: on the host for the CPU backend, on the device for the CUDA one (same bits, no host copy).
std::unique_ptr<DitModel> make_model(Backend backend, const ModelConfig& config, const RandomDitWeights& weights,
                                     Precision precision = Precision::fp32, const EngineOptions& options = {});
// The same from a checkpoint opened against its configuration (DitCheckpoint::open): the CUDA
// backend converts it piece by piece from the file's mapping through pinned buffers straight into
// device memory, the CPU one reads it whole (DitCheckpoint::read_all). The weights are the bytes
// make_model gives for DitWeights::load of the same file.
std::unique_ptr<DitModel> make_model(Backend backend, const DitCheckpoint& checkpoint,
                                     Precision precision = Precision::fp32, const EngineOptions& options = {});

}  // namespace dit
