// A checkpoint's tensors into device memory without a host copy of the model: the tensors are
// cut into pieces, and a few worker threads each take the next piece, convert it from the file's
// mapping into its device dtype in their own pinned buffer, and copy it asynchronously on the
// model's stream, waiting only for their own previous copy before reusing the buffer. Internal to
// model/ (the CUDA backend's upload_weights).
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "kernels/cuda_types.h"
#include "model/weights.h"

namespace dit::cuda {

class CheckpointUpload {
 public:
  // A piece is at most kPieceBytes in the device dtype; each worker has one buffer of that size.
  static constexpr size_t kPieceBytes = size_t{2} << 20;
  static constexpr unsigned kMaxWorkers = 16;

  CheckpointUpload(const DitCheckpoint& checkpoint, cudaStream_t stream) : checkpoint_(checkpoint), stream_(stream) {}

  // Records engine tensor `name` (count elements) for `target` as `dtype`; nothing is read yet.
  void add(void* target, const std::string& name, size_t count, DeviceDtype dtype);
  // Converts every piece recorded, rounded to nearest even as core/half.h rounds, and enqueues
  // its copy; returns when all are enqueued and the buffers free (the copies done). Throws what
  // DitCheckpoint::read throws for the first bad piece in the order recorded (a non-finite value,
  // named), and dit::Error (device) for pinned memory, an event or a copy that fails.
  void run();

 private:
  struct Piece {
    void* target;
    const std::string* name;
    size_t first, count;
    DeviceDtype dtype;
  };
  void convert(const Piece& piece, std::byte* out) const;

  const DitCheckpoint& checkpoint_;
  cudaStream_t stream_;
  std::deque<std::string> names_;  // the names the pieces point to (a deque keeps them in place)
  std::vector<Piece> pieces_;
};

}  // namespace dit::cuda
