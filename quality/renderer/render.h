// Fixed during a session (quality/ is the evaluator; see quality/README.md).
// Renders corpus cases through the engine's public API (make_model, make_vae_decoder,
// generate) and writes a render directory. It is never told where the golden files are.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/dit_model.h"
#include "model/pipeline.h"
#include "model/vae.h"
#include "quality/corpus.h"
#include "quality/store.h"

namespace dit::quality {

struct RenderSettings {
  Backend backend = Backend::cpu;
  Precision precision = Precision::fp32;
  // The engine as deployed: its defaults. The renderer maps no environment onto them, so what is
  // judged never depends on a benchmark switch (bench_e2e honours them, and its hash then differs).
  EngineOptions engine;
  std::string data_dir;  // tests/data: the weights of the tiny_a / tiny_b models
  // The gate set's DiT checkpoint, for the cases that name none of their own. The renderer loads
  // a checkpoint as named: dit-quality-render checks every file's sha256 before it renders.
  std::optional<WeightsReference> weights;
  // Edits the DiT weights after loading (tests emulate engine bugs this way).
  std::function<void(DitWeights&)> edit_weights;
  std::ostream* log = nullptr;  // one line per case when set
};

// Keeps the last model and decoder loaded, so consecutive cases of one model reuse them.
class Renderer {
 public:
  explicit Renderer(RenderSettings settings);
  ~Renderer();
  const RenderSettings& settings() const { return settings_; }

  // The case as its corpus asks: its image first in a request of c.batch images.
  RenderedCase render(const Case& c);
  // `c` rendered in one batch with `companions` other images (other labels and seeds, same
  // sampler settings), placed at `position` in the batch: an exact restatement of render(c).
  RenderedCase render_in_batch(const Case& c, int companions, int position);

 private:
  struct Loaded;
  Loaded& load(const Case& c);
  RenderSettings settings_;
  std::unique_ptr<Loaded> loaded_;
};

// The model configuration of a case (a tiny model's from its weights file under `data_dir`); a
// checkpoint must hold the weights of that configuration.
ModelConfig case_model_config(const Case& c, const std::string& data_dir);

// The checkpoint `c` renders from: its own, else the set's; nullopt: the embedded default.
const std::optional<WeightsReference>& case_weights(const Case& c, const RenderSettings& settings);
// What render.json records of `c`'s DiT weights.
WeightsUsed weights_used(const Case& c, const RenderSettings& settings);

// Case id -> output_hash of a second render of every case, made independently of the first.
using SecondRender = std::function<std::map<std::string, std::string>()>;

// Renders every case of `corpus` once into `out_dir` (created; files of earlier renders
// replaced) and calls `second_render`, then writes render.json: a case is deterministic when the
// second render's hash equals the first's. dit-quality-render passes a second render in a fresh
// process of its own (main.cpp, --determinism-pass): a new engine and, on the GPU, a new CUDA
// context, so state that survives inside one process (a cached plan, a captured graph, an
// uninitialised buffer that happens to repeat) cannot make two renders agree. On the GPU the second
// render starts beside the first (second_render_beside): most of a gate set's render is each
// process's own setup (the context, the weights, the plans, a changed kernel module's JIT), which
// then overlaps instead of adding up; on the CPU it starts after the first has released the engine,
// since each would use every core. Throws dit::Error when a case cannot be rendered.
RenderManifest render_corpus(const Corpus& corpus, const std::string& set, const RenderSettings& settings,
                             const std::string& out_dir, const SecondRender& second_render);

// Whether render_corpus starts the second render beside the first: on the GPU backend only.
bool second_render_beside(const RenderSettings& settings);

// Renders every case once and returns case id -> output_hash, writing no file: the second render
// of render_corpus, run by dit-quality-render --determinism-pass.
std::map<std::string, std::string> render_output_hashes(const Corpus& corpus, const RenderSettings& settings);

}  // namespace dit::quality
