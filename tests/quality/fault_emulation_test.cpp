// On the CPU backend and a CI-corpus case (tiny_b: head size 72, as DiT-XL/2): the committed
// contract passes an unmodified re-render and fails each emulated bug (fault_emulation.h).
#include <gtest/gtest.h>

#include <cstdio>

#include "quality/contract.h"
#include "quality/corpus.h"
#include "quality/metrics.h"
#include "quality/renderer/render.h"
#include "tests/quality/fault_emulation.h"

namespace dit::quality::test {
namespace {

class FaultEmulation : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    contract_ = new Contract(load_contract(DIT_QUALITY_SOURCE_DIR "/contract.json"));
    case_ = new Case(load_corpus(DIT_QUALITY_SOURCE_DIR "/cases_cpu.jsonl").at("cpu-b-ddpm10-cfg4-c3"));
    Renderer renderer(settings());
    golden_ = new RenderedCase(renderer.render(*case_));
  }
  static void TearDownTestSuite() {
    delete contract_;
    delete case_;
    delete golden_;
  }
  static RenderSettings settings(std::function<void(DitWeights&)> edit = {}) {
    RenderSettings s;
    s.backend = Backend::cpu;
    s.data_dir = DIT_TEST_DATA_DIR;
    s.edit_weights = std::move(edit);
    return s;
  }
  static RenderedCase render_with(std::function<void(DitWeights&)> edit) {
    Renderer renderer(settings(std::move(edit)));
    return renderer.render(*case_);
  }
  static Contract* contract_;
  static Case* case_;
  static RenderedCase* golden_;
};
Contract* FaultEmulation::contract_ = nullptr;
Case* FaultEmulation::case_ = nullptr;
RenderedCase* FaultEmulation::golden_ = nullptr;

TEST_F(FaultEmulation, TheUnmodifiedEnginePasses) {
  EXPECT_EQ(failing_gates(*contract_, case_->id, *golden_, render_with({})), std::set<std::string>{});
}

TEST_F(FaultEmulation, AttentionScaleOffByOnePercentFails) {
  const RenderedCase candidate = render_with([](DitWeights& w) { scale_attention_logits(w, 1.01f); });
  const std::set<std::string> failing = failing_gates(*contract_, case_->id, *golden_, candidate);
  const double error = latent_relative_l2(candidate.latent.data, golden_->latent.data);
  std::printf("latent_relative_l2 %.3g, %zu gates fail\n", error, failing.size());
  EXPECT_TRUE(failing.count("latent_relative_l2")) << "latent_relative_l2 " << error;
}

TEST_F(FaultEmulation, OneBlocksIgnoredGateFails) {
  const RenderedCase candidate = render_with([](DitWeights& w) { ignore_attention_gate(w, 1); });
  const std::set<std::string> failing = failing_gates(*contract_, case_->id, *golden_, candidate);
  const double error = latent_relative_l2(candidate.latent.data, golden_->latent.data);
  std::printf("latent_relative_l2 %.3g, %zu gates fail\n", error, failing.size());
  EXPECT_TRUE(failing.count("latent_relative_l2")) << "latent_relative_l2 " << error;
}

TEST(FaultEdits, ChangeOnlyTheRowsTheyClaim) {
  ModelConfig config = model_config_from_json(
      R"({"input_size": 8, "patch_size": 2, "hidden_size": 16, "depth": 2, "num_heads": 2, "num_classes": 4})");
  const DitWeights original = DitWeights::random(config, 1);
  DitWeights scaled = original;
  scale_attention_logits(scaled, 2.0f);
  EXPECT_EQ(block_count(scaled), 2);
  const Tensor& before = original.at("blocks.1.attn.qkv.weight");
  const Tensor& after = scaled.at("blocks.1.attn.qkv.weight");
  EXPECT_FLOAT_EQ(after.data[5], 2 * before.data[5]);                  // a q row
  EXPECT_FLOAT_EQ(after.data[16 * 16 + 5], before.data[16 * 16 + 5]);  // a k row
  EXPECT_FLOAT_EQ(scaled.at("blocks.1.attn.qkv.bias").data[3], 2 * original.at("blocks.1.attn.qkv.bias").data[3]);
  DitWeights gated = original;
  ignore_attention_gate(gated, 0);
  const Tensor& ada = gated.at("blocks.0.adaLN_modulation.1.weight");
  EXPECT_EQ(ada.data[2 * 16 * 16 + 7], 0.0f);
  EXPECT_EQ(gated.at("blocks.0.adaLN_modulation.1.bias").data[2 * 16 + 3], 1.0f);
  EXPECT_EQ(ada.data[3 * 16 * 16 + 7], original.at("blocks.0.adaLN_modulation.1.weight").data[3 * 16 * 16 + 7]);
  EXPECT_EQ(gated.at("blocks.1.adaLN_modulation.1.bias").data[2 * 16 + 3],
            original.at("blocks.1.adaLN_modulation.1.bias").data[2 * 16 + 3]);
}

}  // namespace
}  // namespace dit::quality::test
