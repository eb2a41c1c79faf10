// The whole pipeline on the CPU backend: labels and seeds -> latents -> images -> PNG files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "core/error.h"
#include "model/vae.h"
#include "tests/model/tiny_case.h"

namespace dit {
namespace {

TEST(PipelineCpu, GeneratesDecodesAndWritesImages) {
  const test::TinyCase c = test::tiny_case();
  auto model = make_model(Backend::cpu, c.model_config, c.model_weights);
  auto vae = make_vae_decoder(Backend::cpu, c.vae_config, c.vae_weights);
  std::vector<std::pair<int, int>> progress;
  const PipelineResult result =
      generate(*model, *vae, c.request, [&](int done, int total) { progress.emplace_back(done, total); });

  ASSERT_EQ(result.latents.shape, (std::vector<int64_t>{2, 4, 8, 8}));
  ASSERT_EQ(progress.size(), 6u);
  EXPECT_EQ(progress.back(), std::make_pair(6, 6));
  ASSERT_EQ(result.images.size(), 2u);
  for (const Image& image : result.images) {
    EXPECT_EQ(image.width, 64);
    EXPECT_EQ(image.height, 64);
    // Not a flat or saturated picture: many distinct byte values.
    std::vector<bool> seen(256);
    for (uint8_t v : image.rgb) seen[v] = true;
    EXPECT_GT(std::count(seen.begin(), seen.end(), true), 32);
  }
  EXPECT_NE(result.images[0].rgb, result.images[1].rgb);

  // The images are exactly decode(latents / 0.18215), quantised.
  Tensor z = result.latents;
  for (float& v : z.data) v /= kVaeScalingFactor;
  const std::vector<Image> again = to_images(vae->decode(z));
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(again[i].rgb, result.images[i].rgb);

  // Written and read back unchanged.
  std::string pattern = (std::filesystem::temp_directory_path() / "pipeline_test_XXXXXX").string();
  const std::string dir = mkdtemp(pattern.data());
  for (size_t i = 0; i < 2; ++i) {
    const std::string path = dir + "/" + std::to_string(i) + ".png";
    write_png(path, result.images[i]);
    EXPECT_EQ(read_png(path).rgb, result.images[i].rgb);
  }
  std::filesystem::remove_all(dir);

  // Run to run identical.
  const PipelineResult second = generate(*model, *vae, c.request);
  EXPECT_EQ(second.latents.data, result.latents.data);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(second.images[i].rgb, result.images[i].rgb);
}

TEST(PipelineCpu, RejectsAVaeOfOtherLatents) {
  const test::TinyCase c = test::tiny_case();
  auto model = make_model(Backend::cpu, c.model_config, c.model_weights);
  VaeConfig other = c.vae_config;
  other.latent_channels = 8;
  auto vae = make_vae_decoder(Backend::cpu, other, VaeWeights::random(other, 1));
  EXPECT_THROW(generate(*model, *vae, c.request), Error);
}

}  // namespace
}  // namespace dit

TEST(PipelineCpu, PreloadingTheVaeBackendNeedsNoDevice) {
  // dit-sample calls it beside the VAE's weights, before any device context: on a machine
  // without a GPU (CI) it must neither throw nor crash, on this thread or another.
  EXPECT_NO_THROW(dit::preload_vae_backend(dit::Backend::cpu));
  EXPECT_NO_THROW(dit::preload_vae_backend(dit::Backend::cuda));
  std::thread beside([] { dit::preload_vae_backend(dit::Backend::cuda); });
  beside.join();
}
