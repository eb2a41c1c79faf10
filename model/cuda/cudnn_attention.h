// cuDNN's fused attention (the SDPA graph of cuDNN's graph API, built through cudnn-frontend) on
// the engine's layout: qkv [B, T, 3, H, hd] as the fused qkv GEMM writes it, read as three strided
// [B, H, T, hd] views, and out [B, T, H, hd], as kernels/attention.h's entries take them. The
// CUDA model uses it where its shape is long enough to gain (CudaDitModel::attend); elsewhere the
// engine's own kernels run. Built only where the build found cudnn-frontend
// (DIT_WITH_CUDNN_FRONTEND, dit::cudnn_frontend); without it `available()` is false.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "kernels/cuda_types.h"

namespace dit::cuda {

class CudnnAttention {
 public:
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // Whether this build has the backend at all.
  static bool available();

  // qkv -> out on `stream`, as dit::cuda::attention; f16 or bf16 only. The first call of a shape
  // builds its plan (and its workspace, if any), which must not happen under stream capture: the
  // model runs every shape eagerly before it captures it. Returns false, having launched nothing,
  // when cuDNN has no plan for the shape (the caller then runs its own kernel); the answer is
  // kept, so the question is asked once a shape.
  bool run(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd, cudaStream_t stream);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dit::cuda
