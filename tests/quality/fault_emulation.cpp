#include "tests/quality/fault_emulation.h"

#include "quality/gate.h"
#include "quality/scoring.h"

namespace dit::quality::test {

int block_count(const DitWeights& weights) {
  int blocks = 0;
  while (weights.tensors.count("blocks." + std::to_string(blocks) + ".attn.qkv.weight")) ++blocks;
  return blocks;
}

void scale_attention_logits(DitWeights& weights, float factor) {
  for (int block = 0; block < block_count(weights); ++block) {
    const std::string prefix = "blocks." + std::to_string(block) + ".attn.qkv.";
    Tensor& weight = weights.tensors.at(prefix + "weight");  // [3D, D]: q rows first
    Tensor& bias = weights.tensors.at(prefix + "bias");      // [3D]
    const int64_t hidden = weight.dim(1);
    for (int64_t i = 0; i < hidden * hidden; ++i) weight.data[i] *= factor;
    for (int64_t i = 0; i < hidden; ++i) bias.data[i] *= factor;
  }
}

void ignore_attention_gate(DitWeights& weights, int block) {
  const std::string prefix = "blocks." + std::to_string(block) + ".adaLN_modulation.1.";
  Tensor& weight = weights.tensors.at(prefix + "weight");  // [6D, D]
  Tensor& bias = weights.tensors.at(prefix + "bias");      // [6D]
  const int64_t hidden = weight.dim(1);
  for (int64_t row = 2 * hidden; row < 3 * hidden; ++row) {
    for (int64_t column = 0; column < hidden; ++column) weight.data[row * hidden + column] = 0.0f;
    bias.data[row] = 1.0f;
  }
}

std::set<std::string> failing_gates(const Contract& contract, const std::string& case_id, const RenderedCase& golden,
                                    const RenderedCase& candidate) {
  ScoreSet baseline, scores;
  score_outputs(case_id, golden.latent, golden.image, golden.latent, golden.image, true, baseline);
  score_outputs(case_id, candidate.latent, candidate.image, golden.latent, golden.image, true, scores);
  std::set<std::string> failing;
  for (const std::string& metric : contract.required_metrics) {
    const GateReport report =
        gate_metric(GateInputs{contract, {case_id}, baseline, scores, Classification::exact}, metric, metric);
    if (!report.passed) failing.insert(metric);
  }
  return failing;
}

}  // namespace dit::quality::test
