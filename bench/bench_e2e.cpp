// Fixed during a session (the performance harness).
// End to end on the GPU: whole images through dit::generate (DDPM, guidance, VAE decode, uint8
// conversion), DiT-XL/2 at 256 and 512, one image and a batch, plus the sampling loop alone
// (latents, no decode) for the side-by-side table with PyTorch.
//
// What is timed is what is judged: the engine runs at the backend and precision of the GPU
// quality gate set (<build>/quality/gate-sets.json, set "gpu" unless --gate-set names another,
// such as the "session" set of the lane sized for a GPU-host lease), with the weights seed, sampler,
// steps and guidance of one corpus case (the first 256 case of that set's corpus unless --case
// names another). The first timed image of BM_E2E_Image/256 in a process is that case itself;
// its label then carries `hash=<sha256> image=<sha256> output=<sha256> case=<id>`: the SHA-256 of
// the case's latent file as dit::quality::write_rendered_case writes it (<id>.latent.safetensors:
// the float32 latent [1, 4, 32, 32] with metadata {"case": id}), of its PNG, and of the raw output
// bytes (dit::quality::output_hash), computed after the timing: the quality render's manifest
// entry for that case (render.json, cases.<id>.latent_sha256, image_sha256, output_sha256) holds
// the same three. The performance gate compares the first. Later iterations rotate seeds and labels, so nothing can be reused
// from one image to the next.
//
// Times are host-observed: generate() returns when the images are on the host. Each
// configuration first runs an untimed 2-step warm-up (a full-length one would double the cost of
// every perf-gate run); the first timed image may still grow the engine's activation arena to
// the full step count, a one-off of milliseconds against seconds, the same for every commit.
// Memory: peak_device_bytes is the
// high-water mark sampled by a polling thread over the model build and warm-up and after every
// timed image; persistent_device_bytes is what is held after the last image (both above the
// usage right after context creation). One image at 256 runs without fixed repetitions (the
// driver repeats it; its perf test passes --benchmark_repetitions); the others carry their own
// to stay bounded. With repetitions, p50 and p95 aggregates are reported.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "bench/engine/engine_setup.h"
#include "bench/support/gpu_support.h"
#include "model/pipeline.h"
#include "quality/corpus.h"
#include "quality/gate_sets.h"
#include "quality/store.h"

