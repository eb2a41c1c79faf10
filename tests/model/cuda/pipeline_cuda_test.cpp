// The pipeline on the CUDA backend: the tiny case's images agree with the CPU backend's
// (PSNR >= 40 dB) and two independent GPU runs write byte-identical PNG files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/model/tiny_case.h"

namespace dit {
namespace {

constexpr double kMinPsnr = 40.0;

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

PipelineResult run(Backend backend, Precision precision, const test::TinyCase& c) {
  auto model = make_model(backend, c.model_config, c.model_weights, precision);
  auto vae = make_vae_decoder(backend, c.vae_config, c.vae_weights, precision);
  return generate(*model, *vae, c.request);
}

TEST(PipelineCuda, ImagesMatchTheCpuBackend) {
  const test::TinyCase c = test::tiny_case();
  const PipelineResult cpu = run(Backend::cpu, Precision::fp32, c);
  const PipelineResult gpu = run(Backend::cuda, Precision::fp32, c);
  ASSERT_EQ(gpu.images.size(), cpu.images.size());
  for (size_t i = 0; i < cpu.images.size(); ++i) {
    ASSERT_EQ(gpu.images[i].width, cpu.images[i].width);
    ASSERT_EQ(gpu.images[i].height, cpu.images[i].height);
    const double psnr = test::psnr(gpu.images[i], cpu.images[i]);
    std::printf("image %zu: PSNR %.1f dB (CUDA fp32 against CPU)\n", i, psnr);
    EXPECT_GE(psnr, kMinPsnr) << "image " << i;
  }
}

TEST(PipelineCuda, TwoRunsWriteIdenticalPngBytes) {
  const test::TinyCase c = test::tiny_case();
  std::string pattern = (std::filesystem::temp_directory_path() / "pipeline_cuda_XXXXXX").string();
  const std::string dir = mkdtemp(pattern.data());
  for (Precision precision : {Precision::fp32, Precision::fp16}) {
    const PipelineResult first = run(Backend::cuda, precision, c);
    const PipelineResult second = run(Backend::cuda, precision, c);
    for (size_t i = 0; i < first.images.size(); ++i) {
      const std::string a = dir + "/a" + std::to_string(i) + ".png", b = dir + "/b" + std::to_string(i) + ".png";
      write_png(a, first.images[i]);
      write_png(b, second.images[i]);
      EXPECT_EQ(file_bytes(a), file_bytes(b)) << precision_name(precision) << " image " << i;
    }
    EXPECT_EQ(first.latents.data, second.latents.data) << precision_name(precision);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dit
