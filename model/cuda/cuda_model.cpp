// The CUDA DiT (model/cuda/cuda_model.h). Storage: the conditioning and the modulations are
// float32, and so is the residual stream except at fp16, where it is stored in fp16 (updated,
// normalised and modulated in float32 registers, rounded once a launch when it is stored); GEMM
// operands (weights, LayerNorm outputs, qkv, attention output, MLP hidden) and the two branch
// outputs that feed the residual (attention proj, fc2) are in the compute dtype (float32 for
// fp32/tf32, else fp16/bf16), always with float32 accumulation; the gated residual adds a 16-bit
// branch into the stream in float32 arithmetic. The timestep MLP, the
// patch embedding and the label table stay float32 at every precision: they are 0.3% of the
// weights and every modulation of the network derives from them.
//
// Restructurings (exact up to float32 rounding): the adaLN layers of all blocks and of the
// final layer are one concatenated [depth*6D + 2D, D] GEMM, run once per forward pass or, in
// sample(), once per chunk of steps for all of the chunk's conditionings (the weights are read
// once per chunk instead of once per step); each gated residual is fused with the LayerNorm
// that follows it; the forward pass of a batch size is captured once as a CUDA Graph and
// replayed (EngineOptions::cuda_graphs false runs it eagerly instead), in forward() and forward_with_cfg()
// with the conditioning and the adaLN GEMM inside it; in sample() one graph holds a whole step
// (the forward pass, then cuda::loop_step: guidance, noise, the update, the next step's inputs),
// replayed for every step, its per-step values read from a table on the device. Running the
// adaLN GEMM in column groups on a second stream beside the first blocks measured no faster on
// an H200 (1.71 against 1.70 ms at 256 batch 2, 5.07 against 5.09 at 512): the blocks' GEMMs
// leave it no room.
#include "model/cuda/cuda_model.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/attention_flash.h"
#include "kernels/attention_tiled.h"
#include "kernels/class_embed.h"
#include "kernels/cuda_check.h"
#include "kernels/guidance.h"
#include "kernels/noise.h"
#include "kernels/patch_embed.h"
#include "kernels/random_normal.h"
#include "kernels/residual_layernorm.h"
#include "kernels/sampler_step.h"
#include "kernels/timestep_embed.h"
#include "kernels/unpatchify.h"
#include "model/cuda/checkpoint_upload.h"
#include "model/cuda/cublaslt_gemm.h"
#include "model/cuda/cuda_graph.h"
#include "model/cuda/cudnn_attention.h"
#include "model/cuda/device_arena.h"
#include "core/safetensors.h"
#include "model/schedule.h"

namespace dit {
namespace {

using cuda::DeviceDtype;
using cuda::GemmArgs;
using cuda::GemmCompute;
using cuda::GemmEpilogue;

constexpr int kFrequencyDim = 256;  // TimestepEmbedder.frequency_embedding_size
constexpr float kMaxPeriod = 10000.0f;
constexpr int kGuidedChannels = 3;  // upstream guides epsilon channels 0-2 only
constexpr float kLayerNormEps = 1e-6f;
// Device memory for the modulations of a chunk of sampling steps: at batch 2 of DiT-XL/2 that is
// about 40 steps per adaLN GEMM.
constexpr size_t kModulationChunkBytes = size_t{64} << 20;

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// A Linear layer on the device: weight [out, in] in `weight_dtype`, bias [out] in the dtype of
// the GEMM's output.
struct DeviceLinear {
  const void* weight = nullptr;
  const void* bias = nullptr;
  int out = 0, in = 0;
};

struct DeviceBlock {
  DeviceLinear qkv, proj, fc1, fc2;
};

// Activation buffers for `rows` batch rows, `steps` sampling steps and `conditionings` rows of
// conditioning at once (a chunk of steps times the rows), carved from one arena.
struct Activations {
  int rows = 0, steps = 0, conditionings = 0;
  float* x_in = nullptr;              // [rows, C, S, S] model input
  int64_t* labels = nullptr;          // [steps, rows]; forward() uses row block 0
  int64_t* timesteps = nullptr;       // [steps, rows]; forward() uses row block 0
  float* frequencies = nullptr;       // [conditionings, 256]
  float* t_hidden = nullptr;          // [conditionings, D]
  float* t_emb = nullptr;             // [conditionings, D]
  float* conditioning = nullptr;      // [conditionings, D] c = t_emb + y_emb
  void* silu_c = nullptr;             // [conditionings, D] compute dtype
  float* modulation_chunk = nullptr;  // [conditionings, NM] every adaLN output of a chunk of steps
  float* modulation = nullptr;        // [rows, NM] the forward pass's: per block shift, scale, gate
                                      // (msa), shift, scale, gate (mlp); then final shift, scale
  float* residual = nullptr;          // [rows, T, D] the residual stream h (fp16 in its first half at fp16)
  void* normed = nullptr;             // [rows, T, D] compute dtype, LN + modulation
  void* qkv = nullptr;                // [rows, T, 3, H, hd] compute dtype
  void* attention = nullptr;          // [rows, T, H, hd] compute dtype
  void* branch = nullptr;             // [rows, T, D] attention-proj / fc2 output, compute dtype
  void* mlp_hidden = nullptr;         // [rows, T, 4D] compute dtype
  float* final_tokens = nullptr;      // [rows, T, p*p*out_channels]
  // Copies of the patch embedding's weights (read by every forward pass), here so that the L2
  // window of keep_activations_in_l2 covers them: in the weight arena they are evicted by the
  // block weights streaming through each pass.
  float* pos_embed = nullptr;            // [T, D]
  float* patch_weight = nullptr;         // [C p p, D]
  float* patch_bias = nullptr;           // [D]
  float* out = nullptr;                  // [rows, out_channels, S, S]
  float* x_state = nullptr;              // [rows, C, S, S] the sampler's latents (the first images rows)
  uint64_t* seeds = nullptr;             // [rows] one per image
  uint32_t* initial_streams = nullptr;   // [rows] all 0: x_T is each image's stream-0 noise
  cuda::LoopStep* loop_steps = nullptr;  // [steps] sample()'s step table
  int* loop_step = nullptr;              // [1] the table entry the next cuda::loop_step applies
  unsigned* loop_blocks_done = nullptr;  // [1] cuda::loop_step's count of finished blocks
};

// Where a model's weights come from: host tensors (a checkpoint, or DitWeights::random), or
// seeded random weights made on the device in the compute dtype (the same bits: the kernel and
// DitWeights::random share kernels/random_normal.h, and the device rounds to 16 bits as
// core/half.h does), which skips making, converting and copying 2.7 GB on the host.
struct WeightSource {
  const DitWeights* host = nullptr;  // null: `checkpoint`, or else `random` on the device
  RandomDitWeights random;
  const DitCheckpoint* checkpoint = nullptr;  // streamed from its mapping (CheckpointUpload)
};

class CudaDitModel final : public DitModel {
 public:
  CudaDitModel(const ModelConfig& config, const WeightSource& weights, Precision precision,
               const EngineOptions& options);
  ~CudaDitModel() override;

