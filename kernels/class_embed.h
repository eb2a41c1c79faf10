// The class-label half of DiT's conditioning: c = t_emb + table[y] (LabelEmbedder lookup; the
// row num_classes is the null class). The CPU backend does this lookup inline; this is the
// device op (its test holds the host reference).
#pragma once

#include <cstdint>

#include "kernels/cuda_types.h"

namespace dit::cuda {

// t_emb [B, D] f32, table [num_rows, D] f32, labels [B] device int64 in [0, num_rows) ->
// c [B, D] f32. Labels out of range are clamped to the null row (num_rows - 1) and counted in
// *bad_labels (device int, may be null), since a kernel cannot throw.
void class_embed_add(const float* t_emb, const float* table, const int64_t* labels, float* c, int B, int D,
                     int num_rows, int* bad_labels, cudaStream_t stream);

}  // namespace dit::cuda
