// GEMM plan files (model/gemm_plan.h): the round trip, every malformed field named, and which
// file of a plan directory a device takes. The engine's use of a plan runs in
// tests/kernels/linear_test.cpp (CudaGemmPlan).
#include "model/gemm_plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "tests/support/scratch_directory.h"
#include "tests/support/thrown_error.h"

namespace dit {
namespace {

using test::thrown_error;

GemmPlanDevice device_a() { return {"NVIDIA H200", "9.0", 130100, 33554432}; }

GemmPlan sample_plan(const GemmPlanDevice& device) {
  GemmPlan plan;
  plan.device = device;
  plan.method = "test";
  GemmPlanChoice fc1;
  fc1.key = {16384, 4608, 1152, "f16", "f16", "fp32", "gelu_bias"};
  fc1.candidate = 6;
  fc1.algo = {{"id", 66}, {"tile", 20}, {"split_k", 1}};
  fc1.us = 239.3;
  fc1.first_us = 272.5;
  GemmPlanChoice proj = fc1;
  proj.key = {16384, 1152, 1152, "f16", "f32", "fp32", "bias"};
  proj.candidate = 0;
  plan.choices = {fc1, proj};
  return plan;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(GemmPlan, round_trips_through_its_file) {
  const test::ScratchDirectory scratch;
  const GemmPlan plan = sample_plan(device_a());
  const std::string path = scratch.file("plan.json");
  write_gemm_plan(plan, path);
  const GemmPlan read = read_gemm_plan(path);
  EXPECT_EQ(read.source, path);
  EXPECT_TRUE(read.device == plan.device);
  EXPECT_EQ(read.method, "test");
  ASSERT_EQ(read.choices.size(), 2u);
  const GemmPlanChoice* fc1 = read.find(plan.choices[0].key);
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(fc1->candidate, 6);
  EXPECT_EQ(fc1->algo, plan.choices[0].algo);
  EXPECT_DOUBLE_EQ(fc1->us, 239.3);
  EXPECT_DOUBLE_EQ(fc1->first_us, 272.5);
  GemmPlanKey other = plan.choices[0].key;
  other.M = 512;
  EXPECT_EQ(read.find(other), nullptr);
  // written sorted by key, so the same plan gives the same bytes
  EXPECT_EQ(gemm_plan_json(read), gemm_plan_json(plan));
  // no temporary file left beside it
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(scratch.path()), {}), 1);
}

struct Malformed {
  std::string name, from, to, message;  // `from` replaced by `to` in a valid file
};

class GemmPlanMalformed : public testing::TestWithParam<Malformed> {};

TEST_P(GemmPlanMalformed, names_the_field) {
  const Malformed m = GetParam();
  std::string text = gemm_plan_json(sample_plan(device_a()));
  const size_t at = text.find(m.from);
  ASSERT_NE(at, std::string::npos) << m.from;
  text.replace(at, m.from.size(), m.to);
  const Error error = thrown_error([&] { parse_gemm_plan(text, "p.json"); });
  EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
  EXPECT_NE(std::string(error.what()).find("GEMM plan p.json: " + m.message), std::string::npos) << error.what();
}

INSTANTIATE_TEST_SUITE_P(
    fields, GemmPlanMalformed,
    testing::Values(
        Malformed{"not_json", "{", "[", "document: not JSON"},
        Malformed{"format", "dit-gemm-plan/1", "dit-gemm-plan/2", "plan.format: must be"},
        Malformed{"unknown_field", "\"method\"", "\"methods\"", "plan.methods: unknown field"},
        Malformed{"gpu_type", "\"gpu\": \"NVIDIA H200\"", "\"gpu\": 7", "plan.device.gpu: must be a string"},
        Malformed{"version", "\"cublaslt_version\": 130100", "\"cublaslt_version\": 0",
                  "plan.device.cublaslt_version: 0 is outside"},
        Malformed{"dtype", "\"operands\": \"f16\"", "\"operands\": \"f8\"",
                  "plan.choices[0].operands: 'f8' is not an allowed value"},
        Malformed{"epilogue", "\"epilogue\": \"gelu_bias\"", "\"epilogue\": \"relu\"",
                  "plan.choices[1].epilogue: 'relu' is not an allowed value"},
        Malformed{"candidate", "\"candidate\": 6", "\"candidate\": -1", "plan.choices[1].candidate: -1 is outside"},
        Malformed{"missing", "\"K\": 1152,", "", "plan.choices[0].K: missing"},
        Malformed{"algo_value", "\"split_k\": 1", "\"split_k\": \"one\"",
                  "plan.choices[0].algo.split_k: must be an integer"},
        Malformed{"time", "\"us\": 239.3", "\"us\": -1", "plan.choices[0].us: must be a non-negative number"}),
    [](const auto& info) { return info.param.name; });

TEST(GemmPlanMalformed, a_second_choice_for_one_shape) {
  GemmPlan plan = sample_plan(device_a());
  plan.choices.push_back(plan.choices[0]);
  plan.choices.back().candidate = 2;
  const Error error = thrown_error([&] { parse_gemm_plan(gemm_plan_json(plan), "p.json"); });
  EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
  EXPECT_NE(std::string(error.what()).find("a second choice for M=16384 N=4608 K=1152 f16->f16 fp32 gelu_bias"),
            std::string::npos)
      << error.what();
}

TEST(GemmPlanSelect, off_takes_none_and_a_named_file_must_be_for_this_device) {
  const test::ScratchDirectory scratch;
  const std::string path = scratch.file("h200.json");
  write_gemm_plan(sample_plan(device_a()), path);
  EXPECT_FALSE(select_gemm_plan(device_a(), "off", scratch.path().string()));
  const std::optional<GemmPlan> named = select_gemm_plan(device_a(), path, "");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->choices.size(), 2u);