  const ModelConfig& config() const override { return config_; }
  Backend backend() const override { return Backend::cuda; }
  Precision precision() const override { return precision_; }

  Tensor forward(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y) override;
  Tensor forward_with_cfg(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y,
                          float cfg_scale) override;
  Tensor sample(const SampleRequest& request, const ProgressFn& progress) override;

 private:
  void upload_weights(const WeightSource& weights);
  int modulation_width() const { return config_.depth * 6 * config_.hidden_size + 2 * config_.hidden_size; }
  int chunk_steps(int rows, int steps) const;
  template <typename Alloc>
  Activations carve_activations(Alloc& alloc, int rows, int steps, int conditionings) const;
  void ensure_capacity(int rows, int steps);
  // Marks what a sampling step reads and writes (x_in to MLP hidden: the step table, the patch
  // embedding's weights and the activations, 16.5 MB for DiT-XL/2 at 256 batch 2) as persisting
  // in L2 for stream_'s kernels when they fit in the part of L2 the device
  // can set aside (cudaDevAttrMaxPersistingL2CacheSize: most of an H200's 60 MB, part of an
  // RTX A5500's 6 MB), so the weights streaming through each block do not evict them; a larger
  // batch takes no window.
  void keep_activations_in_l2();
  void release_graph();
  void check_inputs(const char* op, const Tensor& x, size_t timesteps, std::span<const int64_t> y) const;
  void upload(void* device, const void* host, size_t bytes);
  void download(void* host, const void* device, size_t bytes);
  // timesteps, labels [M] -> modulation_out [M, NM]: the conditioning and every adaLN layer.
  void compute_modulation(int M, const int64_t* timesteps, const int64_t* labels, float* modulation_out);
  // x_in and modulation [rows] -> out; everything on stream_. With `with_modulation` the pass
  // first computes the modulation from timesteps and labels [rows].
  // out_tokens: leave the final layer's tokens in act_.final_tokens (sample()'s loop_step reads
  // them there) instead of unpatchifying them into act_.out.
  void run_forward(int rows, bool with_modulation, bool out_tokens = false);
  struct CapturedGraph {
    cudaGraphExec_t exec = nullptr;
    int rows = 0, images = 0;  // what it was captured for
  };
  // `run` replayed from `graph` when that was captured for (rows, images); else run eagerly, then
  // captured into `graph` (`what` names it in the warning when capture fails).
  void run_graphed(CapturedGraph& graph, int rows, int images, const std::function<void()>& run, const char* what);
  void linear(const DeviceLinear& layer, const void* in, DeviceDtype in_dtype, void* out, DeviceDtype out_dtype, int M,
              GemmEpilogue epilogue);
  void mlp_up(const DeviceLinear& layer, int M);
  // qkv -> attention output in the form EngineOptions::attention chose ("" the kernels' own).
  void attend(int rows, int T, int H, int hd);

  ModelConfig config_;
  Precision precision_;
  DeviceDtype compute_;       // GEMM operand dtype of the transformer layers
  GemmCompute gemm_compute_;  // tf32 only for Precision::tf32
  bool gelu_epilogue_;        // fused GELU for fp16/bf16; float32 paths use the exact kernel
  cudaStream_t stream_ = nullptr;
  cuda::DeviceArena weight_arena_;
  cuda::DeviceArena activation_arena_;
  std::unique_ptr<cuda::GemmRunner> gemm_;
  bool use_graphs_;
  std::string gemm_plan_setting_;                          // EngineOptions::gemm_plan
  std::string attention_form_;                             // EngineOptions::attention, checked against the kernels
  std::unique_ptr<cuda::CudnnAttention> cudnn_attention_;  // the "" form's at long sequences (attend)
  CapturedGraph forward_graph_;  // forward()'s and forward_with_cfg()'s pass, adaLN GEMM included
  CapturedGraph step_graph_;     // one step of sample(): the forward pass, then cuda::loop_step

  const float* patch_weight_ = nullptr;  // [C p p, D]: transposed (cpu::transpose_patch_weight)
  const float* patch_bias_ = nullptr;    // [D]
  const float* pos_embed_ = nullptr;     // [T, D]
  const float* label_table_ = nullptr;   // [num_classes + 1, D]
  DeviceLinear time_mlp0_, time_mlp2_, final_linear_;
  DeviceLinear adaln_all_;  // [depth*6D + 2D, D]: blocks' adaLN layers, then the final layer's
  std::vector<DeviceBlock> blocks_;
  Activations act_;
};

DeviceDtype compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::fp16: return DeviceDtype::f16;
    case Precision::bf16: return DeviceDtype::bf16;
    default: return DeviceDtype::f32;
  }
}

