// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// Whether a CUDA GPU is usable (always false in a build without the CUDA backend).
#pragma once

#include <string>

namespace dit::quality {

// On false, `why` says what is missing.
bool gpu_available(std::string& why);

// The device a gate set renders on, as the contract's floors name it: "cpu" for the CPU backend,
// else the current CUDA device's name (cudaDeviceProp::name, "NVIDIA H200"). Throws dit::Error
// (device) when a CUDA set has no usable GPU.
std::string device_key(const std::string& backend);

}  // namespace dit::quality
