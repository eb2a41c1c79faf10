// CTest's GPU allocation (cmake/DitGpuResources.cmake). A GPU test of a build configured with
// GPUs declares RESOURCE_GROUPS "gpus:<k>" (all of a GPU's kCtestGpuSlots slots, or one for a
// test that shares it); CTest then starts it with CTEST_RESOURCE_GROUP_COUNT=1 and
// CTEST_RESOURCE_GROUP_0_GPUS="id:<n>,slots:<k>", where <n> is the GPU's index as nvidia-smi
// lists it. apply_ctest_gpu_allocation() makes that GPU the only one the process sees
// (CUDA_DEVICE_ORDER=PCI_BUS_ID, nvidia-smi's order, and CUDA_VISIBLE_DEVICES=<n>), so tests
// running side by side each have their own device. It must run before the CUDA runtime starts
// (first thing in main); children inherit the result. Without an allocation nothing changes.
#pragma once

#include <optional>
#include <string>

namespace dit {

// Slots per GPU in CTest's resource specification (DIT_CTEST_GPU_SLOTS in DitGpuResources.cmake).
inline constexpr int kCtestGpuSlots = 4;

// The GPU index an allocation names, or nullopt when `group_count` is unset or 0 (no allocation:
// CTest gives a test without RESOURCE_GROUPS a count of 0 when the run has a specification).
// Throws dit::Error (invalid_argument) naming the variable for anything else than one group
// holding 1 to kCtestGpuSlots slots of one GPU with a decimal index.
std::optional<std::string> ctest_gpu_index(const char* group_count, const char* group_gpus);

// Reads the two variables, and on an allocation sets CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES;
// returns the index it applied.
std::optional<std::string> apply_ctest_gpu_allocation();

// For a main: apply_ctest_gpu_allocation(), or on a malformed allocation "<program>: <problem>"
// on stderr and false (the caller exits 2).
bool take_ctest_gpu(const char* program);

}  // namespace dit