namespace {

using dit::bench::Option;

const Option precision_option("precision", "override the quality gate set's precision (breaks the hash match)");
const Option case_option("case", "corpus case whose settings and hash BM_E2E_Image/256 uses");
const Option gate_set_option("gate-set", "quality gate set whose backend, precision and corpus are timed", "gpu");
const Option steps_option("steps", "override the case's step count (quick runs; reports no hash)");

struct Setup {
  dit::quality::GateSet gate_set;
  dit::quality::Case reference_case;  // settings of every request, hash of BM_E2E_Image/256
  dit::Precision precision = dit::Precision::fp32;
  int steps = 0;
  bool hash_comparable = true;  // false when --precision or --steps changed the judged path
};

const Setup& setup() {
  static const Setup value = [] {
    Setup s;
    const std::vector<dit::quality::GateSet> sets = dit::quality::load_gate_sets(DIT_QUALITY_GATE_SETS);
    const std::string& wanted = gate_set_option.value();
    const auto found = std::find_if(sets.begin(), sets.end(), [&](const auto& set) { return set.name == wanted; });
    if (found == sets.end()) {
      throw dit::Error(dit::ErrorKind::invalid_file,
                       std::string(DIT_QUALITY_GATE_SETS) + " has no \"" + wanted + "\" gate set");
    }
    s.gate_set = *found;
    const dit::quality::Corpus corpus = dit::quality::load_corpus(s.gate_set.corpus);
    if (case_option.given()) {
      s.reference_case = corpus.at(case_option.value());
    } else {
      const auto first =
          std::find_if(corpus.cases.begin(), corpus.cases.end(), [](const auto& c) { return c.image_size == 256; });
      if (first == corpus.cases.end()) {
        throw dit::Error(dit::ErrorKind::invalid_file, corpus.path + " has no case at image size 256");
      }
      s.reference_case = *first;
    }
    s.precision = dit::parse_precision(precision_option.given() ? precision_option.value() : s.gate_set.precision);
    s.steps = steps_option.given() ? std::stoi(steps_option.value()) : s.reference_case.steps;
    s.hash_comparable = !precision_option.given() && !steps_option.given();
    return s;
  }();
  return value;
}

dit::bench::ModelCache& models() {
  static dit::bench::ModelCache cache([] {
    dit::bench::EngineChoice choice;
    choice.model = setup().reference_case.model;
    choice.backend = dit::parse_backend(setup().gate_set.backend);
    choice.precision = setup().precision;
    choice.weights_seed = setup().reference_case.weights_seed;
    return choice;
  }());
  return cache;
}

dit::VaeDecoder& vae() {
  static std::unique_ptr<dit::VaeDecoder> decoder = dit::bench::bench_vae(
      dit::parse_backend(setup().gate_set.backend), setup().precision, setup().reference_case.weights_seed);
  return *decoder;
}

dit::SampleRequest request_for(int images, uint64_t first_seed) {
  const dit::quality::Case& c = setup().reference_case;
  dit::SampleRequest request;
  for (int i = 0; i < images; ++i) {
    request.class_labels.push_back(static_cast<int>((c.class_label + 37 * (first_seed + i)) % 1000));
    request.seeds.push_back(first_seed + i);
  }
  request.steps = setup().steps;
  request.cfg_scale = static_cast<float>(c.cfg_scale);
  request.sampler = dit::parse_sampler(c.sampler);
  return request;
}

// The case's hashes exactly as the quality render writes and hashes its files.
dit::quality::RenderRecord rendered_hashes(const dit::quality::Case& c, const dit::PipelineResult& result) {
  const dit::quality::RenderedCase rendered{result.latents, result.images.at(0)};
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("dit-bench-e2e-" + std::to_string(getpid()));
  std::filesystem::create_directories(directory);
  const dit::quality::RenderRecord record = dit::quality::write_rendered_case(directory.string(), c.id, rendered);
  std::filesystem::remove_all(directory);
  return record;
}

enum class Work { image, latents };

// Done once per configuration, untimed: model build and a 2-step warm-up (library handles,
// kernel JIT, the first eager pass and the CUDA Graph capture), under the memory monitor.
struct Prepared {
  size_t peak = 0;  // above the usage right after context creation
  std::string settings;
};

Prepared& prepare(Work work, int image_size, int images) {
  static std::map<std::tuple<Work, int, int>, Prepared> prepared;
  const auto key = std::make_tuple(work, image_size, images);
  if (const auto found = prepared.find(key); found != prepared.end()) return found->second;
  Prepared p;
  std::optional<dit::bench::DeviceMemoryMonitor> monitor(std::in_place);
  dit::DitModel& model = models().get(image_size);
  vae();
  dit::SampleRequest warm = request_for(images, 0);
  warm.steps = 2;
  if (work == Work::image) {
    benchmark::DoNotOptimize(dit::generate(model, vae(), warm).images.data());
  } else {
    benchmark::DoNotOptimize(model.sample(warm).data.data());
  }
  DIT_BENCH_CUDA(cudaDeviceSynchronize());
  monitor->sample();
  p.peak = monitor->peak_above_context();
  const dit::SampleRequest shown = request_for(1, 0);
  char settings[160];
  std::snprintf(settings, sizeof settings, "precision=%s sampler=%s steps=%d cfg=%g",
                dit::precision_name(model.precision()), dit::sampler_name(shown.sampler), shown.steps, shown.cfg_scale);
  p.settings = settings;
  return prepared.emplace(key, std::move(p)).first->second;
}

size_t used_above_context() {
  const size_t used = dit::bench::device_used_bytes(), at_context = dit::bench::context_used_bytes();
  return used > at_context ? used - at_context : 0;
}

void run_e2e(benchmark::State& state, Work work, int images) {
  const int image_size = static_cast<int>(state.range(0));
  Prepared* prepared = nullptr;
  dit::DitModel* model = nullptr;
  try {
    prepared = &prepare(work, image_size, images);
    model = &models().get(image_size);
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
    return;
  }
  const dit::quality::Case& reference = setup().reference_case;
  // The first timed image of BM_E2E_Image at the reference case's size is the reference case
  // itself, hashed (untimed) as the quality render hashes it.
  static std::optional<dit::quality::RenderRecord> reference_hash;
  const bool owes_reference = work == Work::image && images == 1 && image_size == reference.image_size &&
                              setup().hash_comparable && !reference_hash;

  // Seeds never repeat within a process (Benchmark may call this function more than once); the
  // reference case's own seeds are small, timed images start above them.
  static uint64_t seed = 1000;
  double seconds_total = 0;
  size_t persistent = 0;
  for (auto _ : state) {
    const bool render_reference = owes_reference && !reference_hash;
    dit::SampleRequest request = request_for(images, seed);
    if (render_reference) {
      request.class_labels = {reference.class_label};
      request.seeds = {reference.seed};
    } else {
      seed += static_cast<uint64_t>(images);
    }
    DIT_BENCH_CUDA(cudaDeviceSynchronize());
    const auto start = std::chrono::steady_clock::now();
    std::optional<dit::PipelineResult> result;
    if (work == Work::image) {
      result = dit::generate(*model, vae(), request);
    } else {
      benchmark::DoNotOptimize(model->sample(request).data.data());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    seconds_total += seconds;
    // Untimed from here: Benchmark counts only the manual time.
    if (render_reference) reference_hash = rendered_hashes(reference, *result);
    persistent = used_above_context();
    prepared->peak = std::max(prepared->peak, persistent);
  }
  state.counters["images_per_second"] = static_cast<double>(state.iterations()) * images / seconds_total;
  dit::bench::set_bytes_counter(state, "persistent_device_bytes", static_cast<double>(persistent));
  dit::bench::set_bytes_counter(state, "peak_device_bytes", static_cast<double>(prepared->peak));
  const bool reports_hash = work == Work::image && images == 1 && image_size == reference.image_size && reference_hash;
  state.SetLabel(reports_hash ? "hash=" + reference_hash->latent_sha256 + " image=" + reference_hash->image_sha256 +
                                    " output=" + reference_hash->output_sha256 + " case=" + reference.id + " " +
                                    prepared->settings
                              : prepared->settings);
}

void BM_E2E_Image(benchmark::State& state) { run_e2e(state, Work::image, 1); }
void BM_E2E_Batch(benchmark::State& state) { run_e2e(state, Work::image, static_cast<int>(state.range(1))); }
void BM_E2E_SampleLatents(benchmark::State& state) { run_e2e(state, Work::latents, 1); }

// The objective of the a5500-e2e-256 lane (config/autoresearch.json): its name must stay
// exactly BM_E2E_Image/256, so it carries no fixed iterations or repetitions.
BENCHMARK(BM_E2E_Image)
    ->Arg(256)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Apply([](benchmark::internal::Benchmark* b) { dit::bench::with_percentiles(b); });
BENCHMARK(BM_E2E_Image)->Arg(512)->Iterations(1)->Repetitions(2)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_E2E_Batch)
    ->ArgNames({"image", "images"})
    ->Args({256, 8})
    ->Iterations(1)
    ->Repetitions(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_E2E_SampleLatents)
    ->Arg(256)
    ->Iterations(1)
    ->Repetitions(3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Apply([](benchmark::internal::Benchmark* b) { dit::bench::with_percentiles(b); });

}  // namespace