CudaDitModel::CudaDitModel(const ModelConfig& config, const WeightSource& weights, Precision precision,
                           const EngineOptions& options)
    : config_(config),
      precision_(precision),
      compute_(compute_dtype(precision)),
      gemm_compute_(precision == Precision::tf32 ? GemmCompute::tf32 : GemmCompute::fp32),
      gelu_epilogue_(precision == Precision::fp16 || precision == Precision::bf16),
      use_graphs_(options.cuda_graphs),
      gemm_plan_setting_(options.gemm_plan),
      attention_form_(options.attention) {
  config_.validate();
  check_engine_options(Backend::cuda, precision_, config_.head_dim(), options);
  // The table callers choose from (model/engine_options.h) must be the kernels' own.
  const std::vector<std::string> forms = cuda_attention_forms(precision_, config_.head_dim());
  const auto listed = [&](const char* form) { return std::find(forms.begin(), forms.end(), form) != forms.end(); };
  if (listed("flash") != cuda::attention_flash_supported(compute_, config_.head_dim()) ||
      listed("tiled") != cuda::attention_tiled_supported(compute_, config_.head_dim()))
    throw Error(ErrorKind::invalid_argument,
                "cuda_attention_forms (model/engine_options.cpp) disagrees with the "
                "kernels' attention_flash_supported / attention_tiled_supported");
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0)
    throw Error(ErrorKind::device, std::string("the cuda backend needs a GPU: ") +
                                       (status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device"));
  if (weights.host) {
    for (const auto& [name, shape] : expected_weight_shapes(config_)) {
      const Tensor& tensor = weights.host->at(name);
      if (tensor.shape != shape || static_cast<int64_t>(tensor.data.size()) != tensor.numel())
        throw Error(ErrorKind::invalid_argument, "weight '" + name + "' has shape " + shape_string(tensor.shape) +
                                                     ", " + config_.name + " expects " + shape_string(shape));
    }
  } else if (!weights.checkpoint) {  // a checkpoint's shapes were checked when it was opened
    check_random_weights(weights.random);
  }
  DIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  NvtxRange range("cuda_model.load");
  upload_weights(weights);
  ensure_capacity(2, 1);
}

CudaDitModel::~CudaDitModel() {
  // destruction cannot report: statuses are dropped; the arenas are freed after the stream drains
  if (stream_) cudaStreamSynchronize(stream_);
  release_graph();
  if (stream_) cudaStreamDestroy(stream_);
}

// Weights: name -> dtype; sized in one pass, then carved and filled. From host tensors, 16-bit
// weights are converted on the host by every core into one reused staging buffer (one tensor at
// a time), and the adaLN layers go straight to their place in the concatenated device weight, so
// loading DiT-XL/2 makes no host copy of the 2.7 GB it reads. Seeded random weights are drawn on
// the device straight into their place and dtype (the two small tensors the kernels read in
// another layout or that are no draw, the patch weight and pos_embed, are made on the host). The
// load is what every benchmark and quality process pays before its first image.
void CudaDitModel::upload_weights(const WeightSource& weights) {
  const DeviceDtype f32 = DeviceDtype::f32;
  const std::map<std::string, std::vector<int64_t>> shapes = expected_weight_shapes(config_);
  const auto numel = [&](const std::string& name) {
    size_t n = 1;
    for (const int64_t extent : shapes.at(name)) n *= static_cast<size_t>(extent);
    return n;
  };
  std::vector<std::pair<std::string, DeviceDtype>> specs = {{"x_embedder.proj.weight", f32},
                                                            {"x_embedder.proj.bias", f32},
                                                            {"pos_embed", f32},
                                                            {"t_embedder.mlp.0.weight", f32},
                                                            {"t_embedder.mlp.0.bias", f32},
                                                            {"t_embedder.mlp.2.weight", f32},
                                                            {"t_embedder.mlp.2.bias", f32},
                                                            {"y_embedder.embedding_table.weight", f32}};
  auto add_linear = [&](const std::string& prefix, DeviceDtype bias_dtype) {
    specs.emplace_back(prefix + ".weight", compute_);
    specs.emplace_back(prefix + ".bias", bias_dtype);
  };
  for (int i = 0; i < config_.depth; ++i) {
    const std::string block = "blocks." + std::to_string(i) + ".";
    add_linear(block + "attn.qkv", compute_);
    add_linear(block + "attn.proj", compute_);
    add_linear(block + "mlp.fc1", compute_);
    add_linear(block + "mlp.fc2", compute_);
  }
  add_linear("final_layer.linear", f32);

  // Every adaLN layer in one [depth*6D + 2D, D] weight and one bias, in block order, final last.
  std::vector<std::string> adaln_weights, adaln_biases;
  size_t adaln_weight_count = 0, adaln_bias_count = 0;
  for (int i = 0; i <= config_.depth; ++i) {
    const std::string prefix =
        i < config_.depth ? "blocks." + std::to_string(i) + ".adaLN_modulation.1" : "final_layer.adaLN_modulation.1";
    adaln_weights.push_back(prefix + ".weight");
    adaln_biases.push_back(prefix + ".bias");
    adaln_weight_count += numel(adaln_weights.back());
    adaln_bias_count += numel(adaln_biases.back());
  }
  const int D = config_.hidden_size;
  if (adaln_bias_count != static_cast<size_t>(modulation_width()) ||
      adaln_weight_count != adaln_bias_count * static_cast<size_t>(D))
    throw Error(ErrorKind::invalid_argument, "adaLN weights do not add up to [depth*6D + 2D, D]");

  cuda::ArenaSizer sizer;
  sizer.take(cuda::GemmRunner::kWorkspaceBytes);
  for (const auto& [name, dtype] : specs) sizer.take(numel(name) * cuda::dtype_bytes(dtype));
  sizer.take(adaln_weight_count * cuda::dtype_bytes(compute_));
  sizer.take(adaln_bias_count * sizeof(float));
  weight_arena_ = cuda::DeviceArena(sizer.bytes());
  gemm_ = std::make_unique<cuda::GemmRunner>(weight_arena_.take(cuda::GemmRunner::kWorkspaceBytes),
                                             cuda::GemmRunner::plan_for_current_device(gemm_plan_setting_),
                                             gemm_candidate_setting(gemm_plan_setting_));
  // The type combinations of linear()'s GEMMs (the timestep MLP in float32, the adaLN and final
  // layers out to float32, the blocks in the compute type), readied by cuBLASLt beside the upload.
  std::vector<cuda::GemmTypes> gemm_types{{f32, f32, gemm_compute_}};
  if (compute_ != f32) {
    gemm_types.push_back({compute_, f32, GemmCompute::fp32});
    gemm_types.push_back({compute_, compute_, GemmCompute::fp32});
  }
  gemm_->prepare(gemm_types);

  std::vector<uint16_t> staging;  // 16-bit images of one tensor at a time
  auto upload_values = [&](void* target, const std::vector<float>& values, DeviceDtype dtype) {
    const void* source = values.data();
    if (dtype != DeviceDtype::f32) {
      staging.resize(values.size());
      if (dtype == DeviceDtype::f16)
        floats_to_f16_bits(values.data(), staging.data(), values.size());
      else
        floats_to_bf16_bits(values.data(), staging.data(), values.size());
      source = staging.data();
    }
    DIT_CUDA_CHECK(cudaMemcpy(target, source, values.size() * cuda::dtype_bytes(dtype), cudaMemcpyHostToDevice));
  };
  // One random tensor on the host, as DitWeights::random makes it.
  auto random_on_host = [&](const std::string& name) {
    if (name == "pos_embed") return sincos_pos_embed(config_.hidden_size, config_.grid()).data;
    std::vector<float> values(numel(name));
    cpu::random_normal(weights.random.seed, random_weight_stream(name), kRandomWeightsTag, weights.random.std,
                       values.data(), static_cast<int64_t>(values.size()));
    return values;
  };
  std::optional<cuda::CheckpointUpload> streamed;
  if (weights.checkpoint) streamed.emplace(*weights.checkpoint, stream_);
  auto host_values = [&](const std::string& name) {
    if (weights.host) return weights.host->at(name).data;
    if (!weights.checkpoint) return random_on_host(name);
    std::vector<float> values(numel(name));
    weights.checkpoint->read(name, 0, values.size(), values.data());
    return values;
  };
  auto fill = [&](void* target, const std::string& name, DeviceDtype dtype) {
    if (name == "x_embedder.proj.weight") {  // the CUDA kernels' [C p p, D] layout
      upload_values(target, cpu::transpose_patch_weight(host_values(name), D), dtype);
    } else if (streamed) {
      streamed->add(target, name, numel(name), dtype);  // converted and copied by run() below
    } else if (weights.host) {
      upload_values(target, weights.host->at(name).data, dtype);
    } else if (name == "pos_embed") {
      upload_values(target, random_on_host(name), dtype);
    } else {
      cuda::random_normal(weights.random.seed, random_weight_stream(name), kRandomWeightsTag, weights.random.std,
                          target, dtype, static_cast<int64_t>(numel(name)), stream_);
    }
  };
  auto fill_concatenated = [&](const std::vector<std::string>& parts, size_t count, DeviceDtype dtype) {
    auto* start = static_cast<std::byte*>(weight_arena_.take(count * cuda::dtype_bytes(dtype)));
    std::byte* target = start;
    for (const std::string& part : parts) {
      fill(target, part, dtype);
      target += numel(part) * cuda::dtype_bytes(dtype);
    }
    return static_cast<const void*>(start);
  };
  std::map<std::string, const void*> device;
  for (const auto& [name, dtype] : specs) {
    void* target = weight_arena_.take(numel(name) * cuda::dtype_bytes(dtype));
    fill(target, name, dtype);
    device[name] = target;
  }
  adaln_all_.weight = fill_concatenated(adaln_weights, adaln_weight_count, compute_);
  adaln_all_.bias = fill_concatenated(adaln_biases, adaln_bias_count, DeviceDtype::f32);
  if (streamed) streamed->run();
  adaln_all_.out = modulation_width();
  adaln_all_.in = D;
  DIT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the device draws, before any other stream reads

  auto layer = [&](const std::string& prefix) {
    const std::vector<int64_t>& shape = shapes.at(prefix + ".weight");
    return DeviceLinear{device.at(prefix + ".weight"), device.at(prefix + ".bias"), static_cast<int>(shape[0]),
                        static_cast<int>(shape[1])};
  };
  patch_weight_ = static_cast<const float*>(device.at("x_embedder.proj.weight"));
  patch_bias_ = static_cast<const float*>(device.at("x_embedder.proj.bias"));
  pos_embed_ = static_cast<const float*>(device.at("pos_embed"));
  label_table_ = static_cast<const float*>(device.at("y_embedder.embedding_table.weight"));
  time_mlp0_ = layer("t_embedder.mlp.0");
  time_mlp2_ = layer("t_embedder.mlp.2");
  blocks_.clear();
  for (int i = 0; i < config_.depth; ++i) {
    const std::string block = "blocks." + std::to_string(i) + ".";
    blocks_.push_back(DeviceBlock{layer(block + "attn.qkv"), layer(block + "attn.proj"), layer(block + "mlp.fc1"),
                                  layer(block + "mlp.fc2")});
  }
  final_linear_ = layer("final_layer.linear");
}

int CudaDitModel::chunk_steps(int rows, int steps) const {
  const size_t per_step = static_cast<size_t>(rows) * modulation_width() * sizeof(float);
  return static_cast<int>(std::clamp<size_t>(kModulationChunkBytes / per_step, 1, static_cast<size_t>(steps)));
}

template <typename Alloc>
Activations CudaDitModel::carve_activations(Alloc& alloc, int rows, int steps, int conditionings) const {
  const ModelConfig& c = config_;
  const size_t R = rows, T = c.tokens(), D = c.hidden_size, S2 = static_cast<size_t>(c.input_size) * c.input_size;
  const size_t C_rows = conditionings, NM = modulation_width();
  const size_t compute_bytes = cuda::dtype_bytes(compute_);
  const size_t out_dim = static_cast<size_t>(c.patch_size) * c.patch_size * c.out_channels();
  Activations a;
  a.rows = rows;
  a.steps = steps;
  a.conditionings = conditionings;
  // First what no step reads again: the conditioning inputs and intermediates, the chunk of
  // modulations (read once per step, streamed), forward()'s output.
  a.labels = alloc.template take<int64_t>(R * steps);
  a.timesteps = alloc.template take<int64_t>(R * steps);
  a.frequencies = alloc.template take<float>(C_rows * kFrequencyDim);
  a.t_hidden = alloc.template take<float>(C_rows * D);
  a.t_emb = alloc.template take<float>(C_rows * D);
  a.conditioning = alloc.template take<float>(C_rows * D);
  a.silu_c = alloc.take(C_rows * D * compute_bytes);
  a.modulation_chunk = alloc.template take<float>(C_rows * NM);
  a.out = alloc.template take<float>(R * c.out_channels() * S2);
  a.initial_streams = alloc.template take<uint32_t>(R);
  // Then, contiguous from x_in to mlp_hidden (keep_activations_in_l2's window), everything a
  // sampling step reads and writes.
  a.x_in = alloc.template take<float>(R * c.in_channels * S2);
  a.x_state = alloc.template take<float>(R * c.in_channels * S2);
  a.seeds = alloc.template take<uint64_t>(R);
  a.loop_steps = alloc.template take<cuda::LoopStep>(static_cast<size_t>(steps));
  a.loop_step = alloc.template take<int>(1);
  a.loop_blocks_done = alloc.template take<unsigned>(1);
  a.final_tokens = alloc.template take<float>(R * T * out_dim);
  a.pos_embed = alloc.template take<float>(T * D);
  a.patch_weight = alloc.template take<float>(static_cast<size_t>(c.in_channels) * c.patch_size * c.patch_size * D);
  a.patch_bias = alloc.template take<float>(D);
  a.modulation = alloc.template take<float>(R * NM);
  a.residual = alloc.template take<float>(R * T * D);
  a.normed = alloc.take(R * T * D * compute_bytes);
  a.qkv = alloc.take(R * T * 3 * D * compute_bytes);
  a.attention = alloc.take(R * T * D * compute_bytes);
  a.branch = alloc.take(R * T * D * compute_bytes);
  a.mlp_hidden = alloc.take(R * T * static_cast<size_t>(c.mlp_hidden()) * compute_bytes);
  return a;
}

// The activation arena is sized for the largest batch and step count seen so far: it is
// (re)allocated only here, at the start of a call, never inside the step loop. The captured
// graph points into it, so it goes with it.
void CudaDitModel::ensure_capacity(int rows, int steps) {
  const int conditionings = rows * chunk_steps(rows, steps);
  if (rows <= act_.rows && steps <= act_.steps && conditionings <= act_.conditionings) return;
  rows = std::max(rows, act_.rows);
  steps = std::max(steps, act_.steps);
  const int new_conditionings = std::max(conditionings, act_.conditionings);
  DIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  release_graph();
  cuda::ArenaSizer sizer;
  carve_activations(sizer, rows, steps, new_conditionings);
  activation_arena_ = cuda::DeviceArena();  // free the old one first
  activation_arena_ = cuda::DeviceArena(sizer.bytes());
  act_ = carve_activations(activation_arena_, rows, steps, new_conditionings);
  const ModelConfig& c = config_;
  const size_t D = c.hidden_size, patch = static_cast<size_t>(c.in_channels) * c.patch_size * c.patch_size;
  DIT_CUDA_CHECK(
      cudaMemcpyAsync(act_.pos_embed, pos_embed_, c.tokens() * D * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
  DIT_CUDA_CHECK(
      cudaMemcpyAsync(act_.patch_weight, patch_weight_, patch * D * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
  DIT_CUDA_CHECK(cudaMemcpyAsync(act_.patch_bias, patch_bias_, D * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
  keep_activations_in_l2();
}

void CudaDitModel::keep_activations_in_l2() {
  int device = 0, max_persisting = 0, max_window = 0;
  DIT_CUDA_CHECK(cudaGetDevice(&device));
  DIT_CUDA_CHECK(cudaDeviceGetAttribute(&max_persisting, cudaDevAttrMaxPersistingL2CacheSize, device));
  DIT_CUDA_CHECK(cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, device));
  if (max_persisting <= 0 || max_window <= 0) return;
  const size_t T = config_.tokens(), mlp = config_.mlp_hidden();
  const auto* begin = reinterpret_cast<const std::byte*>(act_.x_in);
  const auto* end = static_cast<const std::byte*>(act_.mlp_hidden) +
                    static_cast<size_t>(act_.rows) * T * mlp * cuda::dtype_bytes(compute_);
  const size_t window = static_cast<size_t>(end - begin);
  // Only a window that fits whole: a partial one (hitRatio below 1) measured slower on an H200
  // (batch 64 at 256: 40.8 ms against 29.6 without; 512 batch 2: 5.25 against 5.07), while a
  // whole one helped (256 batch 2: 1.69 against 1.71 ms; one image 406 against 411 ms).
  const bool fits = window <= static_cast<size_t>(max_persisting) && window <= static_cast<size_t>(max_window);
  DIT_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, fits ? window : 0));
  cudaStreamAttrValue attribute{};
  attribute.accessPolicyWindow.base_ptr = fits ? const_cast<std::byte*>(begin) : nullptr;
  attribute.accessPolicyWindow.num_bytes = fits ? window : 0;
  attribute.accessPolicyWindow.hitRatio = fits ? 1.0f : 0.0f;
  attribute.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  attribute.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  DIT_CUDA_CHECK(cudaStreamSetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &attribute));
  if (!fits) DIT_CUDA_CHECK(cudaCtxResetPersistingL2Cache());  // lines left persisting by a smaller batch
}

void CudaDitModel::release_graph() {
  for (CapturedGraph* graph : {&forward_graph_, &step_graph_}) {
    if (graph->exec) cudaGraphExecDestroy(graph->exec);  // cannot fail for a valid graph
    *graph = CapturedGraph{};
  }
}

void CudaDitModel::upload(void* device, const void* host, size_t bytes) {
  DIT_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_));
}

void CudaDitModel::download(void* host, const void* device, size_t bytes) {
  DIT_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_));
  DIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaDitModel::linear(const DeviceLinear& layer, const void* in, DeviceDtype in_dtype, void* out,
                          DeviceDtype out_dtype, int M, GemmEpilogue epilogue) {
  GemmArgs args;
  args.in = in;
  args.weight = layer.weight;
  args.bias = layer.bias;
  args.out = out;
  args.M = M;
  args.N = layer.out;
  args.K = layer.in;
  args.operands = in_dtype;
  args.output = out_dtype;
  args.compute = in_dtype == DeviceDtype::f32 ? gemm_compute_ : GemmCompute::fp32;
  args.epilogue = epilogue;
  gemm_->linear(args, stream_);
}

