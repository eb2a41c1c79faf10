// Fixed during a session (the performance harness).
// CPU-backend benchmarks of a small model, so that the bench-smoke label runs everywhere, CI
// included: one forward pass of DiT-S/8 at 256 (16 tokens) at batch 1 and 2, a guided forward pass,
// and a short DDPM sampling run. Each iteration gets fresh inputs from a new seed; times are
// wall-clock around the call (the CPU backend runs on OpenMP threads, so CPU time would mislead).
//
// BM_CpuForward is the cpu-smoke lane's objective and follows the performance gate's
// timed-outputs protocol (bench/support/bench_support.h): timed iteration i (counted over the
// process, calibration runs and repetitions included) takes its inputs from
// image_request(--request-seed, i); its timed region ends with the copy of the output into the
// harness's own tensor; after it, with --outputs-dir=D, the copy is written as
// D/image-<i>.output.safetensors (tensor "output", float32, core's writer).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/support/bench_support.h"
#include "bench/engine/engine_setup.h"
#include "bench/engine/model_costs.h"
#include "core/safetensors.h"
#include "model/dit_model.h"

namespace {

constexpr const char* kModel = "DiT-S/8";
constexpr int kImageSize = 256;
constexpr uint64_t kWeightsSeed = 20261129;

// One model per process: building the random weights takes longer than a forward pass.
dit::DitModel& cpu_model() {
  static std::unique_ptr<dit::DitModel> model = [] {
    const dit::ModelConfig config = dit::model_config(kModel, kImageSize);
    return dit::make_model(dit::Backend::cpu, config, dit::DitWeights::random(config, kWeightsSeed));
  }();
  return *model;
}

template <typename F>
double wall_seconds(F&& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The cpu-smoke lane's objective is BM_CpuForward/batch:1 (config/autoresearch.json).
void BM_CpuForward(benchmark::State& state) {
  dit::DitModel& model = cpu_model();
  const int batch = static_cast<int>(state.range(0));
  dit::bench::RateCounters rates(dit::bench::weight_bytes(model.config(), dit::Precision::fp32),
                                 dit::bench::forward_flops(model.config(), batch));
  const dit::bench::TimedRequest& request = dit::bench::timed_request();
  dit::bench::TimedImages& timed = dit::bench::timed_images();
  for (auto _ : state) {
    const uint64_t index = timed.begin_image();
    const dit::bench::ImageRequest image = dit::bench::image_request(request.seed, index, model.config().num_classes);
    const dit::bench::ForwardInputs inputs = dit::bench::random_forward_inputs(model.config(), batch, image.seed);
    dit::Tensor copy;  // the harness's own: what the timed region ended with
    const double seconds = wall_seconds([&] {
      const dit::Tensor out = model.forward(inputs.x, inputs.t, inputs.y);
      copy = out;
    });
    benchmark::DoNotOptimize(copy.data.data());
    state.SetIterationTime(seconds);
    timed.add_timed_seconds(seconds);
    rates.add(seconds);
    // Untimed from here: Benchmark counts only the manual time.
    if (request.outputs_dir) {
      dit::write_safetensors(dit::bench::image_output_path(*request.outputs_dir, index, "output.safetensors").string(),
                             {{"output", copy}});
    }
  }
  rates.publish(state);
  timed.publish(state);
}
BENCHMARK(BM_CpuForward)->ArgName("batch")->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_CpuForwardWithCfg(benchmark::State& state) {
  dit::DitModel& model = cpu_model();
  const int images = static_cast<int>(state.range(0));
  dit::bench::RateCounters rates(dit::bench::weight_bytes(model.config(), dit::Precision::fp32),
                                 dit::bench::forward_flops(model.config(), 2 * images));
  static uint64_t seed = 1;  // never repeats within a process
  for (auto _ : state) {
    dit::bench::ForwardInputs inputs = dit::bench::random_forward_inputs(model.config(), 2 * images, seed++);
    for (int i = 0; i < images; ++i) {
      inputs.t[images + i] = inputs.t[i];
      inputs.y[images + i] = model.config().null_class();
    }
    dit::Tensor out;
    const double seconds = wall_seconds([&] { out = model.forward_with_cfg(inputs.x, inputs.t, inputs.y, 4.0f); });
    benchmark::DoNotOptimize(out.data.data());
    state.SetIterationTime(seconds);
    rates.add(seconds);
  }
  rates.publish(state);
}
BENCHMARK(BM_CpuForwardWithCfg)->ArgName("images")->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond);

// A 5-step guided DDPM run of one image: the sampler loop, noise and guidance on the CPU.
void BM_CpuSample(benchmark::State& state) {
  dit::DitModel& model = cpu_model();
  const int steps = static_cast<int>(state.range(0));
  static uint64_t seed = 1;  // never repeats within a process
  for (auto _ : state) {
    dit::SampleRequest request;
    request.class_labels = {static_cast<int>(seed % 1000)};
    request.seeds = {seed++};
    request.steps = steps;
    request.cfg_scale = 4.0f;
    dit::Tensor latents;
    const double seconds = wall_seconds([&] { latents = model.sample(request); });
    benchmark::DoNotOptimize(latents.data.data());
    state.SetIterationTime(seconds);
  }
  state.counters["steps"] = steps;
}
BENCHMARK(BM_CpuSample)->ArgName("steps")->Arg(5)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
