// On the CUDA backend and a DiT-XL/2 corpus case: the committed contract passes an unmodified
// re-render (a fresh engine instance) and fails each emulated bug (fault_emulation.h): the
// attention scale off by 1% in every block, and block 13's attention gate ignored.
#include <gtest/gtest.h>

#include "quality/contract.h"
#include "quality/corpus.h"
#include "quality/renderer/render.h"
#include "tests/quality/fault_emulation.h"

namespace dit::quality::test {
namespace {

constexpr const char* kCaseId = "xl256-ddim50-cfg4-c387";  // critical, 50 DDIM steps, guidance 4
constexpr int kGateBlock = 13;

RenderedCase render(const Case& c, std::function<void(DitWeights&)> edit) {
  RenderSettings settings;
  settings.backend = Backend::cuda;
  settings.precision = Precision::fp32;
  settings.edit_weights = std::move(edit);
  Renderer renderer(settings);
  return renderer.render(c);
}

TEST(GpuFaultEmulation, TheGateCatchesBothBugsAndPassesTheUnmodifiedEngine) {
  const Contract contract = load_contract(DIT_QUALITY_SOURCE_DIR "/contract.json");
  const Case c = load_corpus(DIT_QUALITY_SOURCE_DIR "/cases.jsonl").at(kCaseId);
  const RenderedCase golden = render(c, {});
  EXPECT_EQ(failing_gates(contract, c.id, golden, render(c, {})), std::set<std::string>{});
  const std::set<std::string> scale_failures =
      failing_gates(contract, c.id, golden, render(c, [](DitWeights& w) { scale_attention_logits(w, 1.01f); }));
  EXPECT_TRUE(scale_failures.count("latent_relative_l2")) << "attention scale +1% passed the gate";
  const std::set<std::string> gate_failures =
      failing_gates(contract, c.id, golden, render(c, [](DitWeights& w) { ignore_attention_gate(w, kGateBlock); }));
  EXPECT_TRUE(gate_failures.count("latent_relative_l2")) << "block " << kGateBlock << "'s ignored gate passed the gate";
}

}  // namespace
}  // namespace dit::quality::test
