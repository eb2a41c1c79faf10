// Fixed during a session (quality/ is the evaluator; see quality/README.md).
#include "quality/renderer/render.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <optional>
#include <ostream>
#include <span>

#include "core/error.h"
#include "core/safetensors.h"

namespace dit::quality {

namespace {

std::string model_key(const Case& c, const RenderSettings& settings) {
  const std::optional<WeightsReference>& checkpoint = case_weights(c, settings);
  return c.model + "|" + std::to_string(c.image_size) + "|" + c.vae + "|" + std::to_string(c.weights_seed) + "|" +
         (checkpoint ? checkpoint->path + "|" + checkpoint->sha256 : std::string());
}

SampleRequest request_for(const Case& c) {
  SampleRequest request;
  request.class_labels = {c.class_label};
  request.seeds = {c.seed};
  request.steps = c.steps;
  request.cfg_scale = static_cast<float>(c.cfg_scale);
  request.sampler = parse_sampler(c.sampler);
  return request;
}

[[noreturn]] void case_error(const Case& c, const std::string& problem) {
  throw Error(ErrorKind::invalid_argument, "case " + c.id + " (line " + std::to_string(c.line) + "): " + problem);
}

std::string tiny_weights_path(const Case& c, const std::string& data_dir) {
  return data_dir + "/dit_" + c.model + ".weights.safetensors";
}

}  // namespace

struct Renderer::Loaded {
  std::string key;
  ModelConfig config;
  std::unique_ptr<DitModel> model;
  std::unique_ptr<VaeDecoder> vae;
};

Renderer::Renderer(RenderSettings settings) : settings_(std::move(settings)) {}
Renderer::~Renderer() = default;

const std::optional<WeightsReference>& case_weights(const Case& c, const RenderSettings& settings) {
  return c.weights ? c.weights : settings.weights;
}

WeightsUsed weights_used(const Case& c, const RenderSettings& settings) {
  return {case_weights(c, settings), c.weights_seed};
}

ModelConfig case_model_config(const Case& c, const std::string& data_dir) {
  if (!is_tiny_model(c.model)) return model_config(c.model, c.image_size);
  const std::string path = tiny_weights_path(c, data_dir);
  const SafetensorsFile file = SafetensorsFile::open(path);
  auto config = file.metadata().find("config");
  if (config == file.metadata().end()) case_error(c, path + " has no __metadata__.config");
  return model_config_from_json(config->second);
}

Renderer::Loaded& Renderer::load(const Case& c) {
  if (loaded_ && loaded_->key == model_key(c, settings_)) return *loaded_;
  loaded_.reset();  // release the previous model's memory before loading the next
  auto loaded = std::make_unique<Loaded>();
  loaded->key = model_key(c, settings_);
  loaded->config = case_model_config(c, settings_.data_dir);
  const std::optional<WeightsReference>& checkpoint = case_weights(c, settings_);
  // Seeded random weights nobody edits are drawn where the model keeps them (on the device for
  // cuda, the same bits as DitWeights::random); every other source is made on the host.
  const bool random_in_model = !checkpoint && !is_tiny_model(c.model) && !settings_.edit_weights;
  // A checkpoint nobody edits is converted by the model from the file's mapping (no float32 copy).
  std::optional<DitCheckpoint> streamed;
  if (checkpoint && !settings_.edit_weights) streamed = DitCheckpoint::open(checkpoint->path, loaded->config);
  DitWeights weights;
  if (!random_in_model && !streamed) {
    weights = checkpoint               ? DitWeights::load(checkpoint->path, loaded->config)
              : is_tiny_model(c.model) ? DitWeights::load(tiny_weights_path(c, settings_.data_dir), loaded->config)
                                       : DitWeights::random(loaded->config, c.weights_seed);
    if (settings_.edit_weights) settings_.edit_weights(weights);
  }
  const VaeConfig vae_config = c.vae == "tiny" ? tiny_vae_config() : sd_vae_config();
  const int upsampling = 1 << (vae_config.block_out_channels.size() - 1);
  if (loaded->config.input_size * upsampling != c.image_size)
    case_error(c, "image_size " + std::to_string(c.image_size) + " does not match the model's latent size " +
                      std::to_string(loaded->config.input_size) + " times the " + c.vae + " VAE's " +
                      std::to_string(upsampling) + "x upsampling");
  if (c.class_label >= loaded->config.num_classes)
    case_error(c, "class_label " + std::to_string(c.class_label) + " is not below the model's " +
                      std::to_string(loaded->config.num_classes) + " classes");
  // The VAE (its weights made on the host, its library handles and upload) is made on a helper
  // thread beside the DiT's load and the first case's sampling; the first decode waits for it.
  loaded->vae = std::make_unique<PendingVaeDecoder>(vae_config, [this, vae_config, seed = c.weights_seed] {
    return make_vae_decoder(settings_.backend, vae_config, VaeWeights::random(vae_config, seed), settings_.precision,
                            settings_.engine);
  });
  if (random_in_model)
    loaded->model = make_model(settings_.backend, loaded->config, RandomDitWeights{c.weights_seed}, settings_.precision,
                               settings_.engine);
  else if (streamed)
    loaded->model = make_model(settings_.backend, *streamed, settings_.precision, settings_.engine);
  else
    loaded->model = make_model(settings_.backend, loaded->config, weights, settings_.precision, settings_.engine);
  loaded_ = std::move(loaded);
  return *loaded_;
}

RenderedCase Renderer::render(const Case& c) { return render_in_batch(c, c.batch - 1, 0); }

RenderedCase Renderer::render_in_batch(const Case& c, int companions, int position) {
  Loaded& loaded = load(c);
  SampleRequest request = request_for(c);
  request.class_labels.clear();
  request.seeds.clear();
  for (int i = 0, companion = 0; i <= companions; ++i) {
    if (i == position) {
      request.class_labels.push_back(c.class_label);
      request.seeds.push_back(c.seed);
    } else {
      ++companion;
      request.class_labels.push_back((c.class_label + 7 * companion) % loaded.config.num_classes);
      request.seeds.push_back(c.seed + 1000003ull * companion);
    }
  }
  const PipelineResult result = generate(*loaded.model, *loaded.vae, request);
  const int64_t per_image = result.latents.numel() / result.latents.dim(0);
  RenderedCase rendered;
  rendered.latent = Tensor({1, result.latents.dim(1), result.latents.dim(2), result.latents.dim(3)});
  std::memcpy(rendered.latent.ptr(), result.latents.ptr() + position * per_image, per_image * sizeof(float));
  rendered.image = result.images.at(static_cast<size_t>(position));
  rendered.request_images = static_cast<int>(result.images.size());
  return rendered;
}

namespace {

// The cases grouped by model, so each model is loaded once.
std::vector<const Case*> in_model_order(const Corpus& corpus, const RenderSettings& settings) {
  std::vector<const Case*> order;
  for (const Case& c : corpus.cases) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(),
                   [&](const Case* a, const Case* b) { return model_key(*a, settings) < model_key(*b, settings); });
  return order;
}

}  // namespace

