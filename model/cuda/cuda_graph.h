// One CUDA Graph capture for the engine's replayed passes (the DiT forward pass, the VAE decode).
#pragma once

#include <cuda_runtime.h>

#include <functional>

#include "kernels/cuda_check.h"

namespace dit::cuda {

// Captures what `enqueue` puts on `stream` (and on streams it joins) and instantiates it. A
// failing `enqueue` ends the capture and its error propagates; a failed capture or
// instantiation throws dit::Error (device). The caller owns the returned graph.
inline cudaGraphExec_t capture_graph(cudaStream_t stream, const std::function<void()>& enqueue) {
  cudaGraph_t graph = nullptr;
  DIT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);  // ends the capture; the error in flight is the one to report
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  DIT_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  DIT_CUDA_CHECK(instantiated);
  return exec;
}

}  // namespace dit::cuda
