// Fixed during a session (the performance harness).
// End to end on the GPU: whole images through dit::generate (DDPM, guidance, VAE decode, uint8
// conversion), DiT-XL/2 at 256 and 512, one image and a batch, plus the sampling loop alone
// (latents, no decode) for the side-by-side table with PyTorch.
//
// What is timed is what is judged: the engine runs at the backend and precision of the GPU
// quality gate set (<build>/quality/gate-sets.json, set "gpu" unless --gate-set names another,
// such as the "session" set of the lane sized for a GPU-host lease), with the model, weights
// seed, sampler, steps and guidance of one corpus case (the first 256 case of that set's corpus
// unless --case names another).
//
// BM_E2E_Image is the e2e lanes' objective and follows the performance gate's timed-outputs
// protocol (bench/support/bench_support.h): timed image i (counted over the process, Google
// Benchmark's calibration runs and repetitions included) takes its seed and class label from
// image_request(--request-seed, i); its timed region ends at the harness's own
// cudaDeviceSynchronize() and the copy of the engine's result into the harness's own buffers;
// after it, with --outputs-dir=D, that copy is written exactly as the quality render writes a
// case, with dit::quality::write_rendered_case: D/image-<i>.latent.safetensors (the float32
// latent [1, 4, s/8, s/8], metadata {"case": "image-<i>"}) and D/image-<i>.png. The performance
// gate compares these files with the best commit's for the same request, so a path taken only
// when timed shows up as a mismatch. BM_E2E_Images, the throughput lane's objective, follows the
// same protocol with a batch of timed images an iteration (one request of them all, each image
// its own index and files; timed_images counts images, not iterations). The other benchmarks
// draw their requests from the same seed (indices from kUnjudgedImageIndexBase) and write
// nothing.
//
// Times are host-observed. Each configuration first runs an untimed 2-step warm-up (a
// full-length one would double the cost of every perf-gate run); the first timed image may
// still grow the engine's activation arena to the full step count, a one-off of milliseconds
// against seconds, the same for every commit. Memory: peak_device_bytes is the high-water mark
// sampled by a polling thread over the model build and warm-up and after every timed image;
// persistent_device_bytes is what is held after the last image (both above the usage right after
// context creation). One image (at 256 or 512) runs without fixed repetitions (the driver repeats
// it; its perf test passes --benchmark_repetitions); the others carry their own to stay bounded. With
// repetitions, p50 and p95 aggregates are reported.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bench/engine/engine_setup.h"
#include "bench/support/gpu_support.h"
#include "model/pipeline.h"
#include "quality/corpus.h"
#include "quality/gate_sets.h"
#include "quality/store.h"

namespace {

using dit::bench::Option;

const Option precision_option("precision",
                              "override the quality gate set's precision (the timed path is then not the judged one)");
const Option case_option("case",
                         "corpus case whose model, weights seed, sampler, steps and guidance every request uses");
const Option gate_set_option("gate-set", "quality gate set whose backend, precision and corpus are timed", "gpu");
const Option steps_option("steps", "override the case's step count (quick runs; not the judged path)");

struct Setup {
  dit::quality::GateSet gate_set;
  dit::quality::Case reference_case;  // the settings of every request
  dit::Precision precision = dit::Precision::fp32;
  int steps = 0;
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
    return s;
  }();
  return value;
}

// The checkpoint the reference case renders from in the quality gate (its own, else its gate
// set's), or nullopt for the embedded default (seeded random weights).
const std::optional<dit::quality::WeightsReference>& case_weights() {
  return dit::quality::case_checkpoint(setup().reference_case, setup().gate_set);
}

// Before any benchmark: the checkpoint is hashed as the renderer hashes it, so a missing or
// different file is an input error (exit 2) before seconds of loading, and the JSON context
// records which weights were timed.
std::optional<int> check_case_weights() {
  try {
    const auto& weights = case_weights();
    if (!weights) {
      benchmark::AddCustomContext("weights",
                                  "seeded random (seed " + std::to_string(setup().reference_case.weights_seed) + ")");
      return std::nullopt;
    }
    if (const std::string problem = dit::quality::weights_file_problem(*weights); !problem.empty()) {
      std::fprintf(stderr, "bench_e2e: gate set %s, case %s: %s\n", setup().gate_set.name.c_str(),
                   setup().reference_case.id.c_str(), problem.c_str());
      return 2;
    }
    benchmark::AddCustomContext("weights", weights->path);
    benchmark::AddCustomContext("weights_sha256", weights->sha256);
  } catch (const dit::Error& error) {
    std::fprintf(stderr, "bench_e2e: %s\n", error.what());
    return 2;
  }
  return std::nullopt;
}