// fc1 + GELU: in the GEMM's epilogue for fp16/bf16 (cuBLASLt's tanh GELU); the float32 paths,
// whose tolerance is tighter than that epilogue's, take the bias epilogue and the exact GELU kernel.
void CudaDitModel::mlp_up(const DeviceLinear& layer, int M) {
  if (gelu_epilogue_) {
    linear(layer, act_.normed, compute_, act_.mlp_hidden, compute_, M, GemmEpilogue::gelu_bias);
    return;
  }
  linear(layer, act_.normed, compute_, act_.mlp_hidden, compute_, M, GemmEpilogue::bias);
  cuda::gelu_tanh(act_.mlp_hidden, act_.mlp_hidden, compute_, static_cast<int64_t>(M) * layer.out, stream_);
}

void CudaDitModel::compute_modulation(int M, const int64_t* timesteps, const int64_t* labels, float* modulation_out) {
  NvtxRange range("conditioning");
  const ModelConfig& c = config_;
  const int D = c.hidden_size;
  const DeviceDtype f32 = DeviceDtype::f32;
  cuda::timestep_embed(timesteps, act_.frequencies, M, kFrequencyDim, kMaxPeriod, stream_);
  linear(time_mlp0_, act_.frequencies, f32, act_.t_hidden, f32, M, GemmEpilogue::bias);
  cuda::silu(act_.t_hidden, act_.t_hidden, f32, static_cast<int64_t>(M) * D, stream_);
  linear(time_mlp2_, act_.t_hidden, f32, act_.t_emb, f32, M, GemmEpilogue::bias);
  cuda::class_embed_add(act_.t_emb, label_table_, labels, act_.conditioning, M, D, c.num_classes + 1, nullptr, stream_);
  cuda::silu(act_.conditioning, act_.silu_c, compute_, static_cast<int64_t>(M) * D, stream_);
  linear(adaln_all_, act_.silu_c, compute_, modulation_out, f32, M, GemmEpilogue::bias);
}

