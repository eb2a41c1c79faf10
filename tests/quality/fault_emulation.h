// Two realistic engine bugs reproduced exactly by weight edits, so the gate can be shown to
// catch them on any backend without fault-injection hooks in the engine:
// - attention scale off by 1%: softmax(1.01 q k^T / sqrt(d)) = softmax((1.01 q) k^T / sqrt(d)),
//   and q = W_q h + b_q, so scaling the q rows of qkv's weight and bias by 1.01 is that bug;
// - one block's gate ignored (x += Attn(...) instead of x += gate_msa * Attn(...)): gate_msa is
//   rows [2D, 3D) of adaLN_modulation.1 (weight [6D, D], bias [6D]); zero weights and a bias of
//   one make it exactly 1 for every conditioning, which is what ignoring it computes.
#pragma once

#include <set>
#include <string>

#include "model/weights.h"
#include "quality/contract.h"
#include "quality/renderer/render.h"

namespace dit::quality::test {

// Number of transformer blocks in `weights`.
int block_count(const DitWeights& weights);
// Scales every block's attention logits by `factor` (through its q rows).
void scale_attention_logits(DitWeights& weights, float factor);
// Makes block `block`'s attention gate (gate_msa) exactly 1.
void ignore_attention_gate(DitWeights& weights, int block);
// The required metrics of `contract` whose gate fails when `candidate` is judged against
// `golden` for the single case `case_id` (classification exact; the baseline is the golden).
std::set<std::string> failing_gates(const Contract& contract, const std::string& case_id, const RenderedCase& golden,
                                    const RenderedCase& candidate);

}  // namespace dit::quality::test
