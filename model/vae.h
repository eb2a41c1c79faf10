// The SD VAE decoder (sd-vae-ft-ema / sd-vae-ft-mse architecture): latents [N, 4, s, s] ->
// images [N, 3, 8s, 8s] in [-1, 1] (before clamping); in general the upscale is 2^(number of
// blocks - 1). Weights by diffusers' key names, or the original LDM names (converted on load);
// seeded random weights when none are given. Backends: cpu (float32, float64 accumulation, the
// reference) and cuda (cuDNN convolutions; block_out_channels multiples of 8, s * s a multiple
// of 8).
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/backend.h"
#include "model/engine_options.h"
#include "core/tensor.h"

namespace dit {

// The bounds VaeConfig::validate enforces, inclusive. Generous (the SD decoder: 4 latent channels,
// blocks of 128 to 512, 2 layers, 32 groups, 3 output channels; newer autoencoders up to 16 or 32
// latent channels and 1024-wide blocks); what they refuse is a config whose weights could not be
// allocated or whose channel products overflow int, before any arithmetic on it.
namespace vae_limits {
inline constexpr int kMaxLatentChannels = 1024;
inline constexpr int kMaxBlockChannels = 16384;
inline constexpr int kMaxBlocks = 8;  // each block but the last upsamples 2x: 128x at most
inline constexpr int kMaxLayersPerBlock = 64;
inline constexpr int kMaxNormGroups = 16384;
inline constexpr int kMaxOutChannels = 1024;
inline constexpr int64_t kMaxParameters = int64_t{1} << 32;  // 4 Gi; the SD decoder has 49.5 M
}  // namespace vae_limits

struct VaeConfig {
  int latent_channels = 4;
  std::vector<int> block_out_channels{128, 256, 512, 512};
  int layers_per_block = 2;
  int norm_num_groups = 32;
  float norm_eps = 1e-6f;
  int out_channels = 3;
  // Throws dit::Error naming the inconsistent field.
  void validate() const;
};

// The real decoder's configuration (the default above) and a small one for CPU demos and CI:
// four blocks of 32, 32, 64, 64 channels, 1 layer per block, 8 groups (8x upscaling like sd,
// about 5 G multiply-adds per 256x256 image instead of 311 G).
VaeConfig sd_vae_config();
VaeConfig tiny_vae_config();
// From the JSON kept in the vae_tiny vectors' __metadata__.config.
VaeConfig vae_config_from_json(const std::string& json_text);

struct VaeWeights {
  std::map<std::string, Tensor> tensors;  // float32, diffusers names
  const Tensor& at(const std::string& name) const;
  // Diffusers names, or the original LDM names (converted on load). Checks shapes, and refuses
  // a NaN or infinite value by tensor and element.
  static VaeWeights load(const std::string& path, const VaeConfig& config);
  // Seeded weights: N(0, 1/fan_in) convolution and projection weights, norm gains N(1, 0.1),
  // biases N(0, 0.05), each tensor from its own counter-based stream (seed and name).
  static VaeWeights random(const VaeConfig& config, uint64_t seed);
};

class VaeDecoder {
 public:
  virtual ~VaeDecoder() = default;
  virtual const VaeConfig& config() const = 0;
  // z [N, latent_channels, s, s], already divided by the scaling factor (0.18215) ->
  // [N, out_channels, u s, u s], u the upscale (8 for sd and tiny), = decoder(post_quant_conv(z)).
  // The CUDA decoder plans (picks cuDNN algorithms, sizes its arena) on the first call for each
  // (N, s): time later calls.
  virtual Tensor decode(const Tensor& z) = 0;
};

// What every decoder's decode() accepts: z [N, latent_channels, s, s] with N and s positive; else
// dit::Error(invalid_argument) naming the shape.
void check_latents(const Tensor& z, const VaeConfig& config);

std::unique_ptr<VaeDecoder> make_vae_decoder(Backend backend, const VaeConfig& config, const VaeWeights& weights,
                                             Precision precision = Precision::fp32, const EngineOptions& options = {});

// Loads, ahead of make_vae_decoder, what the backend's decoder needs that needs no device: for
// cuda, cuDNN's sub-libraries, which it otherwise loads inside its first calls. Best effort (a
// failure here shows again, named, in make_vae_decoder); safe on any thread, before the device
// context exists.
void preload_vae_backend(Backend backend);

// A decoder made on a thread of its own by `make` (its weights, library handles and upload), so
// that its load overlaps what the caller does meanwhile: the DiT's load and first sampling steps.
// wait() waits for it and rethrows what `make` threw; decode() waits first. The destructor waits
// for a making still under way.
class PendingVaeDecoder final : public VaeDecoder {
 public:
  PendingVaeDecoder(VaeConfig config, std::function<std::unique_ptr<VaeDecoder>()> make)
      : config_(std::move(config)), making_(std::async(std::launch::async, std::move(make))) {}
  const VaeConfig& config() const override { return config_; }
  VaeDecoder& wait() {
    if (!made_) made_ = making_.get();
    return *made_;
  }
  Tensor decode(const Tensor& z) override { return wait().decode(z); }

 private:
  VaeConfig config_;
  std::future<std::unique_ptr<VaeDecoder>> making_;
  std::unique_ptr<VaeDecoder> made_;
};

}  // namespace dit