void CudaDitModel::run_forward(int rows, bool with_modulation, bool out_tokens) {
  NvtxRange range("forward");
  if (with_modulation) compute_modulation(rows, act_.timesteps, act_.labels, act_.modulation);
  const ModelConfig& c = config_;
  const int D = c.hidden_size, T = c.tokens(), H = c.num_heads, hd = c.head_dim(), p = c.patch_size;
  const int tokens = rows * T, NM = modulation_width();
  const DeviceDtype f32 = DeviceDtype::f32;
  // The residual stream's storage: fp16 at fp16 (half the bytes of the residual launches' largest
  // operand), float32 otherwise (bf16's 8-bit mantissa is too coarse for a stream that
  // accumulates 56 updates).
  const DeviceDtype stream_dtype = compute_ == DeviceDtype::f16 ? DeviceDtype::f16 : f32;
  // block i's adaLN output: shift, scale, gate (attention), shift, scale, gate (MLP); row stride NM
  auto chunk_of = [&](int block, int part) { return act_.modulation + static_cast<size_t>(block) * 6 * D + part * D; };
  const float* final_shift = act_.modulation + static_cast<size_t>(c.depth) * 6 * D;
  const float* final_scale = final_shift + D;
  const bool pair_residuals = cuda::residual_layernorm_pair_supported(D);

  cuda::patch_embed_layernorm_modulate(act_.x_in, act_.patch_weight, act_.patch_bias, act_.pos_embed,
                                       static_cast<void*>(act_.residual), stream_dtype, chunk_of(0, 0), chunk_of(0, 1),
                                       NM, act_.normed, compute_, rows, c.in_channels, c.input_size, p, D,
                                       kLayerNormEps, stream_);
  for (int i = 0; i < c.depth; ++i) {
    NvtxRange block_range("block");
    const DeviceBlock& block = blocks_[i];
    // normed holds LN(h) modulated for this block's attention
    linear(block.qkv, act_.normed, compute_, act_.qkv, compute_, tokens, GemmEpilogue::bias);
    attend(rows, T, H, hd);
    linear(block.proj, act_.attention, compute_, act_.branch, compute_, tokens, GemmEpilogue::bias);
    const bool last = i + 1 == c.depth;
    const float* next_shift = last ? final_shift : chunk_of(i + 1, 0);
    const float* next_scale = last ? final_scale : chunk_of(i + 1, 1);
    if (pair_residuals) {
      // The stream is written once a block: the attention residual goes into the MLP's LayerNorm
      // only, and is added again, in the same order, with the MLP's residual. fc2 writes into the
      // attention buffer, free once proj has read it; proj's output stays in branch until then.
      cuda::residual_layernorm_modulate_pair(act_.residual, stream_dtype, false, act_.branch, chunk_of(i, 2), nullptr,
                                             nullptr, NM, compute_, chunk_of(i, 3), chunk_of(i, 4), NM, act_.normed,
                                             compute_, rows, T, D, kLayerNormEps, stream_);
      mlp_up(block.fc1, tokens);
      linear(block.fc2, act_.mlp_hidden, compute_, act_.attention, compute_, tokens, GemmEpilogue::bias);
      cuda::residual_layernorm_modulate_pair(act_.residual, stream_dtype, true, act_.branch, chunk_of(i, 2),
                                             act_.attention, chunk_of(i, 5), NM, compute_, next_shift, next_scale, NM,
                                             act_.normed, compute_, rows, T, D, kLayerNormEps, stream_);
      continue;
    }
    cuda::residual_layernorm_modulate(act_.residual, stream_dtype, act_.branch, compute_, chunk_of(i, 2), NM,
                                      chunk_of(i, 3), chunk_of(i, 4), NM, act_.normed, compute_, rows, T, D,
                                      kLayerNormEps, stream_);
    mlp_up(block.fc1, tokens);
    linear(block.fc2, act_.mlp_hidden, compute_, act_.branch, compute_, tokens, GemmEpilogue::bias);
    // the residual of this MLP, then the LayerNorm of the next block's attention (or the final layer)
    cuda::residual_layernorm_modulate(act_.residual, stream_dtype, act_.branch, compute_, chunk_of(i, 5), NM,
                                      next_shift, next_scale, NM, act_.normed, compute_, rows, T, D, kLayerNormEps,
                                      stream_);
  }
  NvtxRange final_range("final_layer");
  linear(final_linear_, act_.normed, compute_, act_.final_tokens, f32, tokens, GemmEpilogue::bias);
  if (!out_tokens) cuda::unpatchify(act_.final_tokens, act_.out, rows, c.grid(), p, c.out_channels(), stream_);
}

