#include "model/cuda/device_arena.h"

#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "kernels/cuda_check.h"

namespace dit::cuda {

DeviceArena::DeviceArena(size_t capacity) : capacity_(align_up(capacity)) {
  if (capacity_ == 0) return;
  void* memory = nullptr;
  DIT_CUDA_CHECK(cudaMalloc(&memory, capacity_));
  base_ = static_cast<std::byte*>(memory);
}

DeviceArena::~DeviceArena() {
  if (base_) cudaFree(base_);  // destruction cannot report; a failure here leaks nothing new
}

DeviceArena::DeviceArena(DeviceArena&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      used_(std::exchange(other.used_, 0)) {}

DeviceArena& DeviceArena::operator=(DeviceArena&& other) noexcept {
  if (this != &other) {
    if (base_) cudaFree(base_);
    base_ = std::exchange(other.base_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    used_ = std::exchange(other.used_, 0);
  }
  return *this;
}

void* DeviceArena::take(size_t bytes) {
  const size_t offset = align_up(used_);
  if (offset + bytes > capacity_)
    throw Error(ErrorKind::device, "device arena exhausted: " + std::to_string(offset + bytes) +
                                       " bytes needed, capacity " + std::to_string(capacity_) +
                                       " (the sizing pass and the carving pass disagree)");
  used_ = offset + bytes;
  return base_ + offset;
}

}  // namespace dit::cuda