const bool weights_checked = (dit::bench::set_before_benchmarks(check_case_weights), true);

dit::bench::ModelCache& models() {
  static dit::bench::ModelCache cache([] {
    dit::bench::EngineChoice choice;
    choice.model = setup().reference_case.model;
    choice.backend = dit::parse_backend(setup().gate_set.backend);
    choice.precision = setup().precision;
    choice.weights_seed = setup().reference_case.weights_seed;
    if (case_weights()) choice.weights_path = case_weights()->path;
    return choice;
  }());
  return cache;
}

dit::VaeDecoder& vae() {
  static std::unique_ptr<dit::VaeDecoder> decoder = dit::bench::bench_vae(
      dit::parse_backend(setup().gate_set.backend), setup().precision, setup().reference_case.weights_seed);
  return *decoder;
}

// The next index for a request that is not a timed image of BM_E2E_Image (warm-ups, batches,
// latents): never one a timed image uses, never repeated within the process.
uint64_t next_unjudged_index() {
  static uint64_t index = dit::bench::kUnjudgedImageIndexBase;
  return index++;
}

// A request of the reference case's settings for images with these indices (seeds and labels
// from the process's request seed).
dit::SampleRequest request_for(const std::vector<uint64_t>& indices, int num_classes) {
  const dit::quality::Case& c = setup().reference_case;
  dit::SampleRequest request;
  for (const uint64_t index : indices) {
    const dit::bench::ImageRequest image =
        dit::bench::image_request(dit::bench::timed_request().seed, index, num_classes);
    request.class_labels.push_back(image.class_label);
    request.seeds.push_back(image.seed);
  }
  request.steps = setup().steps;
  request.cfg_scale = static_cast<float>(c.cfg_scale);
  request.sampler = dit::parse_sampler(c.sampler);
  return request;
}

std::vector<uint64_t> unjudged_indices(int images) {
  std::vector<uint64_t> indices;
  for (int i = 0; i < images; ++i) indices.push_back(next_unjudged_index());
  return indices;
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
  // The VAE (its weights made on the host, its library handles and upload) is made beside the
  // DiT's load and warm-up sampling, then warmed by decoding what that sampled: the load every
  // performance-gate process pays before its first image.
  std::future<dit::VaeDecoder*> vae_loading;
  if (work == Work::image) vae_loading = std::async(std::launch::async, [] { return &vae(); });
  dit::DitModel& model = models().get(image_size);
  const int num_classes = model.config().num_classes;
  dit::SampleRequest warm = request_for(unjudged_indices(images), num_classes);
  warm.steps = 2;
  dit::Tensor warm_latents = model.sample(warm);
  if (work == Work::image) {
    vae_loading.get();
    for (float& v : warm_latents.data) v /= dit::kVaeScalingFactor;
    benchmark::DoNotOptimize(vae().decode(warm_latents).data.data());
  }
  benchmark::DoNotOptimize(warm_latents.data.data());
  DIT_BENCH_CUDA(cudaDeviceSynchronize());
  monitor->sample();
  p.peak = monitor->peak_above_context();
  const dit::SampleRequest shown = request_for({}, num_classes);
  char settings[200];
  std::snprintf(settings, sizeof settings, "case=%s precision=%s sampler=%s steps=%d cfg=%g",
                setup().reference_case.id.c_str(), dit::precision_name(model.precision()),
                dit::sampler_name(shown.sampler), shown.steps, shown.cfg_scale);
  p.settings = settings;
  return prepared.emplace(key, std::move(p)).first->second;
}

size_t used_above_context() {
  const size_t used = dit::bench::device_used_bytes(), at_context = dit::bench::context_used_bytes();
  return used > at_context ? used - at_context : 0;
}

// Image `i` of a batch's result as the quality render writes a case: its latent [1, C, s, s].
dit::quality::RenderedCase batch_image(const dit::PipelineResult& result, int i) {
  const std::vector<int64_t>& shape = result.latents.shape;
  const int64_t per_image = result.latents.numel() / shape.at(0);
  dit::Tensor latent({1, shape.at(1), shape.at(2), shape.at(3)});
  std::copy_n(result.latents.data.begin() + i * per_image, per_image, latent.data.begin());
  return {std::move(latent), result.images.at(static_cast<size_t>(i))};
}

