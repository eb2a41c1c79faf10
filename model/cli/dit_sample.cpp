// dit-sample: class-conditional images from a DiT checkpoint or seeded random weights, on the
// cpu or cuda backend: the latents as DIR/latents.safetensors (the request in its metadata, the
// sampler's start latents beside the result), decoded by the SD VAE (or a tiny one) into one PNG
// per image. With --forward-inputs, one forward pass of given x, t and y instead (an outside
// oracle compares it with another implementation on the same weights).
// Exit codes: 0 done, 2 bad arguments, files or setup (the message names the problem: a seed
// outside [0, 2^64 - 1], a model config beyond its bounds, a non-finite weight, a checkpoint
// whose sha256 is not --weights-sha256's, or no GPU for --backend cuda, which is checked before
// any weights are hashed or built), 1 other.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "model/dit_model.h"
#include "core/checkpoint_hash.h"
#include "core/cublaslt_library.h"
#include "core/ctest_gpu.h"
#include "core/error.h"
#include "core/files.h"
#include "model/pipeline.h"
#include "core/safetensors.h"
#include "core/sha256.h"
#include "model/sampler.h"
#include "model/weights.h"

namespace {

constexpr int kExitBadInput = 2;

struct Options {
  std::optional<std::string> model_name;  // default: the checkpoint's own config, else DiT-XL/2
  int image_size = 256;
  std::string weights_path;
  std::string weights_sha256;  // expected sha256 of weights_path; empty: not checked, only recorded
  bool random_weights = false;
  uint64_t weights_seed = 0;
  std::vector<int> classes;
  std::vector<uint64_t> seeds{0};
  int steps = 250;
  float cfg_scale = 4.0f;
  std::string sampler = "ddpm";
  float eta = 0.0f;
  std::string precision = "fp32";
  std::string backend = "cpu";
  std::string out_dir = "out";
  std::string vae;  // sd, tiny or none; default: sd at DiT's image sizes, tiny for smaller test models
  std::string vae_weights_path;
  std::string vae_weights_sha256;
  std::string forward_inputs;  // safetensors with x, t, y: one forward pass instead of sampling
  std::string forward_output;
  std::string phase_times;    // where the phases of the start go (JSON); empty: not written
  uint64_t spawn_ns = 0;      // the parent's CLOCK_MONOTONIC at the spawn; 0: count from main
  dit::EngineOptions engine;  // --cuda-graphs, --vae-fused-bias, --gemm-plan
};

// A seed is a decimal number in [0, 2^64 - 1]. CLI11 alone would wrap "-1" to 2^64 - 1, saturate
// a number past 2^64 and read "010" as octal: each is refused here, before conversion.
const CLI::Validator kSeed(
    [](std::string& text) -> std::string {
      uint64_t value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (text.empty() || error != std::errc() || end != text.data() + text.size())
        return "'" + text + "' is not a seed (a decimal number in [0, " +
               std::to_string(std::numeric_limits<uint64_t>::max()) + "])";
      return "";
    },
    "SEED");

// A SHA-256 in hexadecimal: 64 digits, either case.
const CLI::Validator kSha256(
    [](std::string& text) -> std::string {
      const bool hex = text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
                         return std::isxdigit(static_cast<unsigned char>(c)) != 0;
                       });
      return hex ? "" : "'" + text + "' is not a SHA-256 (64 hexadecimal digits)";
    },
    "HEX");

// A switch: 0 or 1 (also true/false, on/off, yes/no), not any number CLI11 would take as true.
const CLI::Validator kSwitch(
    [](std::string& text) -> std::string {
      for (const char* accepted : {"0", "1", "true", "false", "on", "off", "yes", "no"})
        if (text == accepted) return "";
      return "'" + text + "' is not 0 or 1";
    },
    "0|1");

