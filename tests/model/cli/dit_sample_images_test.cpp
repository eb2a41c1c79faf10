// dit-sample's image output: PNGs equal to the in-process pipeline's, the VAE options, and
// exit code 2 naming the problem for bad VAE arguments and files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/safetensors.h"
#include "model/vae_layout.h"
#include "tests/model/tiny_case.h"
#include "tests/support/process_runner.h"

namespace dit {
namespace {

using test::ProcessResult;

ProcessResult run_dit_sample(const std::string& arguments) { return test::run_program(DIT_SAMPLE_PATH, arguments); }

class DitSampleImages : public testing::Test {
 protected:
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dit_sample_images_" + std::to_string(getpid()));
  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string tiny_model() const { return "--weights " + test::data_path("dit_tiny_a.weights.safetensors"); }
};

TEST_F(DitSampleImages, WritesThePipelinesImagesFromAVaeCheckpoint) {
  // The tiny case's VAE, saved under LDM names (the second accepted layout).
  const test::TinyCase c = test::tiny_case();
  std::map<std::string, Tensor> stored;
  for (const auto& [name, tensor] : c.vae_weights.tensors) {
    Tensor t = tensor;
    if (name.find("attentions.0.to_") != std::string::npos && t.shape.size() == 2)
      t.shape = {t.shape[0], t.shape[1], 1, 1};
    stored.emplace(vae::ldm_name(name, c.vae_config), std::move(t));
  }
  const std::string vae_path = (dir / "vae.safetensors").string();
  write_safetensors(vae_path, stored);

  const std::string out = (dir / "out").string();
  const ProcessResult run = run_dit_sample(tiny_model() +
                                           " --class 3 --class 7 --seed 1 --steps 6 --cfg-scale 4 "
                                           "--sampler ddpm --vae tiny --vae-weights " +
                                           vae_path + " --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("decoding 2 image(s)"), std::string::npos) << run.output;

  auto model = make_model(Backend::cpu, c.model_config, c.model_weights);
  auto vae = make_vae_decoder(Backend::cpu, c.vae_config, c.vae_weights);
  const PipelineResult expected = generate(*model, *vae, c.request);
  const char* names[] = {"000_class3_seed1.png", "001_class7_seed2.png"};
  for (int i = 0; i < 2; ++i) {
    const Image image = read_png(out + "/" + names[i]);
    EXPECT_EQ(image.width, 64);
    EXPECT_EQ(image.height, 64);
    EXPECT_EQ(image.rgb, expected.images[i].rgb) << names[i];
  }
  EXPECT_EQ(SafetensorsFile::open(out + "/latents.safetensors").to_float("latents").data, expected.latents.data);
}

TEST_F(DitSampleImages, VaeNoneWritesLatentsOnly) {
  const std::string out = (dir / "out").string();
  const ProcessResult run = run_dit_sample(tiny_model() + " --class 1 --steps 2 --vae none --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(std::filesystem::exists(out + "/latents.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(out + "/000_class1_seed0.png"));
}

TEST_F(DitSampleImages, BadVaeArgumentsExitWithTwo) {
  const std::string out = " --out " + (dir / "bad").string();
  const std::string base = tiny_model() + " --class 1 --steps 2 ";
  const std::pair<std::string, std::string> cases[] = {
      {base + "--vae huge", "--vae"},
      {base + "--vae-weights /nonexistent/vae.safetensors", "/nonexistent/vae.safetensors"},
      // The vae_tiny vectors' decoder has 2 blocks; the tiny config has 4.
      {base + "--vae tiny --vae-weights " + test::data_path("vae_tiny.weights.safetensors"), "has shape"},
      {base + "--vae none --vae-weights " + test::data_path("vae_tiny.weights.safetensors"), "--vae is none"},
      {base + "--vae tiny --vae-weights " + test::data_path("dit_tiny_a.weights.safetensors"), "not a VAE"},
  };
  for (const auto& [arguments, mentions] : cases) {
    const ProcessResult run = run_dit_sample(arguments + out);
    EXPECT_EQ(run.exit_code, 2) << arguments << "\n" << run.output;
    EXPECT_NE(run.output.find(mentions), std::string::npos) << arguments << "\n" << run.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "bad" / "latents.safetensors"));
}

}  // namespace
}  // namespace dit