// The engine's own choice ("" form): cuDNN's fused attention in fp16 and bf16 where a call's work
// is at least that of DiT-XL/2 at 512 with batch 2 (batch x H x T^2, its query-key pairs; and
// T >= 1024 at any batch), where the build has it and cuDNN has a plan for the shape; the
// kernels' own dispatch (cuda::attention) everywhere else. On an H200 (2026-12-01, PyTorch's SDPA
// with cuDNN 9.19 beside bench_kernels) cuDNN took 33.5 us a call at batch 2, T 1024, against the
// flash kernel's 43.1, and 80 against 102-106 us at batch 64, T 256; it was no faster at T 256
// batch 2 (9.3 against 8.2 in the forward pass). The explicit forms ("flash", "tiled", "naive")
// stay the kernels'.
void CudaDitModel::attend(int rows, int T, int H, int hd) {
  constexpr int kCudnnAttentionTokens = 1024;
  constexpr int64_t kCudnnAttentionPairs = int64_t{2} * 16 * 1024 * 1024;  // 512, batch 2
  if (attention_form_ == "flash")
    cuda::attention_flash(act_.qkv, act_.attention, compute_, rows, T, H, hd, stream_);
  else if (attention_form_ == "tiled")
    cuda::attention_tiled(act_.qkv, act_.attention, compute_, rows, T, H, hd, stream_);
  else if (attention_form_ == "naive")
    cuda::attention_naive(act_.qkv, act_.attention, compute_, rows, T, H, hd, stream_);
  else {
    const bool large = T >= kCudnnAttentionTokens || int64_t{rows} * H * T * T >= kCudnnAttentionPairs;
    if (large && compute_ != DeviceDtype::f32 && cuda::CudnnAttention::available()) {
      // Made on the first such call, which runs eagerly (run_graphed captures a shape after it).
      if (!cudnn_attention_) cudnn_attention_ = std::make_unique<cuda::CudnnAttention>();
      if (cudnn_attention_->run(act_.qkv, act_.attention, compute_, rows, T, H, hd, stream_)) return;
    }
    cuda::attention(act_.qkv, act_.attention, compute_, rows, T, H, hd, stream_);
  }
}