void add_options(CLI::App& app, Options& o) {
  app.add_option("--model", o.model_name,
                 "DiT-S/B/L/XL with patch 2/4/8, e.g. DiT-XL/2 (default: the checkpoint's config, else DiT-XL/2)");
  app.add_option("--image-size", o.image_size, "256 or 512 (latents are image size / 8)")->capture_default_str();
  auto* weights = app.add_option("--weights", o.weights_path, "safetensors checkpoint with the original DiT names")
                      ->check(CLI::ExistingFile);
  auto* random = app.add_flag("--random-weights", o.random_weights, "seeded random weights instead of a checkpoint");
  weights->excludes(random);
  random->excludes(weights);
  app.add_option("--weights-sha256", o.weights_sha256,
                 "the SHA-256 --weights must have (64 hex digits); another file is refused")
      ->check(kSha256)
      ->needs(weights);
  app.add_option("--weights-seed", o.weights_seed, "seed of --random-weights")->check(kSeed)->capture_default_str();
  app.add_option("--class", o.classes, "class label of one image (repeat for a batch)");
  app.add_option("--seed", o.seeds, "noise seed per image: one (image i gets seed + i) or one per --class")
      ->check(kSeed)
      ->capture_default_str();
  app.add_option("--steps", o.steps, "sampling steps (respaced from 1000)")->capture_default_str();
  app.add_option("--cfg-scale", o.cfg_scale, "classifier-free guidance scale (1 = off)")->capture_default_str();
  app.add_option("--sampler", o.sampler, "ddpm or ddim")->check(CLI::IsMember({"ddpm", "ddim"}))->capture_default_str();
  app.add_option("--eta", o.eta, "DDIM noise scale (0 = deterministic)")->capture_default_str();
  app.add_option("--precision", o.precision, "fp32, tf32, fp16 or bf16 (cpu: fp32 only)")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}))
      ->capture_default_str();
  app.add_option("--backend", o.backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  app.add_option("--out", o.out_dir, "output directory")->capture_default_str();
  app.add_option("--forward-inputs", o.forward_inputs,
                 "one forward pass instead of sampling: a safetensors file with x [B, C, S, S] (float), t and y [B]");
  app.add_option("--forward-output", o.forward_output, "with --forward-inputs: the safetensors file of its output");
  app.add_option("--phase-times", o.phase_times,
                 "write where the time to the model being ready (first sampling step done, VAE made) went, per phase, "
                 "as JSON to this file");
  app.add_option("--spawn-monotonic-ns", o.spawn_ns,
                 "with --phase-times: the parent's CLOCK_MONOTONIC in nanoseconds when it spawned this process");
  app.add_option("--vae", o.vae,
                 "sd (the sd-vae-ft-ema/mse decoder), tiny (4 small blocks, 8x upscaling like sd: quick on a CPU) "
                 "or none (latents only) (default: sd for images of 256 and more, else tiny)")
      ->check(CLI::IsMember({"sd", "tiny", "none"}));
  auto* vae_weights =
      app.add_option(
             "--vae-weights", o.vae_weights_path,
             "safetensors VAE checkpoint, diffusers or original LDM names (default: random, seeded by --weights-seed)")
          ->check(CLI::ExistingFile);
  app.add_option("--vae-weights-sha256", o.vae_weights_sha256,
                 "the SHA-256 --vae-weights must have (64 hex digits); another file is refused")
      ->check(kSha256)
      ->needs(vae_weights);
  // The engine reads no environment: these options do, through CLI11, as their defaults.
  app.add_option("--cuda-graphs", o.engine.cuda_graphs, "capture and replay CUDA Graphs (cuda backend; 0 = eager)")
      ->envname("DIT_CUDA_GRAPHS")
      ->check(kSwitch)
      ->capture_default_str();
  app.add_option("--vae-fused-bias", o.engine.vae_fused_bias,
                 "fp16/bf16 VAE: the bias inside cuDNN's fused convolution (0 = a separate kernel)")
      ->envname("DIT_VAE_FUSED_BIAS")
      ->check(kSwitch)
      ->capture_default_str();
  app.add_option("--gemm-plan", o.engine.gemm_plan,
                 "GEMM plan: off, or a plan file (default: model/gemm-plans' file for this GPU, if any)")
      ->envname("DIT_GEMM_PLAN");
}

dit::ModelConfig resolve_config(const Options& o) {
  if (o.model_name) return dit::model_config(*o.model_name, o.image_size);
  if (!o.weights_path.empty()) {
    // The engine layout's __metadata__.config, or diffusers' config.json beside its file.
    if (auto config = dit::checkpoint_model_config(o.weights_path)) return *config;
  }
  return dit::model_config("DiT-XL/2", o.image_size);
}