  GemmPlanDevice other = device_a();
  other.cublaslt_version = 130200;
  const Error wrong = thrown_error([&] { select_gemm_plan(other, path, ""); });
  EXPECT_EQ(wrong.kind(), ErrorKind::invalid_argument);
  EXPECT_NE(std::string(wrong.what()).find("is a plan for NVIDIA H200 (compute capability 9.0, cuBLASLt 130100"),
            std::string::npos)
      << wrong.what();
  const Error missing = thrown_error([&] { select_gemm_plan(device_a(), scratch.file("none.json"), ""); });
  EXPECT_EQ(missing.kind(), ErrorKind::io);
}

TEST(GemmPlanSelect, a_directory_gives_the_one_file_for_this_device) {
  const test::ScratchDirectory scratch;
  GemmPlanDevice a5500{"NVIDIA RTX A5500", "8.6", 130100, 33554432};
  write_gemm_plan(sample_plan(device_a()), scratch.file("h200.json"));
  write_gemm_plan(sample_plan(a5500), scratch.file("a5500.json"));
  write_text(scratch.file("README.md"), "not a plan");  // only *.json files are plans

  const std::optional<GemmPlan> h200 = select_gemm_plan(device_a(), "", scratch.path().string());
  ASSERT_TRUE(h200);
  EXPECT_EQ(h200->source, scratch.file("h200.json"));
  const std::optional<GemmPlan> ampere = select_gemm_plan(a5500, "", scratch.path().string());
  ASSERT_TRUE(ampere);
  EXPECT_EQ(ampere->source, scratch.file("a5500.json"));

  GemmPlanDevice unknown = device_a();
  unknown.workspace_bytes = 1 << 20;  // another workspace: another heuristic list
  EXPECT_FALSE(select_gemm_plan(unknown, "", scratch.path().string()));
  EXPECT_FALSE(select_gemm_plan(device_a(), "", scratch.file("no-such-directory")));

  write_gemm_plan(sample_plan(device_a()), scratch.file("h200-copy.json"));
  const Error two = thrown_error([&] { select_gemm_plan(device_a(), "", scratch.path().string()); });
  EXPECT_EQ(two.kind(), ErrorKind::invalid_argument);
  EXPECT_NE(std::string(two.what()).find("two GEMM plans"), std::string::npos) << two.what();

  std::filesystem::remove(scratch.file("h200-copy.json"));
  write_text(scratch.file("broken.json"), "{");
  const Error broken = thrown_error([&] { select_gemm_plan(a5500, "", scratch.path().string()); });
  EXPECT_EQ(broken.kind(), ErrorKind::invalid_file);
  EXPECT_NE(std::string(broken.what()).find("broken.json"), std::string::npos) << broken.what();
}

TEST(GemmPlan, a_failed_write_leaves_the_old_file) {
  const test::ScratchDirectory scratch;
  const std::string path = scratch.file("plan.json");
  write_text(path, "old");
  const Error error =
      thrown_error([&] { write_gemm_plan(sample_plan(device_a()), scratch.file("no/such/plan.json")); });
  EXPECT_EQ(error.kind(), ErrorKind::io);
  std::ifstream file(path);
  std::string text((std::istreambuf_iterator<char>(file)), {});
  EXPECT_EQ(text, "old");
}

TEST(GemmPlan, every_committed_plan_parses) {
  size_t plans = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DIT_GEMM_PLAN_DIR)) {
    if (entry.path().extension() != ".json") continue;
    const GemmPlan plan = read_gemm_plan(entry.path().string());
    EXPECT_FALSE(plan.choices.empty()) << entry.path();
    for (const GemmPlanChoice& choice : plan.choices) EXPECT_LE(choice.us, choice.first_us) << choice.key.describe();
    ++plans;
  }
  EXPECT_GE(plans, 1u);
}

}  // namespace
}  // namespace dit