// The first run of a shape goes eagerly (making every GEMM plan, which queries the device); it
// is then captured, and later runs replay the graph: the same kernels with the same arguments,
// so the same bytes. A capture that fails leaves the model eager, with a warning.
void CudaDitModel::run_graphed(CapturedGraph& graph, int rows, int images, const std::function<void()>& run,
                               const char* what) {
  if (use_graphs_ && graph.exec && graph.rows == rows && graph.images == images) {
    DIT_CUDA_CHECK(cudaGraphLaunch(graph.exec, stream_));
    return;
  }
  run();
  if (!use_graphs_) return;
  if (graph.exec) cudaGraphExecDestroy(graph.exec);
  graph = CapturedGraph{};
  try {
    graph.exec = cuda::capture_graph(stream_, run);
    graph.rows = rows;
    graph.images = images;
  } catch (const Error& error) {
    cudaGetLastError();  // clear a non-sticky launch error left by the failed capture
    use_graphs_ = false;
    std::fprintf(stderr, "dit: %s could not be captured as a CUDA Graph; it runs eagerly (%s)\n", what, error.what());
  }
}

void CudaDitModel::check_inputs(const char* op, const Tensor& x, size_t timesteps, std::span<const int64_t> y) const {
  const ModelConfig& c = config_;
  const int64_t B = x.shape.empty() ? 0 : x.dim(0);
  const std::vector<int64_t> expected{B, c.in_channels, c.input_size, c.input_size};
  if (B == 0 || x.shape != expected || static_cast<int64_t>(timesteps) != B || static_cast<int64_t>(y.size()) != B ||
      static_cast<int64_t>(x.data.size()) != x.numel())
    throw Error(ErrorKind::invalid_argument, std::string(op) + ": x " + shape_string(x.shape) + " with " +
                                                 std::to_string(timesteps) + " timesteps and " +
                                                 std::to_string(y.size()) + " labels; " + c.name + " expects [B, " +
                                                 std::to_string(c.in_channels) + ", " + std::to_string(c.input_size) +
                                                 ", " + std::to_string(c.input_size) + "] with B of each");
  if (B > 65535) throw Error(ErrorKind::invalid_argument, std::string(op) + ": batch larger than 65535");
  for (int64_t label : y)
    if (label < 0 || label > c.num_classes)
      throw Error(ErrorKind::invalid_argument, std::string(op) + ": label " + std::to_string(label) +
                                                   " is outside [0, " + std::to_string(c.num_classes) +
                                                   "] (the last is the null class)");
}

Tensor CudaDitModel::forward(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y) {
  check_inputs("forward", x, t.size(), y);
  const int rows = static_cast<int>(x.dim(0));
  ensure_capacity(rows, 1);
  upload(act_.x_in, x.ptr(), x.data.size() * sizeof(float));
  upload(act_.timesteps, t.data(), t.size() * sizeof(int64_t));
  upload(act_.labels, y.data(), y.size() * sizeof(int64_t));
  run_graphed(
      forward_graph_, rows, 0, [&] { run_forward(rows, true); }, "the forward pass");
  Tensor out({rows, config_.out_channels(), config_.input_size, config_.input_size});
  download(out.ptr(), act_.out, out.data.size() * sizeof(float));
  return out;
}

Tensor CudaDitModel::forward_with_cfg(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y,
                                      float cfg_scale) {
  check_inputs("forward_with_cfg", x, t.size(), y);
  const int rows = static_cast<int>(x.dim(0));
  if (rows % 2)
    throw Error(ErrorKind::invalid_argument,
                "forward_with_cfg: the batch must be even (conditional rows, then "
                "unconditional rows), got " +
                    std::to_string(rows));
  ensure_capacity(rows, 1);
  // upstream runs the first half twice: cat([x[:B], x[:B]])
  const size_t half_bytes = x.data.size() / 2 * sizeof(float);
  upload(act_.x_in, x.ptr(), half_bytes);
  upload(reinterpret_cast<std::byte*>(act_.x_in) + half_bytes, x.ptr(), half_bytes);
  upload(act_.timesteps, t.data(), t.size() * sizeof(int64_t));
  upload(act_.labels, y.data(), y.size() * sizeof(int64_t));
  run_graphed(
      forward_graph_, rows, 0, [&] { run_forward(rows, true); }, "the forward pass");
  const int HW = config_.input_size * config_.input_size;
  cuda::guidance_combine(act_.out, rows / 2, config_.out_channels(), HW, cfg_scale,
                         std::min(kGuidedChannels, config_.out_channels()), stream_);
  Tensor out({rows, config_.out_channels(), config_.input_size, config_.input_size});
  download(out.ptr(), act_.out, out.data.size() * sizeof(float));
  return out;
}

