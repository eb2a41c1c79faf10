// render_corpus on the CUDA backend (quality/renderer/render.h): the second render starts beside
// the first, before the first has written any case, and the two agree on a DiT-XL/2 case.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "quality/corpus.h"
#include "quality/renderer/render.h"
#include "tests/support/scratch_directory.h"

namespace dit::quality::test {
namespace {

namespace fs = std::filesystem;

TEST(RenderCorpusGpu, TheSecondRenderStartsBesideTheFirstAndAgreesWithIt) {
  const dit::test::ScratchDirectory dir;
  Corpus corpus;
  corpus.name = "cases_session.jsonl";
  corpus.cases = {load_corpus(DIT_QUALITY_SOURCE_DIR "/cases_session.jsonl").at("xl256-ddpm25-cfg1p5-c360")};
  RenderSettings settings;
  settings.backend = Backend::cuda;
  settings.precision = Precision::fp16;
  const std::string out = (dir.path() / "render").string();
  const std::string png = out + "/" + corpus.cases[0].id + ".png";
  bool written_when_started = true;
  const RenderManifest manifest = render_corpus(corpus, "gpu", settings, out, [&] {
    written_when_started = fs::exists(png);
    return render_output_hashes(corpus, settings);  // a second engine in this process, beside the first
  });
  EXPECT_FALSE(written_when_started) << "the second render started after the first had written its case";
  EXPECT_TRUE(fs::exists(png));
  EXPECT_TRUE(manifest.cases.at(corpus.cases[0].id).deterministic);
}

}  // namespace
}  // namespace dit::quality::test
