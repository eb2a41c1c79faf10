// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// The benchmark corpus: one JSON object per line (cases.jsonl for DiT-XL/2 on the GPU,
// cases_cpu.jsonl for CI). Blank lines and lines starting with '#' are ignored; anything else
// that is not a valid case is an error naming the file and line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quality/weights_reference.h"

namespace dit::quality {

struct Case {
  std::string id;      // [A-Za-z0-9_-]+, unique; names files and CTest tests
  std::string model;   // a DiT name ("DiT-XL/2") or "tiny_a" / "tiny_b" (tests/data configs)
  int image_size = 0;  // pixels; the latent is image_size / 8 for the SD VAE
  int class_label = 0;
  uint64_t seed = 0;    // the image's noise
  std::string sampler;  // "ddpm" or "ddim"
  int steps = 0;
  double cfg_scale = 1.0;  // guidance is on when != 1
  // Images in the case's request: the case's own first, then batch - 1 companions with other
  // labels and seeds (Renderer::render_in_batch), so that a gate renders the shape a batched lane
  // times (32 images, 64 rows a pass under guidance). The case's image alone is scored.
  int batch = 1;
  bool critical = false;
  std::string vae = "sd";  // "sd" (the SD decoder architecture) or "tiny" (CI-sized)
  // The seed of the VAE's random weights, and of the DiT's when no checkpoint applies (the
  // embedded default; tiny_* then use tests/data's weights).
  uint64_t weights_seed = 0;
  // The DiT's checkpoint ("weights", which excludes "weights_seed"); nullopt: the gate set's, if
  // it names one, else the embedded default.
  std::optional<WeightsReference> weights;
  int line = 0;  // 1-based line in the corpus file
};

struct Corpus {
  std::string path;    // as given
  std::string name;    // file name ("cases_cpu.jsonl"); keys the contract's critical cases
  std::string sha256;  // of the file's bytes
  std::vector<Case> cases;

  const Case& at(std::string_view id) const;  // throws dit::Error naming the id
  bool contains(std::string_view id) const;
  std::vector<std::string> ids() const;
  std::vector<std::string> critical_ids() const;
};

// The tiny models of the reference vectors ("tiny_a", "tiny_b"): config and weights from
// tests/data; any other model name is a DiT config name with seeded random weights.
bool is_tiny_model(const std::string& model);

// What is wrong with the model and image size a case names, or empty: a tiny model at any size,
// or one of the DiT paper's configurations ("DiT-XL/2", also "XL/2", "DiT-XL-2", "xl-2") at 256 or
// 512 pixels. The corpus's own vocabulary; the engine checks the same names again when it renders.
std::string model_problem(const Case& c);

// Throws dit::Error (invalid_file) "<label>:<line>: <problem>", or (io) when unreadable. A
// relative weights path is taken from the folder of `label` (the corpus file's).
Corpus parse_corpus(std::string_view text, const std::string& label);
Corpus load_corpus(const std::string& path);

}  // namespace dit::quality
