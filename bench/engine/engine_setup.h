// Fixed during a session (the performance harness).
// Models, weights and inputs for the engine benchmarks: one weight set per process (seeded
// random, or a checkpoint given with --weights, whose sha256 the shared main checks against
// --weights-sha256 and records before any benchmark runs: bench/support/bench_support.h), a model
// per image size built on demand, and fresh random inputs for every iteration.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/dit_model.h"
#include "model/vae.h"

namespace dit::bench {

// The seed of the random weights every GPU suite uses when no checkpoint is given (the same
// as torch_reference.py's, though the generators differ: timing does not depend on values).
constexpr uint64_t kBenchWeightsSeed = 20261129;

// The engine switches of a benchmark process, from its environment (DIT_CUDA_GRAPHS=0,
// DIT_VAE_FUSED_BIAS=0, DIT_GEMM_PLAN=off|FILE: model/engine_options.h; and DIT_ATTENTION=FORM,
// the DiT's attention as one kernel, flash, tiled or naive, instead of the engine's choice, which
// make_model refuses where the precision or head size lacks it), so that one build can time both
// sides of a switch (tools/gpu-host/ab.sh --env-b DIT_ATTENTION=flash: the kernel against cuDNN's
// fused attention where the engine picks it). The performance gate gives no DIT_* variable to a
// lane's benchmark processes.
EngineOptions environment_engine_options();

struct EngineChoice {
  std::string model = "DiT-XL/2";
  std::string weights_path;  // empty: DitWeights::random(config, weights_seed)
  uint64_t weights_seed = kBenchWeightsSeed;
  Backend backend = Backend::cuda;
  Precision precision = Precision::fp16;
  EngineOptions engine = environment_engine_options();
};

// DiT weights for `config`. A checkpoint is loaded for the image size in its metadata (256 when
// it names none) and its pos_embed replaced by the fixed table of `config`'s grid, so that one
// checkpoint serves 256 and 512 (the table is a function of the grid, not a trained weight).
DitWeights bench_weights(const EngineChoice& choice, const ModelConfig& config);

// Keeps one model alive at a time (a model per image size would hold two weight copies and
// distort the memory counters); building another size releases the previous one first.
class ModelCache {
 public:
  explicit ModelCache(EngineChoice choice) : choice_(std::move(choice)) {}
  DitModel& get(int image_size);
  const EngineChoice& choice() const { return choice_; }

 private:
  EngineChoice choice_;
  int image_size_ = 0;
  std::unique_ptr<DitModel> model_;
};

struct ForwardInputs {
  Tensor x;                // [B, C, S, S] from N(0, 1)
  std::vector<int64_t> t;  // [B] in [0, 1000)
  std::vector<int64_t> y;  // [B] in [0, num_classes], the null class included
};
ForwardInputs random_forward_inputs(const ModelConfig& config, int batch, uint64_t seed);

// The SD VAE decoder with seeded random weights (the engine's own generator).
std::unique_ptr<VaeDecoder> bench_vae(Backend backend, Precision precision, uint64_t seed = kBenchWeightsSeed,
                                      const EngineOptions& options = environment_engine_options());

}  // namespace dit::bench
