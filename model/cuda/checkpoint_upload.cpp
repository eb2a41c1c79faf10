// CheckpointUpload (model/cuda/checkpoint_upload.h).
#include "model/cuda/checkpoint_upload.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "core/half.h"
#include "kernels/cuda_check.h"

namespace dit::cuda {

namespace {

// Elements converted at a time within a piece: float32 staging of 64 KB, in a core's L2.
constexpr size_t kBlock = 16384;

// One cudaHostAlloc for every worker's buffer, freed when it goes.
struct PinnedBuffers {
  explicit PinnedBuffers(size_t bytes) {
    void* pointer = nullptr;
    DIT_CUDA_CHECK(cudaHostAlloc(&pointer, bytes, cudaHostAllocDefault));
    base = static_cast<std::byte*>(pointer);
  }
  ~PinnedBuffers() { cudaFreeHost(base); }  // after every copy from them (run waits for them)
  PinnedBuffers(const PinnedBuffers&) = delete;
  PinnedBuffers& operator=(const PinnedBuffers&) = delete;
  std::byte* base = nullptr;
};

// A worker's event, recorded after its last copy.
struct CopyEvent {
  CopyEvent() { DIT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming)); }
  ~CopyEvent() { cudaEventDestroy(event); }
  CopyEvent(const CopyEvent&) = delete;
  CopyEvent& operator=(const CopyEvent&) = delete;
  cudaEvent_t event = nullptr;
};

}  // namespace

void CheckpointUpload::add(void* target, const std::string& name, size_t count, DeviceDtype dtype) {
  const std::string* stored = &names_.emplace_back(name);
  const size_t per_piece = kPieceBytes / dtype_bytes(dtype);
  for (size_t first = 0; first < count; first += per_piece)
    pieces_.push_back({static_cast<std::byte*>(target) + first * dtype_bytes(dtype), stored, first,
                       std::min(per_piece, count - first), dtype});
}

void CheckpointUpload::run() {
  if (pieces_.empty()) return;
  const unsigned workers = static_cast<unsigned>(
      std::min<size_t>({pieces_.size(), kMaxWorkers, std::max(1u, std::thread::hardware_concurrency())}));
  int device = 0;  // the workers use the caller's device, not each new thread's default one
  DIT_CUDA_CHECK(cudaGetDevice(&device));
  PinnedBuffers buffers(workers * kPieceBytes);
  std::deque<CopyEvent> events(workers);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex failure_mutex;
  size_t failed_piece = pieces_.size();
  std::exception_ptr failure;
  const auto work = [&](unsigned worker) {
    std::byte* buffer = buffers.base + worker * kPieceBytes;
    bool in_flight = false;
    try {
      DIT_CUDA_CHECK(cudaSetDevice(device));
      for (size_t index; !stop.load(std::memory_order_relaxed) && (index = next.fetch_add(1)) < pieces_.size();) {
        const Piece& piece = pieces_[index];
        if (in_flight) DIT_CUDA_CHECK(cudaEventSynchronize(events[worker].event));  // its buffer is free again
        in_flight = false;
        try {
          convert(piece, buffer);
        } catch (...) {
          const std::lock_guard lock(failure_mutex);
          if (index < failed_piece) {  // pieces are taken in order: every earlier one is done
            failed_piece = index;
            failure = std::current_exception();
          }
          stop = true;
          break;
        }
        DIT_CUDA_CHECK(cudaMemcpyAsync(piece.target, buffer, piece.count * dtype_bytes(piece.dtype),
                                       cudaMemcpyHostToDevice, stream_));
        DIT_CUDA_CHECK(cudaEventRecord(events[worker].event, stream_));
        in_flight = true;
      }
      if (in_flight) DIT_CUDA_CHECK(cudaEventSynchronize(events[worker].event));
    } catch (...) {  // a device error: reported unless a bad value was found first
      if (in_flight) cudaEventSynchronize(events[worker].event);
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      stop = true;
    }
  };
  {
    std::vector<std::jthread> threads;
    threads.reserve(workers);
    for (unsigned worker = 1; worker < workers; ++worker) threads.emplace_back(work, worker);
    work(0);
  }  // joined: every buffer's copies are done
  pieces_.clear();
  if (failure) std::rethrow_exception(failure);
}

void CheckpointUpload::convert(const Piece& piece, std::byte* out) const {
  if (piece.dtype == DeviceDtype::f32) {
    checkpoint_.read(*piece.name, piece.first, piece.count, reinterpret_cast<float*>(out));
    return;
  }
  float wide[kBlock];
  auto* narrow = reinterpret_cast<uint16_t*>(out);
  for (size_t begin = 0; begin < piece.count; begin += kBlock) {
    const size_t n = std::min(kBlock, piece.count - begin);
    checkpoint_.read(*piece.name, piece.first + begin, n, wide);
    if (piece.dtype == DeviceDtype::f16)
      floats_to_f16_bits_serial(wide, narrow + begin, n);
    else
      floats_to_bf16_bits_serial(wide, narrow + begin, n);
  }
}

}  // namespace dit::cuda
