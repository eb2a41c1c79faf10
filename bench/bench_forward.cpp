// Fixed during a session (the performance harness).
// One DiT forward pass on the GPU: DiT-XL/2 at 256 with batch 2, 8 and 64, and at 512 with
// batch 2, in fp16 by default. Each iteration runs on fresh inputs (new latents, timesteps and
// labels from a new seed). The time is the host-observed latency of DitModel::forward, which
// returns only when the output is on the host (inputs up, output down included: a few hundred
// KB against GBs of weight reads). Counters: flops and weight bytes per pass and their rates,
// persistent device memory (held after load and a first pass at this batch: weights, activation
// arena, workspaces) and peak device memory (high-water mark over load and that pass), both
// above the usage right after CUDA context creation.
//
// Command-line mode (used by torch_reference.py to compare outputs):
//   bench_forward --weights=W.safetensors --forward-inputs=IN.safetensors
//                 --forward-output=OUT.safetensors [--precision=fp16]
// reads x [B, 4, S, S] float32, t [B] and y [B] int64 from IN, runs one forward pass at image
// size 8 S, and writes `out` [B, 8, S, S] float32 to OUT.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "bench/engine/engine_setup.h"
#include "bench/support/gpu_support.h"
#include "bench/engine/model_costs.h"
#include "core/safetensors.h"

namespace {

using dit::bench::Option;

const Option model_option("model", "DiT configuration", "DiT-XL/2");
const Option weights_option("weights", "safetensors checkpoint (default: seeded random weights)");
const Option precision_option("precision", "fp32, tf32, fp16 or bf16", "fp16");
const Option inputs_option("forward-inputs", "command-line mode: safetensors with x, t, y");
const Option output_option("forward-output", "command-line mode: where to write `out`");

dit::bench::EngineChoice engine_choice() {
  dit::bench::EngineChoice choice;
  choice.model = model_option.value();
  choice.weights_path = weights_option.value();
  choice.precision = dit::parse_precision(precision_option.value());
  return choice;
}

dit::bench::ModelCache& models() {
  static dit::bench::ModelCache cache(engine_choice());
  return cache;
}

struct MemoryFigures {
  size_t persistent = 0, peak = 0;
};

void BM_Forward(benchmark::State& state) {
  const int image_size = static_cast<int>(state.range(0));
  const int batch = static_cast<int>(state.range(1));
  MemoryFigures memory;
  dit::DitModel* model = nullptr;
  try {
    std::optional<dit::bench::DeviceMemoryMonitor> monitor(std::in_place);
    model = &models().get(image_size);
    // The first pass sizes the activation arena for this batch; the monitor sees its peak,
    // then stops before anything is timed.
    const dit::bench::ForwardInputs warm = dit::bench::random_forward_inputs(model->config(), batch, 0);
    benchmark::DoNotOptimize(model->forward(warm.x, warm.t, warm.y).data.data());
    DIT_BENCH_CUDA(cudaDeviceSynchronize());
    memory.persistent = dit::bench::device_used_bytes() - dit::bench::context_used_bytes();
    monitor->sample();
    memory.peak = monitor->peak_above_context();
    monitor.reset();
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
    return;
  }

  const dit::ModelConfig& config = model->config();
  dit::bench::RateCounters rates(dit::bench::weight_bytes(config, model->precision()),
                                 dit::bench::forward_flops(config, batch));
  uint64_t seed = 1;
  for (auto _ : state) {
    const dit::bench::ForwardInputs inputs = dit::bench::random_forward_inputs(config, batch, seed++);
    DIT_BENCH_CUDA(cudaDeviceSynchronize());
    const auto start = std::chrono::steady_clock::now();
    dit::Tensor out = model->forward(inputs.x, inputs.t, inputs.y);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    benchmark::DoNotOptimize(out.data.data());
    state.SetIterationTime(seconds);
    rates.add(seconds);
  }
  rates.publish(state);
  dit::bench::set_bytes_counter(state, "persistent_device_bytes", static_cast<double>(memory.persistent));
  dit::bench::set_bytes_counter(state, "peak_device_bytes", static_cast<double>(memory.peak));
  state.SetLabel(config.name + " " + dit::precision_name(model->precision()));
}
BENCHMARK(BM_Forward)
    ->ArgNames({"image", "batch"})
    ->Args({256, 2})
    ->Args({256, 8})
    ->Args({256, 64})
    ->Args({512, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The command-line mode: one forward pass of given inputs, written to a file.
std::optional<int> forward_to_file() {
  if (!inputs_option.given() && !output_option.given()) return std::nullopt;
  if (!inputs_option.given() || !output_option.given()) {
    std::fprintf(stderr, "bench_forward: give both --forward-inputs and --forward-output\n");
    return 2;
  }
  try {
    const dit::SafetensorsFile inputs = dit::SafetensorsFile::open(inputs_option.value());
    const dit::Tensor x = inputs.to_float("x");
    const std::vector<int64_t> t = inputs.to_int64("t"), y = inputs.to_int64("y");
    if (x.shape.size() != 4) throw dit::Error(dit::ErrorKind::invalid_file, "x must be [B, C, S, S]");
    dit::DitModel& model = models().get(static_cast<int>(8 * x.dim(3)));
    const dit::Tensor out = model.forward(x, t, y);
    dit::write_safetensors(output_option.value(), {{"out", out}},
                           {{"precision", dit::precision_name(model.precision())}, {"model", model.config().name}});
    std::printf("bench_forward: %s %s forward of x %s written to %s\n", model.config().name.c_str(),
                dit::precision_name(model.precision()), dit::shape_string(x.shape).c_str(),
                output_option.value().c_str());
    return 0;
  } catch (const dit::Error& error) {
    std::fprintf(stderr, "bench_forward: %s\n", error.what());
    return error.kind() == dit::ErrorKind::device ? 1 : 2;
  }
}

const bool registered = (dit::bench::set_before_benchmarks(forward_to_file), true);

}  // namespace