// The whole loop of sampler.cpp on the device: x_T and each step's noise from the noise kernel
// (same slots and streams as the host loop), the guided forward, the DDPM/DDIM update.
Tensor CudaDitModel::sample(const SampleRequest& request, const ProgressFn& progress) {
  NvtxRange range("sample");
  const ModelConfig& c = config_;
  validate(request, c.num_classes);
  if (!c.learn_sigma)
    throw Error(ErrorKind::invalid_argument, "sampling needs a learn_sigma model (the variance channels)");
  const DiffusionSchedule schedule = make_schedule(request.steps);
  const bool guided = guidance_enabled(request);
  const int images = static_cast<int>(request.class_labels.size());
  const int rows = guided ? 2 * images : images;
  if (rows > 65535) throw Error(ErrorKind::invalid_argument, "sample: too many images in one request");
  const int steps = schedule.num_steps;
  ensure_capacity(rows, steps);

  const int C = c.in_channels, HW = c.input_size * c.input_size;
  const int64_t per_image = static_cast<int64_t>(C) * HW;
  const size_t image_bytes = static_cast<size_t>(per_image) * sizeof(float);

  const std::vector<int64_t> labels = batch_labels(request, c);
  std::vector<int64_t> step_labels(static_cast<size_t>(steps) * rows);
  for (int i = 0; i < steps; ++i)
    std::copy(labels.begin(), labels.end(), step_labels.begin() + static_cast<size_t>(i) * rows);
  std::vector<uint64_t> seeds(request.seeds.begin(), request.seeds.begin() + images);
  const std::vector<uint32_t> initial_streams(images, 0);
  std::vector<int64_t> timesteps(static_cast<size_t>(steps) * rows);
  for (int i = 0; i < steps; ++i)
    std::fill_n(timesteps.begin() + static_cast<size_t>(i) * rows, rows, schedule.timestep_map[steps - 1 - i]);

  // The step table: what changes from step to step, read by cuda::loop_step on the device, so
  // one captured graph serves every step. Step i's modulations are row block i % chunk of the
  // chunk's; loop_step copies the next step's into place unless they start a new chunk.
  const int chunk = chunk_steps(rows, steps);
  const size_t modulation_row_floats = static_cast<size_t>(rows) * modulation_width();
  std::vector<cuda::LoopStep> table(steps);
  for (int i = 0; i < steps; ++i) {
    cuda::LoopStep& entry = table[i];
    entry.k = step_coefficients(schedule, steps - 1 - i);
    entry.use_ddim = request.sampler == SamplerKind::ddim;
    entry.ddim = ddim_scalars(entry.k, request.eta);
    entry.add_noise = entry.use_ddim ? entry.ddim.add_noise : !entry.k.last_step;
    entry.noise_slot = noise_slot_for_step(i);
    entry.guidance_scale = request.cfg_scale;
    const bool next_in_chunk = i + 1 < steps && (i + 1) % chunk != 0;
    entry.next_modulation = next_in_chunk ? static_cast<int64_t>((i + 1) % chunk * modulation_row_floats) : -1;
  }
  upload(act_.labels, step_labels.data(), step_labels.size() * sizeof(int64_t));
  upload(act_.seeds, seeds.data(), seeds.size() * sizeof(uint64_t));
  upload(act_.initial_streams, initial_streams.data(), initial_streams.size() * sizeof(uint32_t));
  upload(act_.timesteps, timesteps.data(), timesteps.size() * sizeof(int64_t));
  upload(act_.loop_steps, table.data(), table.size() * sizeof(cuda::LoopStep));
  DIT_CUDA_CHECK(cudaMemsetAsync(act_.loop_step, 0, sizeof(int), stream_));
  DIT_CUDA_CHECK(cudaMemsetAsync(act_.loop_blocks_done, 0, sizeof(unsigned), stream_));

  // x_T: each image's slot-0 noise (stream 0); the model sees it twice under guidance, as
  // upstream's cat([z, z]).
  cuda::gaussian_noise_rows(act_.seeds, act_.initial_streams, kNoiseSlotInitial, act_.x_state, images, per_image,
                            stream_);
  for (int half = 0; half < rows / images; ++half)
    DIT_CUDA_CHECK(cudaMemcpyAsync(act_.x_in + static_cast<size_t>(half) * images * per_image, act_.x_state,
                                   images * image_bytes, cudaMemcpyDeviceToDevice, stream_));

  cuda::LoopStepArgs loop;
  loop.steps = act_.loop_steps;
  loop.step = act_.loop_step;
  loop.blocks_done = act_.loop_blocks_done;
  loop.x_state = act_.x_state;
  loop.x_in = act_.x_in;
  loop.model_out = act_.final_tokens;  // loop_step gathers as unpatchify would
  loop.patch = c.patch_size;
  loop.width = c.input_size;
  loop.seeds = act_.seeds;
  loop.modulation_chunk = act_.modulation_chunk;
  loop.modulation = act_.modulation;
  loop.modulation_floats = static_cast<int64_t>(modulation_row_floats);
  loop.images = images;
  loop.C = C;
  loop.HW = HW;
  loop.guided = guided;
  loop.guided_channels = std::min(kGuidedChannels, c.out_channels());
  const auto step = [&] {
    run_forward(rows, false, true);
    NvtxRange update_range("update");
    cuda::loop_step(loop, stream_);
  };
  for (int i = 0; i < steps; ++i) {
    NvtxRange step_range("step");
    if (i % chunk == 0) {  // the modulations of the next chunk of steps, in one adaLN GEMM
      const int chunk_rows = std::min(chunk, steps - i) * rows;
      compute_modulation(chunk_rows, act_.timesteps + static_cast<size_t>(i) * rows,
                         act_.labels + static_cast<size_t>(i) * rows, act_.modulation_chunk);
      DIT_CUDA_CHECK(cudaMemcpyAsync(act_.modulation, act_.modulation_chunk, modulation_row_floats * sizeof(float),
                                     cudaMemcpyDeviceToDevice, stream_));
    }
    run_graphed(step_graph_, rows, images, step, "a sampling step");
    if (progress) {
      DIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
      progress(i + 1, steps);
    }
  }

  Tensor result({images, C, c.input_size, c.input_size});
  download(result.ptr(), act_.x_state, result.data.size() * sizeof(float));
  return result;
}

}  // namespace

std::unique_ptr<DitModel> make_cuda_model(const ModelConfig& config, const DitWeights& weights, Precision precision,
                                          const EngineOptions& options) {
  return std::make_unique<CudaDitModel>(config, WeightSource{&weights, {}}, precision, options);
}

std::unique_ptr<DitModel> make_cuda_model(const DitCheckpoint& checkpoint, Precision precision,
                                          const EngineOptions& options) {
  return std::make_unique<CudaDitModel>(checkpoint.config(), WeightSource{nullptr, {}, &checkpoint}, precision,
                                        options);
}

std::unique_ptr<DitModel> make_cuda_model(const ModelConfig& config, const RandomDitWeights& weights,
                                          Precision precision, const EngineOptions& options) {
  return std::make_unique<CudaDitModel>(config, WeightSource{nullptr, weights}, precision, options);
}

}  // namespace dit
