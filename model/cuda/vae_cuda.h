// The CUDA VAE decoder's factory (make_vae_decoder picks it for Backend::cuda). Internal to model/.
#pragma once

#include <memory>

#include "model/vae.h"

namespace dit {

// Convolutions on cuDNN, GroupNorm+SiLU, upsampling and the attention softmax in kernels/, the
// attention products on cuBLASLt; channels-last activations in the precision's storage type
// (float32 for fp32 and tf32). Device buffers come from one arena sized for the batch and
// latent size of the first decode (and re-sized when a later decode's shape differs).
// Throws dit::Error(device) without a usable GPU.
std::unique_ptr<VaeDecoder> make_cuda_vae_decoder(const VaeConfig& config, const VaeWeights& weights,
                                                  Precision precision, const EngineOptions& options);

// Creates and destroys one descriptor of each kind the decoder uses: calls that need no device
// but make cuDNN load the sub-libraries they live in. Errors are ignored.
void preload_cuda_vae_libraries();

}  // namespace dit