dit::SampleRequest make_request(const Options& o) {
  if (o.classes.empty()) throw dit::Error(dit::ErrorKind::invalid_argument, "give --class (one per image)");
  dit::SampleRequest request;
  request.class_labels = o.classes;
  if (o.seeds.size() == 1) {
    if (!o.classes.empty() && o.classes.size() - 1 > std::numeric_limits<uint64_t>::max() - o.seeds[0])
      throw dit::Error(dit::ErrorKind::invalid_argument,
                       "--seed " + std::to_string(o.seeds[0]) + " for " + std::to_string(o.classes.size()) +
                           " images would need seeds past " + std::to_string(std::numeric_limits<uint64_t>::max()) +
                           " (give one --seed per --class)");
    for (size_t i = 0; i < o.classes.size(); ++i) request.seeds.push_back(o.seeds[0] + i);
  } else if (o.seeds.size() == o.classes.size()) {
    request.seeds = o.seeds;
  } else {
    throw dit::Error(dit::ErrorKind::invalid_argument, "--seed: give one seed or one per --class (" +
                                                           std::to_string(o.classes.size()) + " classes, " +
                                                           std::to_string(o.seeds.size()) + " seeds)");
  }
  request.steps = o.steps;
  request.cfg_scale = o.cfg_scale;
  request.sampler = dit::parse_sampler(o.sampler);
  request.eta = o.eta;
  return request;
}