// `judged`: the iteration's images are timed images of the protocol, judged by their outputs
// (whole images only).
void run_e2e(benchmark::State& state, Work work, int images, bool judged) {
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
  judged = judged && work == Work::image;
  const int num_classes = model->config().num_classes;
  const dit::bench::TimedRequest& timed_request = dit::bench::timed_request();
  dit::bench::TimedImages& timed = dit::bench::timed_images();
  double seconds_total = 0;
  size_t persistent = 0;
  for (auto _ : state) {
    std::vector<uint64_t> indices;
    for (int i = 0; judged && i < images; ++i) indices.push_back(timed.begin_image());
    const dit::SampleRequest request = request_for(judged ? indices : unjudged_indices(images), num_classes);
    dit::PipelineResult result;  // the engine's
    dit::PipelineResult copy;    // the harness's own: what the timed region ended with
    dit::Tensor latents;
    dit::Tensor latents_copy;
    DIT_BENCH_CUDA(cudaDeviceSynchronize());
    const auto start = std::chrono::steady_clock::now();
    if (work == Work::image) {
      result = dit::generate(*model, vae(), request);
    } else {
      latents = model->sample(request);
    }
    DIT_BENCH_CUDA(cudaDeviceSynchronize());
    if (work == Work::image) {
      copy = result;
    } else {
      latents_copy = latents;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    seconds_total += seconds;
    // Untimed from here: Benchmark counts only the manual time.
    benchmark::DoNotOptimize(copy.images.data());
    benchmark::DoNotOptimize(latents_copy.data.data());
    if (judged) {
      timed.add_timed_seconds(seconds);
      if (timed_request.outputs_dir) {
        for (int i = 0; i < images; ++i) {
          dit::quality::write_rendered_case(timed_request.outputs_dir->string(),
                                            dit::bench::image_output_name(indices[static_cast<size_t>(i)]),
                                            batch_image(copy, i), dit::Durability::replaced);
        }
      }
    }
    persistent = used_above_context();
    prepared->peak = std::max(prepared->peak, persistent);
  }
  state.counters["images_per_second"] = static_cast<double>(state.iterations()) * images / seconds_total;
  dit::bench::set_bytes_counter(state, "persistent_device_bytes", static_cast<double>(persistent));
  dit::bench::set_bytes_counter(state, "peak_device_bytes", static_cast<double>(prepared->peak));
  if (judged) timed.publish(state);
  state.SetLabel(prepared->settings);
}

void BM_E2E_Image(benchmark::State& state) { run_e2e(state, Work::image, 1, true); }
void BM_E2E_Images(benchmark::State& state) { run_e2e(state, Work::image, static_cast<int>(state.range(1)), true); }
void BM_E2E_Batch(benchmark::State& state) { run_e2e(state, Work::image, static_cast<int>(state.range(1)), false); }
void BM_E2E_SampleLatents(benchmark::State& state) { run_e2e(state, Work::latents, 1, false); }

// The objective of the a5500-e2e-256 lane (config/autoresearch.json): its name must stay
// exactly BM_E2E_Image/256, so it carries no fixed iterations or repetitions.
BENCHMARK(BM_E2E_Image)
    ->Arg(256)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Apply([](benchmark::internal::Benchmark* b) { dit::bench::with_percentiles(b); });
// The objective of the a5500-fp16-512 lane (with --case naming its 512 case): no fixed iterations
// or repetitions either.
BENCHMARK(BM_E2E_Image)
    ->Arg(512)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Apply([](benchmark::internal::Benchmark* b) { dit::bench::with_percentiles(b); });
// The objective of the a5500-fp16-batch-256 lane: 32 images a request, 64 rows a forward pass
// under guidance, the shape of the forward-256-batch-64 speed target, judged image by image; its
// name stays BM_E2E_Images/image:256/images:32, with no fixed iterations or repetitions.
BENCHMARK(BM_E2E_Images)
    ->ArgNames({"image", "images"})
    ->Args({256, 32})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Apply([](benchmark::internal::Benchmark* b) { dit::bench::with_percentiles(b); });
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
