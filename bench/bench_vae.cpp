// Fixed during a session (the performance harness).
// The SD VAE decoder on the GPU (seeded random weights, the real architecture): one latent
// decoded to a 256x256 and to a 512x512 image, fp16 by default. Each iteration decodes a fresh
// latent from a new seed; the time is the host-observed latency of VaeDecoder::decode (it returns
// the image on the host). Counters: flops of the convolutions and attention and their rate,
// persistent and peak device memory above the usage right after context creation.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>

#include "bench/engine/engine_setup.h"
#include "bench/support/gpu_support.h"
#include "bench/engine/model_costs.h"
#include "model/pipeline.h"

namespace {

const dit::bench::Option precision_option("precision", "fp32, tf32, fp16 or bf16", "fp16");

dit::Tensor fresh_latent(int latent_size, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal;
  dit::Tensor z({1, 4, latent_size, latent_size});
  for (float& value : z.data) value = normal(generator) / dit::kVaeScalingFactor;
  return z;
}

void BM_VaeDecode(benchmark::State& state) {
  const int image_size = static_cast<int>(state.range(0));
  const int latent_size = image_size / 8;
  static std::unique_ptr<dit::VaeDecoder> decoder;
  static std::map<int, std::pair<size_t, size_t>> memory;  // image size -> (persistent, peak)
  try {
    if (!memory.count(image_size)) {
      std::optional<dit::bench::DeviceMemoryMonitor> monitor(std::in_place);
      if (!decoder) decoder = dit::bench::bench_vae(dit::Backend::cuda, dit::parse_precision(precision_option.value()));
      benchmark::DoNotOptimize(decoder->decode(fresh_latent(latent_size, 0)).data.data());  // warm-up
      DIT_BENCH_CUDA(cudaDeviceSynchronize());
      monitor->sample();
      memory[image_size] = {dit::bench::device_used_bytes() - dit::bench::context_used_bytes(),
                            monitor->peak_above_context()};
    }
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
    return;
  }

  dit::bench::RateCounters rates(0, 2.0 * dit::bench::vae_decoder_macs(decoder->config(), latent_size));
  static uint64_t seed = 1;  // never repeats within a process
  for (auto _ : state) {
    const dit::Tensor z = fresh_latent(latent_size, seed++);
    DIT_BENCH_CUDA(cudaDeviceSynchronize());
    const auto start = std::chrono::steady_clock::now();
    dit::Tensor image = decoder->decode(z);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    benchmark::DoNotOptimize(image.data.data());
    state.SetIterationTime(seconds);
    rates.add(seconds);
  }
  rates.publish(state);
  dit::bench::set_bytes_counter(state, "persistent_device_bytes", static_cast<double>(memory[image_size].first));
  dit::bench::set_bytes_counter(state, "peak_device_bytes", static_cast<double>(memory[image_size].second));
  state.SetLabel(std::string("sd-vae ") + precision_option.value());
}
BENCHMARK(BM_VaeDecode)->ArgName("image")->Arg(256)->Arg(512)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
