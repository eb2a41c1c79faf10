// CheckpointUpload (model/cuda/checkpoint_upload.h).
#include "model/cuda/checkpoint_upload.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <vector>

#include "core/half.h"
#include "kernels/cuda_check.h"

namespace dit::cuda {

namespace {

// Elements per task of a piece's conversion: float32 staging of 64 KB, in a core's L2.
constexpr size_t kBlock = 16384;

}  // namespace

CheckpointUpload::CheckpointUpload(const DitCheckpoint& checkpoint, cudaStream_t stream)
    : checkpoint_(checkpoint), stream_(stream) {
  void* pinned = nullptr;
  DIT_CUDA_CHECK(cudaHostAlloc(&pinned, kBuffers * kPieceBytes, cudaHostAllocDefault));
  pinned_ = static_cast<std::byte*>(pinned);
  for (cudaEvent_t& event : copied_) {
    const cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (status != cudaSuccess) {
      release();  // what was made so far
      DIT_CUDA_CHECK(status);
    }
  }
}

CheckpointUpload::~CheckpointUpload() { release(); }

void CheckpointUpload::release() noexcept {
  // Cannot report (a destructor's work): the statuses are dropped. A buffer is freed only after
  // its copy.
  for (size_t i = 0; i < kBuffers; ++i) {
    if (copied_[i] == nullptr) continue;
    if (in_flight_[i]) cudaEventSynchronize(copied_[i]);
    cudaEventDestroy(copied_[i]);
    copied_[i] = nullptr;
    in_flight_[i] = false;
  }
  if (pinned_ != nullptr) cudaFreeHost(pinned_);
  pinned_ = nullptr;
}

void CheckpointUpload::upload(void* target, const std::string& name, size_t count, DeviceDtype dtype) {
  const size_t element = dtype_bytes(dtype);
  const size_t per_piece = kPieceBytes / element;
  for (size_t first = 0; first < count; first += per_piece) {
    const size_t n = std::min(per_piece, count - first);
    std::byte* buffer = pinned_ + next_ * kPieceBytes;
    if (in_flight_[next_]) {  // the buffer's previous copy must be done before it is written
      DIT_CUDA_CHECK(cudaEventSynchronize(copied_[next_]));
      in_flight_[next_] = false;
    }
    convert(name, first, n, dtype, buffer);
    DIT_CUDA_CHECK(cudaMemcpyAsync(static_cast<std::byte*>(target) + first * element, buffer, n * element,
                                   cudaMemcpyHostToDevice, stream_));
    DIT_CUDA_CHECK(cudaEventRecord(copied_[next_], stream_));
    in_flight_[next_] = true;
    next_ = (next_ + 1) % kBuffers;
  }
}

void CheckpointUpload::convert(const std::string& name, size_t first, size_t count, DeviceDtype dtype,
                               std::byte* out) const {
  const auto blocks = static_cast<int64_t>((count + kBlock - 1) / kBlock);
  std::vector<std::exception_ptr> failures(static_cast<size_t>(blocks));
#pragma omp parallel if (blocks > 1)
  {
    std::vector<float> wide(dtype == DeviceDtype::f32 ? 0 : kBlock);  // this thread's float32 staging
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const size_t begin = static_cast<size_t>(b) * kBlock, n = std::min(kBlock, count - begin);
      try {
        if (dtype == DeviceDtype::f32) {
          checkpoint_.read(name, first + begin, n, reinterpret_cast<float*>(out) + begin);
        } else {
          checkpoint_.read(name, first + begin, n, wide.data());
          uint16_t* narrow = reinterpret_cast<uint16_t*>(out) + begin;
          if (dtype == DeviceDtype::f16)
            floats_to_f16_bits_serial(wide.data(), narrow, n);
          else
            floats_to_bf16_bits_serial(wide.data(), narrow, n);
        }
      } catch (...) {
        failures[static_cast<size_t>(b)] = std::current_exception();
      }
    }
  }
  // The first bad block in the tensor's order is the first bad element's.
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

}  // namespace dit::cuda
