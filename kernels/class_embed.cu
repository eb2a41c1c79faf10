// CUDA class-label embedding add (kernels/class_embed.h).
#include "kernels/class_embed.h"

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"

namespace dit::cuda {

// ---------------------------------------------------------------------------------------------
// Kernel

// grid (ceil(D / blockDim), B)
static __global__ void class_embed_add_kernel(const float* __restrict__ t_emb,     // [B, D]
                                              const float* __restrict__ table,     // [rows, D]
                                              const int64_t* __restrict__ labels,  // [B]
                                              float* __restrict__ c,               // [B, D]
                                              int D, int num_rows, int* bad_labels) {
  const int b = blockIdx.y, d = blockIdx.x * blockDim.x + threadIdx.x;
  if (d >= D) return;
  int64_t label = labels[b];
  if (label < 0 || label >= num_rows) {
    if (d == 0 && bad_labels) atomicAdd(bad_labels, 1);
    label = num_rows - 1;
  }
  const size_t i = static_cast<size_t>(b) * D + d;
  c[i] = t_emb[i] + table[static_cast<size_t>(label) * D + d];
}

// ---------------------------------------------------------------------------------------------
// Launcher

static void launch_class_embed_add(const float* t_emb, const float* table, const int64_t* labels, float* c, int B,
                                   int D, int num_rows, int* bad_labels, cudaStream_t stream) {
  constexpr int kThreads = 128;
  const dim3 grid((D + kThreads - 1) / kThreads, B);
  class_embed_add_kernel<<<grid, kThreads, 0, stream>>>(t_emb, table, labels, c, D, num_rows, bad_labels);
  DIT_LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// Public entry

void class_embed_add(const float* t_emb, const float* table, const int64_t* labels, float* c, int B, int D,
                     int num_rows, int* bad_labels, cudaStream_t stream) {
  const char* op = "dit::cuda::class_embed_add";
  require(B > 0 && B <= 65535 && D > 0 && num_rows > 0, op, "size out of range");
  require_aligned(t_emb, alignof(float), op, "t_emb");
  require_aligned(table, alignof(float), op, "table");
  require_aligned(labels, alignof(int64_t), op, "labels");
  require_aligned(c, alignof(float), op, "c");
  launch_class_embed_add(t_emb, table, labels, c, B, D, num_rows, bad_labels, stream);
}

}  // namespace dit::cuda
