// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// Where renders and baselines live, and their manifests.
//   render directory:  render.json, <id>.latent.safetensors, <id>.png   (what `render` writes)
//   recorded baseline: <baseline dir>/quality/<set>/MANIFEST.json (sha256 of every file below),
//                      golden/ (a render directory: the baseline commit's outputs at the set's
//                      precision), scores.json (the baseline's own scores against the golden);
//                      for a 16-bit set also reference/ (the same corpus rendered at fp32: the
//                      fp32 golden) and reference_scores.json (the golden against it)
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/image.h"
#include "core/tensor.h"
#include "quality/contract.h"
#include "quality/corpus.h"

namespace dit::quality {

std::string latent_file_name(const std::string& case_id);   // "<id>.latent.safetensors"
std::string image_file_name(const std::string& case_id);    // "<id>.png"
inline constexpr const char* kLatentTensorName = "latent";  // the tensor inside the latent file

// The DiT weights a case was rendered from: a checkpoint, or the embedded default (seeded random
// weights, tests/data's for tiny_*) seeded by `seed`. In render.json: "weights": {"path",
// "sha256"} or {"seed": N}.
struct WeightsUsed {
  std::optional<WeightsReference> checkpoint;
  uint64_t seed = 0;  // with no checkpoint
  // The same weights: a checkpoint of the same bytes (its path may differ between trees), or no
  // checkpoint and the same seed.
  bool same_as(const WeightsUsed& other) const;
  // "checkpoint <path> (sha256 <hex>)" or "no checkpoint (the embedded default weights, weights_seed N)"
  std::string describe() const;
  nlohmann::json to_json() const;
};

struct RenderRecord {
  std::string latent_sha256, image_sha256;  // of the two files
  // Of the raw output bytes (output_hash in render.h): what bench_e2e reports for the same
  // case, so a timed run can be checked against the judged one.
  std::string output_sha256;
  bool deterministic = false;  // a second render, in a fresh process, gave identical bytes
  double seconds = 0;          // wall time of the first render
  // What the case was rendered from; absent in a render.json written before weights were recorded.
  std::optional<WeightsUsed> weights;
};

struct RenderManifest {
  std::string set, corpus_name, corpus_sha256, backend, precision;
  std::map<std::string, RenderRecord> cases;
  nlohmann::json to_json() const;
  static RenderManifest from_json(const nlohmann::json& json, const std::string& label);
};

// Why `candidate` cannot be judged against `golden`: one line per case of `corpus` rendered from
// other weights than the golden's (another checkpoint's bytes, a checkpoint against seeded
// weights, another seed). A record without weights (a render.json from before weights were
// recorded) stands for what the corpus alone said then: seeded by the case's weights_seed.
std::vector<std::string> weights_differences(const Corpus& corpus, const RenderManifest& golden,
                                             const RenderManifest& candidate);

// Throws dit::Error (io / invalid_file) naming the file.
RenderManifest load_render_manifest(const std::string& render_dir);
void save_render_manifest(const std::string& render_dir, const RenderManifest& manifest);

// One case's outputs as rendered.
struct RenderedCase {
  Tensor latent;  // [1, C, s, s] as sampled (before the VAE scaling factor)
  Image image;
  int request_images = 1;  // images in the request it was sampled in (the case's own among them)
};

// Writes <id>.latent.safetensors and <id>.png into `out_dir`; returns their hashes. `durability`
// as in core/files.h: the benchmark's timed outputs, read back and deleted by the performance gate,
// pass Durability::replaced; a render (goldens among them) keeps the default.
RenderRecord write_rendered_case(const std::string& out_dir, const std::string& case_id, const RenderedCase& rendered,
                                 Durability durability = Durability::synced);
bool identical_bytes(const RenderedCase& a, const RenderedCase& b);
// SHA-256 of one image's outputs as raw bytes: the latent's float32 values ([1, C, s, s],
// little-endian, as sampled) followed by the image's RGB bytes ([H, W, 3]). Independent of
// file formats, so a benchmark can hash what it timed and compare with render.json.
std::string output_hash(const Tensor& latent, const Image& image);

struct BaselinePaths {
  std::string root;  // <baseline dir>/quality/<set>
  std::string manifest() const { return root + "/MANIFEST.json"; }
  std::string golden() const { return root + "/golden"; }
  std::string scores() const { return root + "/scores.json"; }
  std::string reference() const { return root + "/reference"; }
  std::string reference_scores() const { return root + "/reference_scores.json"; }
};
BaselinePaths baseline_paths(const std::string& baseline_dir, const std::string& set);
bool baseline_recorded(const BaselinePaths& paths);

// Hashes every file under golden/ and reference/, and scores.json and reference_scores.json,
// into MANIFEST.json, with the corpus and contract hashes they were recorded against and the
// weights each golden case was rendered from ("weights": case id -> as in render.json). Refuses
// (dit::Error) to overwrite a manifest.
void write_baseline_manifest(const BaselinePaths& paths, const std::string& set, const Corpus& corpus,
                             const Contract& contract, const RenderManifest& golden);
// What is wrong with a recorded baseline (empty: intact and made for this corpus and contract):
// a file missing, added under golden/ or changed since it was hashed, another corpus or contract.
std::vector<std::string> verify_baseline(const BaselinePaths& paths, const Corpus& corpus, const Contract& contract);

}  // namespace dit::quality