// "step 12/250  3.41 steps/s  70 s left" on stderr: rewritten in place on a terminal, else a
// line at most every few seconds.
class ProgressLine {
 public:
  ProgressLine() : terminal_(isatty(fileno(stderr)) != 0), start_(Clock::now()), last_print_(start_) {}
  void operator()(int done, int total) {
    const auto now = Clock::now();
    if (!terminal_ && done < total && now - last_print_ < std::chrono::seconds(5)) return;
    last_print_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double rate = elapsed > 0 ? done / elapsed : 0.0;
    const double left = rate > 0 ? (total - done) / rate : 0.0;
    std::fprintf(stderr, "%sstep %d/%d  %.2f steps/s  %.0f s left%s", terminal_ ? "\r" : "", done, total, rate, left,
                 terminal_ && done < total ? "" : "\n");
    std::fflush(stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool terminal_;
  Clock::time_point start_, last_print_;
};

// Where the time from process start to the model being ready goes (--phase-times): ready when the
// first sampling step is done and the VAE, made beside the DiT and that step, too. The zero is
// the spawn when the parent gives it (--spawn-monotonic-ns: CLOCK_MONOTONIC in nanoseconds, as
// bench_cold_start passes it; steady_clock is that clock), else main's entry; each mark gives
// the time since the previous one to its phase.
class PhaseTimes {
 public:
  using Clock = std::chrono::steady_clock;
  static Clock::time_point& main_entry() {
    static Clock::time_point entry;
    return entry;
  }
  explicit PhaseTimes(uint64_t spawn_ns) : zero_(main_entry()), last_(main_entry()) {
    const Clock::time_point spawned{std::chrono::nanoseconds(spawn_ns)};
    if (spawn_ns > 0 && spawned <= zero_) {
      zero_ = spawned;
      from_spawn_ = true;
      phases_.emplace_back("process", milliseconds(spawned, main_entry()));
    }
  }
  void mark(const char* phase) {
    const Clock::time_point now = Clock::now();
    phases_.emplace_back(phase, milliseconds(last_, now));
    last_ = now;
  }
  // Work done on another thread beside the phases (the VAE's weights and decoder): its own
  // duration, reported apart (it overlaps the phases, so it is not one of them).
  void overlapped(const char* work, Clock::time_point start, Clock::time_point end) {
    overlapped_.emplace_back(work, milliseconds(start, end));
  }
  // The first sampling step is done, and the VAE (awaited after it) is ready: so is the model.
  void ready() {
    if (ready_ms_ < 0) ready_ms_ = milliseconds(zero_, last_);
  }
  bool is_ready() const { return ready_ms_ >= 0; }
  void write(const std::string& path) const {
    if (path.empty()) return;
    nlohmann::json phases = nlohmann::json::array();  // in the order they ran
    for (const auto& [name, ms] : phases_) phases.push_back({{"phase", name}, {"ms", ms}});
    nlohmann::json overlapped = nlohmann::json::array();
    for (const auto& [name, ms] : overlapped_) overlapped.push_back({{"work", name}, {"ms", ms}});
    dit::write_json_atomic(path, {{"zero", from_spawn_ ? "spawn" : "main"},
                                  {"phases", phases},
                                  {"overlapped", overlapped},
                                  {"ready_ms", ready_ms_},
                                  {"total_ms", milliseconds(zero_, Clock::now())}});
  }

 private:
  static double milliseconds(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  }
  Clock::time_point zero_, last_;
  bool from_spawn_ = false;
  double ready_ms_ = -1;
  std::vector<std::pair<std::string, double>> phases_;
  std::vector<std::pair<std::string, double>> overlapped_;
};

std::string resolve_vae(const Options& o, const dit::ModelConfig& config) {
  if (!o.vae.empty()) return o.vae;
  return config.input_size * 8 >= 256 ? "sd" : "tiny";
}

// The sha256 of the checkpoint at `path` (streamed, not read whole; remembered per file identity,
// core/checkpoint_hash.h), which must equal `expected` (either case) when one is given; `option`
// names the option in the error.
std::string checked_sha256(const std::string& option, const std::string& path, const std::string& expected) {
  const std::string actual = dit::remembered_sha256_file(path);  // read again only when the file changed
  std::string wanted = expected;
  for (char& c : wanted) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!wanted.empty() && actual != wanted)
    throw dit::Error(dit::ErrorKind::invalid_file,
                     option + " " + path + " has sha256 " + actual + ", not the expected " + wanted);
  return actual;
}

// The sha256 of each checkpoint file, as the request records them (empty for random weights).
struct WeightsHashes {
  std::string dit, vae;
};

std::string request_json(const Options& o, const dit::ModelConfig& config, const dit::SampleRequest& r,
                         const WeightsHashes& hashes) {
  nlohmann::json json = {
      {"model", nlohmann::json::parse(dit::to_json(config))},
      {"weights", o.random_weights ? "random:" + std::to_string(o.weights_seed) : o.weights_path},
      {"class_labels", r.class_labels},
      {"seeds", r.seeds},
      {"steps", r.steps},
      {"cfg_scale", r.cfg_scale},
      {"sampler", dit::sampler_name(r.sampler)},
      {"eta", r.eta},
      {"backend", o.backend},
      {"precision", o.precision},
      {"vae", resolve_vae(o, config)},
      {"vae_weights", o.vae_weights_path.empty() ? "random:" + std::to_string(o.weights_seed) : o.vae_weights_path}};
  if (!hashes.dit.empty()) json["weights_sha256"] = hashes.dit;
  if (!hashes.vae.empty()) json["vae_weights_sha256"] = hashes.vae;
  return json.dump();
}

// The forward mode: out = model(x, t, y) for the file's inputs, written as tensor "out" with
// the model, precision and weights in the metadata.
int forward_to_file(const Options& o, dit::DitModel& model, const std::string& weights_sha256) {
  const dit::SafetensorsFile inputs = dit::SafetensorsFile::open(o.forward_inputs);
  const dit::Tensor x = inputs.to_float("x");
  const std::vector<int64_t> t = inputs.to_int64("t"), y = inputs.to_int64("y");
  const dit::ModelConfig& config = model.config();
  const std::vector<int64_t> expected{x.shape.empty() ? 0 : x.dim(0), config.in_channels, config.input_size,
                                      config.input_size};
  if (x.shape != expected || x.dim(0) < 1 || static_cast<int64_t>(t.size()) != x.dim(0) ||
      static_cast<int64_t>(y.size()) != x.dim(0))
    throw dit::Error(dit::ErrorKind::invalid_file,
                     o.forward_inputs + ": x " + dit::shape_string(x.shape) + " with " + std::to_string(t.size()) +
                         " timesteps and " + std::to_string(y.size()) + " labels does not fit " + config.name +
                         " (x [B, " + std::to_string(config.in_channels) + ", " + std::to_string(config.input_size) +
                         ", " + std::to_string(config.input_size) + "], t and y [B])");
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] < 0 || t[i] > 999)
      throw dit::Error(dit::ErrorKind::invalid_file, o.forward_inputs + ": t[" + std::to_string(i) +
                                                         "] = " + std::to_string(t[i]) + " is outside [0, 999]");
    if (y[i] < 0 || y[i] > config.null_class())
      throw dit::Error(dit::ErrorKind::invalid_file,
                       o.forward_inputs + ": y[" + std::to_string(i) + "] = " + std::to_string(y[i]) +
                           " is outside [0, " + std::to_string(config.null_class()) + "] (the last is the null class)");
  }
  const dit::Tensor out = model.forward(x, t, y);
  std::map<std::string, std::string> metadata{
      {"model", config.name},
      {"precision", dit::precision_name(model.precision())},
      {"backend", o.backend},
      {"weights", o.random_weights ? "random:" + std::to_string(o.weights_seed) : o.weights_path}};
  if (!weights_sha256.empty()) metadata["weights_sha256"] = weights_sha256;
  dit::write_safetensors(o.forward_output, {{"out", out}}, metadata);
  std::fprintf(stderr, "wrote %s %s (%s %s forward of x %s)\n", o.forward_output.c_str(),
               dit::shape_string(out.shape).c_str(), config.name.c_str(), dit::precision_name(model.precision()),
               dit::shape_string(x.shape).c_str());
  return 0;
}

