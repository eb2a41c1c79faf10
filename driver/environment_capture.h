// What `doctor` records about the machine: GPUs (CUDA runtime when dit-ar is built with CUDA,
// NVML through dlopen when the driver ships it; neither is linked as libcuda/NVML), library
// versions (cuBLASLt, cuDNN, NCCL through dlopen), the toolchain and profilers, the repository.
// Works on a machine without a GPU. Per-GPU entries carry index, UUID and memory, which is
// what a CTest resource spec for GPUs is derived from.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dit::ar {

struct EnvironmentCapture {
  nlohmann::json document;            // written as environment.json
  std::vector<std::string> warnings;  // e.g. "the GPU is not an RTX A5500"
};

EnvironmentCapture capture_environment(const std::filesystem::path& source_dir);

// One line naming the GPU(s) for results.tsv: "NVIDIA RTX A5500", "2x NVIDIA H200", "none".
std::string gpu_description();

}  // namespace dit::ar
