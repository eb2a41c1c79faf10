// Device memory for the CUDA backend: one cudaMalloc per arena, carved into 256-byte-aligned
// pieces by a bump pointer; nothing is freed piecewise. ArenaSizer runs the same carving code
// without memory, so an arena is sized exactly before it is allocated:
//   ArenaSizer sizer; carve(sizer); DeviceArena arena(sizer.bytes()); carve(arena);
#pragma once

#include <cstddef>
#include <cstdint>

namespace dit::cuda {

constexpr size_t kArenaAlignment = 256;

constexpr size_t align_up(size_t bytes, size_t alignment = kArenaAlignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

class ArenaSizer {
 public:
  void* take(size_t bytes) {
    bytes_ = align_up(bytes_) + bytes;
    return nullptr;
  }
  template <typename T>
  T* take(size_t count) {
    take(count * sizeof(T));
    return nullptr;
  }
  size_t bytes() const { return align_up(bytes_); }

 private:
  size_t bytes_ = 0;
};

class DeviceArena {
 public:
  DeviceArena() = default;
  explicit DeviceArena(size_t capacity);  // throws dit::Error(device) when cudaMalloc fails
  ~DeviceArena();
  DeviceArena(DeviceArena&& other) noexcept;
  DeviceArena& operator=(DeviceArena&& other) noexcept;
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // The next `bytes`, 256-byte aligned; throws dit::Error(device) past the capacity.
  void* take(size_t bytes);
  template <typename T>
  T* take(size_t count) {
    return static_cast<T*>(take(count * sizeof(T)));
  }
  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }

 private:
  std::byte* base_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
};

}  // namespace dit::cuda
