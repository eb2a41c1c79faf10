// The backends' VAE decoder factories, which make_vae_decoder (model/vae_decoder.cpp) picks
// from. Internal to model/.
#pragma once

#include <memory>

#include "model/vae.h"

namespace dit {

// float32 only; throws dit::Error(invalid_argument) for any other precision.
std::unique_ptr<VaeDecoder> make_cpu_vae_decoder(const VaeConfig& config, const VaeWeights& weights,
                                                 Precision precision);

}  // namespace dit
