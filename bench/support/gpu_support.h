// Fixed during a session (the performance harness).
// GPU helpers of the benchmark suites: the probe that opens the device and writes its context
// (GPU, clocks, driver, CUDA runtime, cuBLASLt, cuDNN), CUDA-event timing, the L2 flush, and
// peak device memory as bench/README.md defines it.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "bench/support/bench_support.h"

namespace dit::bench {

// Creates the CUDA context, records the memory in use right after it (the zero of every
// memory counter), and appends the device context. Returns why no GPU is usable, if so.
std::optional<std::string> probe_gpu(Context& context);

// Device memory in use now (total - free, as cudaMemGetInfo reports it) and right after the
// context was created.
size_t device_used_bytes();
size_t context_used_bytes();

// The high-water mark of device memory in use, sampled every `period_us` by a thread while it
// lives and at every sample() call: its peak minus the usage right after context creation is
// DESIGN's peak device memory (arena, weights and library workspaces included). The GPU is the
// benchmark's alone, so other processes' memory does not enter.
class DeviceMemoryMonitor {
 public:
  explicit DeviceMemoryMonitor(int period_us = 500);
  ~DeviceMemoryMonitor();
  DeviceMemoryMonitor(const DeviceMemoryMonitor&) = delete;
  DeviceMemoryMonitor& operator=(const DeviceMemoryMonitor&) = delete;

  void sample();
  size_t peak_used_bytes() const { return peak_.load(); }
  size_t peak_above_context() const;

 private:
  std::atomic<size_t> peak_{0};
  std::atomic<bool> running_{true};
  std::thread poller_;
};

// Times work enqueued on one stream with a pair of CUDA events.
class EventTimer {
 public:
  explicit EventTimer(cudaStream_t stream);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start();
  double stop_seconds();  // records the stop event, waits for it, returns the elapsed time

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// Evicts the L2 cache by writing a buffer twice its size before a timed kernel, so that no
// kernel benchmark reads its inputs from a cache warmed by the previous iteration.
class L2Flusher {
 public:
  L2Flusher();
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void flush(cudaStream_t stream);
  size_t bytes() const { return bytes_; }

 private:
  void* buffer_ = nullptr;
  size_t bytes_ = 0;
  int pass_ = 0;
};

// A device allocation (at least 256 bytes) freed with its owner, for the research tools.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return pointer_; }

 private:
  void* pointer_ = nullptr;
};

// The name of device 0, or nothing when the runtime sees no GPU.
std::optional<std::string> first_gpu_name();

// Throws dit::Error(device) naming the call when a CUDA runtime call fails.
void check(cudaError_t status, const char* call, const char* file, int line);

}  // namespace dit::bench

#define DIT_BENCH_CUDA(call) ::dit::bench::check((call), #call, __FILE__, __LINE__)
