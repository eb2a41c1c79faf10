// Bringing a range of device memory into the L2 cache ahead of the kernel that reads it. The
// DiT's block GEMMs at small batches read their weights from DRAM while the kernels before them
// (attention, the LayerNorm) leave the memory system idle; prefetching the next GEMMs' weights on
// a side stream during those kernels moves that traffic off the critical path. No output: only
// the cache changes, never a byte of memory.
#pragma once

#include <cstddef>

#include "kernels/cuda_types.h"

namespace dit::cuda {

enum class PrefetchMode {
  prefetch,  // prefetch.global.L2 on every 128-byte line
  load,      // a 4-byte load with the L2::256B fetch hint on every 256 bytes, its value discarded
};

// Enqueues the prefetch of [data, data + bytes) on `stream` with a few blocks (it is meant to run
// beside other kernels). bytes == 0 enqueues nothing.
void prefetch_l2(const void* data, size_t bytes, PrefetchMode mode, cudaStream_t stream);

}  // namespace dit::cuda
