// The CUDA backend of the DiT: weights converted once at load to the
// compute dtype of `precision` in one device arena, the forward pass on cuBLASLt GEMMs and the
// kernels of kernels/*.cu, and the whole sampling loop (noise, guidance, DDPM/DDIM) on the GPU.
#pragma once

#include <memory>

#include "model/dit_model.h"

namespace dit {

// Throws dit::Error (device) when no GPU is usable, (invalid_argument) when a weight is missing
// or misshapen.
std::unique_ptr<DitModel> make_cuda_model(const ModelConfig& config, const DitWeights& weights, Precision precision,
                                          const EngineOptions& options);
// The seeded random weights drawn on the device (the same bits as DitWeights::random).
std::unique_ptr<DitModel> make_cuda_model(const ModelConfig& config, const RandomDitWeights& weights,
                                          Precision precision, const EngineOptions& options);
// A checkpoint streamed from its mapping into the device arena (make_model's overload).
std::unique_ptr<DitModel> make_cuda_model(const DitCheckpoint& checkpoint, Precision precision,
                                          const EngineOptions& options);

}  // namespace dit
