// dit-sample end to end, latents only (--vae none; dit_sample_images_test covers the images): a
// run from a checkpoint writes the same latents as DitModel::sample in process, with the request
// in the metadata; bad arguments and files exit with code 2 and a message naming the problem.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "model/dit_model.h"
#include "core/safetensors.h"
#include "model/weights.h"
#include "tests/support/process_runner.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

using test::ProcessResult;

ProcessResult run_dit_sample(const std::string& arguments) { return test::run_program(DIT_SAMPLE_PATH, arguments); }

class DitSample : public testing::Test {
 protected:
  std::filesystem::path out_dir =
      std::filesystem::temp_directory_path() / ("dit_sample_test_" + std::to_string(getpid()));
  void TearDown() override { std::filesystem::remove_all(out_dir); }
};

TEST_F(DitSample, WritesTheLatentsOfTheRequestFromACheckpoint) {
  const std::string weights = test::data_path("dit_tiny_a.weights.safetensors");
  const ProcessResult run = run_dit_sample("--weights " + weights +
                                           " --class 3 --class 7 --seed 40 --steps 6 --cfg-scale 3 "
                                           "--sampler ddpm --vae none --out " +
                                           out_dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("step 6/6"), std::string::npos) << run.output;

  const SafetensorsFile file = SafetensorsFile::open((out_dir / "latents.safetensors").string());
  const Tensor latents = file.to_float("latents");
  const nlohmann::json request = nlohmann::json::parse(file.metadata().at("request"));
  EXPECT_EQ(request["seeds"], nlohmann::json({40, 41}));
  EXPECT_EQ(request["class_labels"], nlohmann::json({3, 7}));
  EXPECT_EQ(request["sampler"], "ddpm");
  EXPECT_EQ(request["steps"], 6);

  // The config comes from the checkpoint's metadata; the latents are the library's, bit for bit.
  const ModelConfig config = model_config_from_json(SafetensorsFile::open(weights).metadata().at("config"));
  auto model = make_model(Backend::cpu, config, DitWeights::load(weights, config));
  const Tensor expected =
      model->sample(SampleRequest{.class_labels = {3, 7}, .seeds = {40, 41}, .steps = 6, .cfg_scale = 3.0f});
  EXPECT_EQ(latents.shape, expected.shape);
  EXPECT_EQ(latents.data, expected.data);
}

TEST_F(DitSample, RandomWeightsOfANamedModel) {
  const ProcessResult run = run_dit_sample(
      "--model DiT-S/8 --random-weights --class 1 --seed 2 --seed 3 --class 2 --steps 1 "
      "--sampler ddim --vae none --out " +
      out_dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Tensor latents = SafetensorsFile::open((out_dir / "latents.safetensors").string()).to_float("latents");
  EXPECT_EQ(latents.shape, (std::vector<int64_t>{2, 4, 32, 32}));
}

TEST_F(DitSample, BadInputExitsWithTwoNamingTheProblem) {
  const std::string tiny = "--weights " + test::data_path("dit_tiny_a.weights.safetensors");
  const std::string out = " --vae none --out " + out_dir.string();
  const std::pair<std::string, std::string> cases[] = {
      {"--model DiT-Q/2 --random-weights --class 1", "DiT-Q/2"},
      {"--model DiT-S/8 --random-weights", "--class"},
      {"--model DiT-S/8 --random-weights --class 1 --image-size 300", "300"},
      {tiny + " --class 1 --class 2 --seed 1 --seed 2 --seed 3", "--seed"},
      {tiny + " --class 10", "class label 10"},
      {tiny + " --class 1 --steps 0", "steps"},
      {tiny + " --class 1 --sampler euler", "--sampler"},
      {tiny + " --class 1 --sampler ddpm --eta 0.5", "eta"},
      {tiny + " --class 1 --random-weights", "--random-weights"},
      {"--weights /nonexistent/dit.safetensors --class 1", "/nonexistent/dit.safetensors"},
      {"--model DiT-S/8 " + tiny + " --class 1", "does not match DiT-S/8"},  // another model's checkpoint
      {"--model DiT-S/8 --class 1", "--random-weights"},
      {"--model DiT-S/8 --random-weights --class 1 --precision fp16", "fp16"},
  };
  for (const auto& [arguments, mentions] : cases) {
    const ProcessResult run = run_dit_sample(arguments + out);
    EXPECT_EQ(run.exit_code, 2) << arguments << "\n" << run.output;
    EXPECT_NE(run.output.find(mentions), std::string::npos) << arguments << "\n" << run.output;
  }
  EXPECT_FALSE(std::filesystem::exists(out_dir / "latents.safetensors"));
}

}  // namespace
}  // namespace dit
