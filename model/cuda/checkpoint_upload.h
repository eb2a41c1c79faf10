// A checkpoint's tensors into device memory without a host copy of the model: each tensor is
// converted, piece by piece and on every core, from the file's mapping into its device dtype in
// one of a few pinned buffers, and copied asynchronously on the model's stream while the next
// piece is converted. Internal to model/ (the CUDA backend's upload_weights).
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "kernels/cuda_types.h"
#include "model/weights.h"

typedef struct CUevent_st* cudaEvent_t;

namespace dit::cuda {

class CheckpointUpload {
 public:
  // Pieces of at most kPieceBytes (in the device dtype), kBuffers of them in flight.
  static constexpr size_t kBuffers = 4;
  static constexpr size_t kPieceBytes = size_t{8} << 20;

  // Throws dit::Error (device) when the pinned buffers or their events cannot be made.
  CheckpointUpload(const DitCheckpoint& checkpoint, cudaStream_t stream);
  // Waits for the copies in flight (the buffers are theirs until then), then frees the buffers.
  ~CheckpointUpload();
  CheckpointUpload(const CheckpointUpload&) = delete;
  CheckpointUpload& operator=(const CheckpointUpload&) = delete;

  // Enqueues engine tensor `name` (count elements) into `target` as `dtype`, rounded to nearest
  // even as core/half.h rounds. Returns once its last piece is converted and its copy enqueued:
  // the stream finishes it. Throws what DitCheckpoint::read throws (a non-finite value, named),
  // and dit::Error (device) for a failed copy.
  void upload(void* target, const std::string& name, size_t count, DeviceDtype dtype);

 private:
  void release() noexcept;
  void convert(const std::string& name, size_t first, size_t count, DeviceDtype dtype, std::byte* out) const;

  const DitCheckpoint& checkpoint_;
  cudaStream_t stream_;
  std::byte* pinned_ = nullptr;
  std::array<cudaEvent_t, kBuffers> copied_{};  // recorded after each buffer's copy
  std::array<bool, kBuffers> in_flight_{};
  size_t next_ = 0;
};

}  // namespace dit::cuda