int run(const Options& o) {
  if (o.weights_path.empty() && !o.random_weights)
    throw dit::Error(dit::ErrorKind::invalid_argument, "give --weights PATH or --random-weights");
  const bool forward_only = !o.forward_inputs.empty() || !o.forward_output.empty();
  if (forward_only && (o.forward_inputs.empty() || o.forward_output.empty()))
    throw dit::Error(dit::ErrorKind::invalid_argument, "give both --forward-inputs and --forward-output");
  if (forward_only && !o.classes.empty())
    throw dit::Error(dit::ErrorKind::invalid_argument, "--class samples images; --forward-inputs holds its own labels");
  const dit::ModelConfig config = resolve_config(o);
  const dit::SampleRequest request = forward_only ? dit::SampleRequest{} : make_request(o);
  if (!forward_only) dit::validate(request, config.num_classes);

  const dit::Backend backend = dit::parse_backend(o.backend);
  const dit::Precision precision = dit::parse_precision(o.precision);
  PhaseTimes phases(o.spawn_ns);
  phases.mark("arguments");
  // No GPU (or a precision the backend lacks) is reported now, not after seconds of weights.
  dit::check_backend(backend, precision);
  phases.mark("backend_check");
#ifdef DIT_WITH_CUDA
  // cuBLASLt's start-up work (core/cublaslt_library.h: it is opened on first use) on a helper
  // thread beside the context's creation; the GEMMs' first use waits for it. After the backend
  // check, which loaded the driver: the loader's lock is not held against it.
  std::jthread cublaslt;
  if (backend == dit::Backend::cuda) cublaslt = std::jthread([] { dit::preload_cublaslt(); });
#endif
  // Each checkpoint is hashed before it is loaded, so a file that is not the expected one is
  // refused before seconds of loading; the request records the hashes either way.
  WeightsHashes hashes;
  if (!o.weights_path.empty()) hashes.dit = checked_sha256("--weights", o.weights_path, o.weights_sha256);
  if (!o.vae_weights_path.empty())
    hashes.vae = checked_sha256("--vae-weights", o.vae_weights_path, o.vae_weights_sha256);
  phases.mark("hash");
  // The decoder is made before sampling, so a bad VAE file fails in seconds, not after the run;
  // it is made on a helper thread beside the DiT (their loads share nothing but the device),
  // started before the device context: its weights are host work, and the decoder it then
  // makes on the device waits for the context the main thread is making.
  const std::string vae_name = forward_only ? "none" : resolve_vae(o, config);
  if (vae_name == "none" && !o.vae_weights_path.empty() && !forward_only)
    throw dit::Error(dit::ErrorKind::invalid_argument, "--vae-weights needs a decoder, but --vae is none");
  std::unique_ptr<dit::PendingVaeDecoder> vae;
  if (vae_name != "none") {
    const dit::VaeConfig vae_config = vae_name == "tiny" ? dit::tiny_vae_config() : dit::sd_vae_config();
    vae = std::make_unique<dit::PendingVaeDecoder>(vae_config, [&o, vae_config, &phases, backend, precision] {
      const auto start = PhaseTimes::Clock::now();
      // cuDNN's libraries load beside the weights (host work both, before the context exists),
      // not inside the decoder's making, which contends with the DiT's first step.
      std::jthread preload([backend] { dit::preload_vae_backend(backend); });
      const dit::VaeWeights weights = o.vae_weights_path.empty()
                                          ? dit::VaeWeights::random(vae_config, o.weights_seed)
                                          : dit::VaeWeights::load(o.vae_weights_path, vae_config);
      preload.join();
      const auto made = PhaseTimes::Clock::now();
      auto decoder = dit::make_vae_decoder(backend, vae_config, weights, precision, o.engine);
      // Recorded here, read by the main thread only after get(): no concurrent access.
      phases.overlapped("vae_weights", start, made);
      phases.overlapped("vae_decoder", made, PhaseTimes::Clock::now());
      return decoder;
    });
  }
  dit::start_backend(backend);
  phases.mark("context");
  // A checkpoint is opened and checked (names, shapes), then the model converts it piece by piece
  // from the file's mapping (make_model's DitCheckpoint overload: no float32 copy of the model).
  std::optional<dit::DitCheckpoint> checkpoint;
  if (!o.random_weights) checkpoint = dit::DitCheckpoint::open(o.weights_path, config);
  phases.mark("dit_weights");
  std::unique_ptr<dit::DitModel> model;
  if (o.random_weights)  // drawn where the model keeps them (on the device for cuda)
    model = dit::make_model(backend, config, dit::RandomDitWeights{o.weights_seed}, precision, o.engine);
  else
    model = dit::make_model(backend, *checkpoint, precision, o.engine);
  phases.mark("dit_model");
  if (forward_only) return forward_to_file(o, *model, hashes.dit);
  std::fprintf(stderr, "%s (%lld parameters), %zu image(s), %s %d steps, cfg %.2f, %s %s, VAE %s\n",
               config.name.c_str(), static_cast<long long>(config.parameter_count()), request.class_labels.size(),
               o.sampler.c_str(), request.steps, request.cfg_scale, o.backend.c_str(), o.precision.c_str(),
               vae_name.c_str());

  std::error_code error;
  std::filesystem::create_directories(o.out_dir, error);
  if (error)
    throw dit::Error(dit::ErrorKind::io, "cannot create --out directory '" + o.out_dir + "': " + error.message());

  ProgressLine progress;
  phases.mark("setup");
  // The VAE is awaited after the first step, which its load overlaps: a VAE that failed to load
  // stops the run there, a fraction of a second in, not after the sampling.
  dit::PendingVaeDecoder* pending = vae.get();
  const auto report = [&](int done, int total) {
    if (!phases.is_ready()) {
      phases.mark("first_step");
      if (pending) {
        pending->wait();
        phases.mark("vae");  // what the VAE's load adds after the first step
      }
      phases.ready();
    }
    progress(done, total);
    if (done == total && pending) std::fprintf(stderr, "decoding %zu image(s)\n", request.class_labels.size());
  };
  const auto start = std::chrono::steady_clock::now();
  dit::PipelineResult result;
  if (vae)
    result = dit::generate(*model, *vae, request, report);
  else
    result.latents = model->sample(request, report);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const std::filesystem::path out(o.out_dir);
  const std::string latents_path = (out / "latents.safetensors").string();
  // The start latents x_T of each image (without guidance's unconditional copies): with DDIM at
  // eta 0 the whole trajectory follows from them, so another implementation can retrace it.
  const dit::Tensor all_start = dit::initial_latents(request, config);
  dit::Tensor start_latents({result.latents.dim(0), all_start.dim(1), all_start.dim(2), all_start.dim(3)});
  std::copy_n(all_start.ptr(), start_latents.numel(), start_latents.ptr());
  dit::write_safetensors(latents_path, {{"latents", result.latents}, {"initial_latents", start_latents}},
                         {{"request", request_json(o, config, request, hashes)}});
  std::fprintf(stderr, "wrote %s %s\n", latents_path.c_str(), dit::shape_string(result.latents.shape).c_str());
  for (size_t i = 0; i < result.images.size(); ++i) {
    char name[96];
    std::snprintf(name, sizeof name, "%03zu_class%d_seed%llu.png", i, request.class_labels[i],
                  static_cast<unsigned long long>(request.seeds[i]));
    const std::string path = (out / name).string();
    dit::write_png(path, result.images[i]);
    std::fprintf(stderr, "wrote %s (%dx%d)\n", path.c_str(), result.images[i].width, result.images[i].height);
  }
  std::fprintf(stderr, "%zu image(s) in %.1f s\n", request.class_labels.size(), seconds);
  phases.write(o.phase_times);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  PhaseTimes::main_entry() = PhaseTimes::Clock::now();
  if (!dit::take_ctest_gpu("dit-sample")) return kExitBadInput;  // CTest's GPU, before any CUDA call
  CLI::App app{"dit-sample: class-conditional DiT images from a checkpoint or seeded random weights"};
  Options options;
  add_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  try {
    return run(options);
  } catch (const dit::Error& e) {
    std::fprintf(stderr, "dit-sample: %s\n", e.what());
    return kExitBadInput;  // bad input, a bad file, or no usable device: all setup problems
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dit-sample: unexpected failure: %s\n", e.what());
    return 1;
  }
}
