// The engine options a calibration restates with (model/engine_options.h): "candidate:N" GEMM
// plans and attention forms parse and throw as documented, and the CPU backend refuses both, so a
// calibration never restates nothing.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/engine_options.h"
#include "quality/renderer/render.h"

namespace dit {
namespace {

// The error's message when `call` throws dit::Error(invalid_argument), else a failure.
template <typename Call>
std::string invalid_argument_message(Call call) {
  try {
    call();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

TEST(CalibrationEngineOptions, GemmCandidateSettingsParse) {
  const std::vector<std::pair<std::string, std::optional<int>>> cases = {
      {"", std::nullopt}, {"off", std::nullopt}, {"/plans/h200.json", std::nullopt},
      {"candidate:0", 0}, {"candidate:2", 2},    {"candidate:63", 63},
  };
  for (const auto& [setting, expected] : cases) EXPECT_EQ(gemm_candidate_setting(setting), expected) << setting;
  for (const char* bad : {"candidate:", "candidate:-1", "candidate:64", "candidate:1x", "candidate: 1"}) {
    const std::string message = invalid_argument_message([&] { gemm_candidate_setting(bad); });
    EXPECT_NE(message.find(bad), std::string::npos) << message;
  }
  const EngineOptions options = engine_options_from(
      [](const char* name) { return std::string(name) == "DIT_GEMM_PLAN" ? "candidate:1" : nullptr; });
  EXPECT_EQ(options.gemm_plan, "candidate:1");
}

TEST(CalibrationEngineOptions, AttentionFormsFollowTheKernelsDispatch) {
  struct Case {
    Precision precision;
    int head_dim;
    std::vector<std::string> forms;  // the engine's choice first
  };
  const std::vector<Case> cases = {
      {Precision::fp16, 72, {"flash", "naive"}}, {Precision::bf16, 64, {"flash", "naive"}},
      {Precision::fp16, 16, {"naive"}},          {Precision::fp32, 72, {"tiled", "naive"}},
      {Precision::tf32, 64, {"tiled", "naive"}}, {Precision::fp32, 256, {"naive"}},
  };
  for (const Case& c : cases)
    EXPECT_EQ(cuda_attention_forms(c.precision, c.head_dim), c.forms)
        << precision_name(c.precision) << " " << c.head_dim;
}

TEST(CalibrationEngineOptions, UnsupportedChoicesThrowNamingThem) {
  EngineOptions options;
  EXPECT_NO_THROW(check_engine_options(Backend::cpu, Precision::fp32, 64, options));
  options.gemm_plan = "off";  // ignored by the CPU reference, as before
  EXPECT_NO_THROW(check_engine_options(Backend::cpu, Precision::fp32, 64, options));

  struct Case {
    Backend backend;
    Precision precision;
    int head_dim;
    std::string attention, gemm_plan, named;  // `named`: in the message
  };
  const std::vector<Case> cases = {
      {Backend::cpu, Precision::fp32, 64, "naive", "", "naive"},
      {Backend::cpu, Precision::fp32, 64, "", "candidate:1", "candidate:1"},
      {Backend::cuda, Precision::fp32, 72, "flash", "", "flash"},
      {Backend::cuda, Precision::fp16, 72, "tiled", "", "tiled"},
      {Backend::cuda, Precision::fp16, 72, "fastest", "", "fastest"},
      {Backend::cuda, Precision::fp16, 72, "", "candidate:99", "candidate:99"},
  };
  for (const Case& c : cases) {
    options.attention = c.attention;
    options.gemm_plan = c.gemm_plan;
    const std::string message =
        invalid_argument_message([&] { check_engine_options(c.backend, c.precision, c.head_dim, options); });
    EXPECT_NE(message.find(c.named), std::string::npos) << message;
  }
  options = {};
  for (const char* form : {"flash", "naive"}) {
    options.attention = form;
    EXPECT_NO_THROW(check_engine_options(Backend::cuda, Precision::fp16, 72, options)) << form;
  }
  options.attention = "tiled";
  options.gemm_plan = "candidate:2";
  EXPECT_NO_THROW(check_engine_options(Backend::cuda, Precision::fp32, 72, options));
}

TEST(CalibrationEngineOptions, TheCpuBackendRefusesARestatementItCannotMake) {
  const quality::Corpus corpus = quality::parse_corpus(
      "{\"id\": \"c1\", \"model\": \"tiny_b\", \"image_size\": 64, \"class_label\": 3, \"seed\": 11, \"sampler\": "
      "\"ddim\", \"steps\": 2, \"cfg_scale\": 1.0, \"vae\": \"tiny\", \"weights_seed\": 0, \"critical\": false}\n",
      "engine_options_test.jsonl");
  for (const auto& [attention, gemm_plan] :
       std::vector<std::pair<std::string, std::string>>{{"naive", ""}, {"", "candidate:1"}}) {
    quality::RenderSettings settings;
    settings.data_dir = DIT_TEST_DATA_DIR;
    settings.engine.attention = attention;
    settings.engine.gemm_plan = gemm_plan;
    quality::Renderer renderer(settings);
    const std::string message = invalid_argument_message([&] { renderer.render(corpus.cases.front()); });
    EXPECT_NE(message.find("cpu backend"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace dit
