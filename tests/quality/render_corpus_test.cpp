// render_corpus and its second render (quality/renderer/render.h): when the second render starts
// (beside the first on the GPU, after it on the CPU), and how its hashes decide determinism. On
// the CPU backend and the CI corpus's tiny cases; the GPU case is in render_corpus_gpu_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "core/error.h"
#include "quality/corpus.h"
#include "quality/renderer/render.h"
#include "quality/store.h"
#include "tests/support/scratch_directory.h"

namespace dit::quality::test {
namespace {

namespace fs = std::filesystem;

RenderSettings cpu_settings() {
  RenderSettings settings;
  settings.backend = Backend::cpu;
  settings.data_dir = DIT_TEST_DATA_DIR;
  return settings;
}

// The CI corpus cut to its first two cases (two renders keep the test short).
Corpus two_cases() {
  Corpus corpus = load_corpus(DIT_QUALITY_SOURCE_DIR "/cases_cpu.jsonl");
  corpus.cases.resize(2);
  return corpus;
}

TEST(SecondRenderBeside, OnTheGpuOnly) {
  RenderSettings settings;
  settings.backend = Backend::cuda;
  EXPECT_TRUE(second_render_beside(settings));
  settings.backend = Backend::cpu;
  EXPECT_FALSE(second_render_beside(settings));
}

TEST(Renderer, RendersABatchedCaseFirstInARequestOfItsBatch) {
  Case c = load_corpus(DIT_QUALITY_SOURCE_DIR "/cases_cpu.jsonl").cases.front();
  Renderer renderer(cpu_settings());
  const RenderedCase alone = renderer.render(c);
  EXPECT_EQ(alone.request_images, 1);
  c.batch = 3;
  const RenderedCase batched = renderer.render(c);
  EXPECT_EQ(batched.request_images, 3);
  const RenderedCase restated = renderer.render_in_batch(c, 2, 0);
  EXPECT_EQ(restated.request_images, 3);
  EXPECT_TRUE(identical_bytes(batched, restated));
  // The CPU reference computes every row alone: the batch leaves the case's own image as it was.
  EXPECT_TRUE(identical_bytes(batched, alone));
}

TEST(RenderCorpus, OnTheCpuTheSecondRenderStartsAfterEveryCaseIsWritten) {
  const dit::test::ScratchDirectory dir;
  const Corpus corpus = two_cases();
  const std::string out = (dir.path() / "render").string();
  std::map<std::string, bool> written_when_started;
  const RenderManifest manifest = render_corpus(corpus, "cpu", cpu_settings(), out, [&] {
    std::map<std::string, std::string> hashes;
    for (const Case& c : corpus.cases) written_when_started[c.id] = fs::exists(out + "/" + c.id + ".png");
    return hashes;
  });
  ASSERT_EQ(written_when_started.size(), 2u);
  for (const auto& [id, written] : written_when_started) EXPECT_TRUE(written) << id;
  ASSERT_EQ(manifest.cases.size(), 2u);
}

TEST(RenderCorpus, ACaseIsDeterministicOnlyWhenTheSecondRenderGaveItsBytes) {
  const dit::test::ScratchDirectory dir;
  const Corpus corpus = two_cases();
  const RenderSettings settings = cpu_settings();
  // The first case's true hash, from a render of its own; the second case gets other bytes.
  std::map<std::string, std::string> hashes = render_output_hashes(corpus, settings);
  const std::string first = corpus.cases[0].id, second = corpus.cases[1].id;
  hashes[second] = std::string(64, '0');
  const RenderManifest manifest =
      render_corpus(corpus, "cpu", settings, (dir.path() / "render").string(), [&] { return hashes; });
  EXPECT_TRUE(manifest.cases.at(first).deterministic);
  EXPECT_EQ(manifest.cases.at(first).output_sha256, render_output_hashes(corpus, settings).at(first));
  EXPECT_FALSE(manifest.cases.at(second).deterministic);
  // A second render without a case's hash leaves that case not deterministic too.
  hashes.erase(first);
  EXPECT_FALSE(render_corpus(corpus, "cpu", settings, (dir.path() / "again").string(), [&] { return hashes; })
                   .cases.at(first)
                   .deterministic);
}

TEST(RenderCorpus, ASecondRenderThatFailsFailsTheRender) {
  const dit::test::ScratchDirectory dir;
  const auto failing = []() -> std::map<std::string, std::string> {
    throw Error(ErrorKind::invalid_argument, "the determinism pass exited with status 1");
  };
  EXPECT_THROW(render_corpus(two_cases(), "cpu", cpu_settings(), (dir.path() / "render").string(), failing), Error);
  EXPECT_FALSE(fs::exists(dir.path() / "render" / "render.json"));
}

}  // namespace
}  // namespace dit::quality::test
