// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/scoring.h"

#include <filesystem>
#include <optional>

#include <limits>

#include "core/error.h"
#include "core/image.h"
#include "core/safetensors.h"
#include "quality/metrics.h"
#include "core/sha256.h"
#include "quality/store.h"

namespace dit::quality {

namespace {

constexpr double kNotFinite = std::numeric_limits<double>::quiet_NaN();

Tensor read_latent(const std::string& path) { return SafetensorsFile::open(path).to_float(kLatentTensorName); }

RgbView view(const Image& image) { return RgbView{image.width, image.height, image.rgb}; }

void score_case(const std::string& id, const RenderRecord& record, const std::string& render_dir,
                const std::string& golden_dir, ScoreSet& scores) {
  const std::string latent_path = render_dir + "/" + latent_file_name(id);
  const std::string image_path = render_dir + "/" + image_file_name(id);
  if (sha256_file(latent_path) != record.latent_sha256 || sha256_file(image_path) != record.image_sha256)
    throw Error(ErrorKind::invalid_file, "files of case " + id + " differ from the hashes in render.json");
  const Tensor candidate_latent = read_latent(latent_path);
  const Tensor golden_latent = read_latent(golden_dir + "/" + latent_file_name(id));
  const Image candidate_image = read_png(image_path);
  const Image golden_image = read_png(golden_dir + "/" + image_file_name(id));

  score_outputs(id, candidate_latent, candidate_image, golden_latent, golden_image, record.deterministic, scores);
}

}  // namespace

void score_outputs(const std::string& id, const Tensor& candidate_latent, const Image& candidate_image,
                   const Tensor& golden_latent, const Image& golden_image, bool deterministic, ScoreSet& scores) {
  scores.set(id, kAllFinite, all_finite(candidate_latent.data) ? 1.0 : 0.0);
  scores.set(id, kDeterminism, deterministic ? 1.0 : 0.0);
  if (candidate_latent.shape == golden_latent.shape) {
    scores.set(id, kLatentRelativeL2, latent_relative_l2(candidate_latent.data, golden_latent.data));
  } else {
    scores.set(id, kLatentRelativeL2, kNotFinite);
    scores.problems[id].push_back("latent shape " + shape_string(candidate_latent.shape) + " differs from the golden " +
                                  shape_string(golden_latent.shape));
  }
  if (candidate_image.width == golden_image.width && candidate_image.height == golden_image.height) {
    scores.set(id, kImagePsnr, image_psnr(view(candidate_image), view(golden_image)));
    scores.set(id, kImageSsim, image_ssim(view(candidate_image), view(golden_image)));
    scores.set(id, kMaxAbsPixelError, max_abs_pixel_error(view(candidate_image), view(golden_image)));
  } else {
    for (const char* metric : {kImagePsnr, kImageSsim, kMaxAbsPixelError}) scores.set(id, metric, kNotFinite);
    scores.problems[id].push_back("image size differs from the golden");
  }
}

namespace {

// A render is plain files in a plain folder: a link could point the judge at the goldens.
std::optional<std::string> not_plain(const std::string& render_dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_symlink(fs::symlink_status(render_dir, error))) return render_dir + " is a link";
  if (!fs::is_directory(fs::symlink_status(render_dir, error))) return std::nullopt;
  for (const auto& entry : fs::recursive_directory_iterator(render_dir, error)) {
    const auto status = entry.symlink_status();
    if (fs::is_symlink(status)) return entry.path().string() + " is a link";
    if (!fs::is_regular_file(status) && !fs::is_directory(status))
      return entry.path().string() + " is not a plain file";
  }
  return std::nullopt;
}

}  // namespace

ScoreSet score_render(const Corpus& corpus, const std::string& render_dir, const std::string& golden_dir) {
  ScoreSet scores;
  if (auto problem = not_plain(render_dir)) {
    for (const Case& c : corpus.cases) scores.problems[c.id].push_back("the render must be plain files: " + *problem);
    return scores;
  }
  RenderManifest manifest;
  try {
    manifest = load_render_manifest(render_dir);
  } catch (const Error& error) {
    for (const Case& c : corpus.cases) scores.problems[c.id].push_back(error.what());
    return scores;
  }
  for (const Case& c : corpus.cases) {
    auto record = manifest.cases.find(c.id);
    if (record == manifest.cases.end()) {
      scores.problems[c.id].push_back("not rendered (no entry in " + render_dir + "/render.json)");
      continue;
    }
    try {
      score_case(c.id, record->second, render_dir, golden_dir, scores);
    } catch (const Error& error) {
      scores.cases.erase(c.id);
      scores.problems[c.id].push_back(error.what());
    }
  }
  return scores;
}

}  // namespace dit::quality