bool second_render_beside(const RenderSettings& settings) { return settings.backend == Backend::cuda; }

RenderManifest render_corpus(const Corpus& corpus, const std::string& set, const RenderSettings& settings,
                             const std::string& out_dir, const SecondRender& second_render) {
  std::filesystem::create_directories(out_dir);
  std::error_code ignored;
  std::filesystem::remove(out_dir + "/render.json", ignored);
  RenderManifest manifest;
  manifest.set = set;
  manifest.corpus_name = corpus.name;
  manifest.corpus_sha256 = corpus.sha256;
  manifest.backend = backend_name(settings.backend);
  manifest.precision = precision_name(settings.precision);
  // Beside the first render, a second process of its own: its future is waited for (also when a
  // case of the first throws, by the future's destructor) before anything is judged.
  std::future<std::map<std::string, std::string>> beside;
  if (second_render_beside(settings)) beside = std::async(std::launch::async, second_render);
  {
    Renderer renderer(settings);
    for (const Case* c : in_model_order(corpus, settings)) {
      const auto start = std::chrono::steady_clock::now();
      const RenderedCase first = renderer.render(*c);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      RenderRecord record = write_rendered_case(out_dir, c->id, first);
      record.seconds = seconds;
      record.weights = weights_used(*c, settings);
      if (settings.log) *settings.log << c->id << ": " << seconds << " s\n";
      manifest.cases[c->id] = record;
    }
  }
  const std::map<std::string, std::string> second = beside.valid() ? beside.get() : second_render();
  for (auto& [id, record] : manifest.cases) {
    const auto found = second.find(id);
    record.deterministic = found != second.end() && found->second == record.output_sha256;
    if (!record.deterministic && settings.log)
      *settings.log << id << ": NOT deterministic (the second render "
                    << (found == second.end() ? "has no output" : "gave other bytes") << ")\n";
  }
  save_render_manifest(out_dir, manifest);
  return manifest;
}

std::map<std::string, std::string> render_output_hashes(const Corpus& corpus, const RenderSettings& settings) {
  std::map<std::string, std::string> hashes;
  Renderer renderer(settings);
  for (const Case* c : in_model_order(corpus, settings)) {
    const RenderedCase rendered = renderer.render(*c);
    hashes[c->id] = output_hash(rendered.latent, rendered.image);
  }
  return hashes;
}

}  // namespace dit::quality
