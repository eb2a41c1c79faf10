// The CUDA DiT (model/cuda_model.h). Storage: the residual stream, the conditioning, the
// modulations and every GEMM output that feeds a residual are float32; GEMM operands (weights,
// LayerNorm outputs, qkv, attention output, MLP hidden) are in the compute dtype (float32 for
// fp32/tf32, else fp16/bf16), always with float32 accumulation. The timestep MLP, the patch
// embedding and the label table stay float32 at every precision: they are 0.3% of the weights
// and every modulation of the network derives from them.
#include "model/cuda_model.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/attention_flash.h"
#include "kernels/class_embed.h"
#include "kernels/cuda_check.h"
#include "kernels/gated_residual.h"
#include "kernels/guidance.h"
#include "kernels/layernorm_modulate.h"
#include "kernels/noise.h"
#include "kernels/patch_embed.h"
#include "kernels/sampler_step.h"
#include "kernels/timestep_embed.h"
#include "kernels/unpatchify.h"
#include "model/cublaslt_gemm.h"
#include "model/device_arena.h"
#include "model/schedule.h"

namespace dit {
namespace {

using cuda::DeviceDtype;
using cuda::GemmArgs;
using cuda::GemmCompute;
using cuda::GemmEpilogue;

constexpr int kFrequencyDim = 256;   // TimestepEmbedder.frequency_embedding_size
constexpr float kMaxPeriod = 10000.0f;
constexpr int kGuidedChannels = 3;   // upstream guides epsilon channels 0-2 only
constexpr float kLayerNormEps = 1e-6f;

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
  DeviceLinear adaln, qkv, proj, fc1, fc2;
};

// Activation buffers for `rows` batch rows and `steps` sampling steps, carved from one arena.
struct Activations {
  int rows = 0, steps = 0;
  float* x_in = nullptr;          // [rows, C, S, S] model input
  int64_t* labels = nullptr;      // [rows]
  int64_t* timesteps = nullptr;   // [steps, rows]; forward() uses row block 0
  float* frequencies = nullptr;   // [rows, 256]
  float* t_hidden = nullptr;      // [rows, D]
  float* t_emb = nullptr;         // [rows, D]
  float* conditioning = nullptr;  // [rows, D] c = t_emb + y_emb
  void* silu_c = nullptr;         // [rows, D] compute dtype
  float* modulation = nullptr;    // [rows, 6D] shift, scale, gate (msa), shift, scale, gate (mlp)
  float* residual = nullptr;      // [rows, T, D] the residual stream h
  void* normed = nullptr;         // [rows, T, D] compute dtype, LN + modulation
  void* qkv = nullptr;            // [rows, T, 3, H, hd] compute dtype
  void* attention = nullptr;      // [rows, T, H, hd] compute dtype
  float* branch = nullptr;        // [rows, T, D] attention-proj / fc2 output
  void* mlp_hidden = nullptr;     // [rows, T, 4D] compute dtype
  float* final_tokens = nullptr;  // [rows, T, p*p*out_channels]
  float* out = nullptr;           // [rows, out_channels, S, S]
  float* x_state = nullptr;       // [rows, C, S, S] the sampler's latents
  float* noise = nullptr;         // [rows, C, S, S]
  uint64_t* seeds = nullptr;      // [rows]
  uint32_t* initial_streams = nullptr;  // [rows] all 0: both halves start from the same x_T
  uint32_t* step_streams = nullptr;     // [rows] 0 conditional rows, 1 unconditional rows
};

class CudaDitModel final : public DitModel {
 public:
  CudaDitModel(const ModelConfig& config, const DitWeights& weights, Precision precision);
  ~CudaDitModel() override;

  const ModelConfig& config() const override { return config_; }
  Backend backend() const override { return Backend::cuda; }
  Precision precision() const override { return precision_; }

  Tensor forward(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y) override;
  Tensor forward_with_cfg(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y,
                          float cfg_scale) override;
  Tensor sample(const SampleRequest& request, const ProgressFn& progress) override;

 private:
  void upload_weights(const DitWeights& weights);
  template <typename Alloc>
  Activations carve_activations(Alloc& alloc, int rows, int steps) const;
  void ensure_capacity(int rows, int steps);
  void check_inputs(const char* op, const Tensor& x, size_t timesteps, std::span<const int64_t> y) const;
  void upload(void* device, const void* host, size_t bytes);
  void download(void* host, const void* device, size_t bytes);
  // x_in, labels and timesteps [rows] -> out; everything on stream_.
  void run_forward(int rows, const int64_t* timesteps);
  void linear(const DeviceLinear& layer, const void* in, DeviceDtype in_dtype, void* out, DeviceDtype out_dtype,
              int M, GemmEpilogue epilogue);
  void mlp_up(const DeviceLinear& layer, int M);

  ModelConfig config_;
  Precision precision_;
  DeviceDtype compute_;        // GEMM operand dtype of the transformer layers
  GemmCompute gemm_compute_;   // tf32 only for Precision::tf32
  bool gelu_epilogue_;         // fused GELU for fp16/bf16; float32 paths use the exact kernel
  cudaStream_t stream_ = nullptr;
  cuda::DeviceArena weight_arena_;
  cuda::DeviceArena activation_arena_;
  std::unique_ptr<cuda::GemmRunner> gemm_;

  const float* patch_weight_ = nullptr;  // [D, C, p, p]
  const float* patch_bias_ = nullptr;    // [D]
  const float* pos_embed_ = nullptr;     // [T, D]
  const float* label_table_ = nullptr;   // [num_classes + 1, D]
  DeviceLinear time_mlp0_, time_mlp2_, final_adaln_, final_linear_;
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

CudaDitModel::CudaDitModel(const ModelConfig& config, const DitWeights& weights, Precision precision)
    : config_(config),
      precision_(precision),
      compute_(compute_dtype(precision)),
      gemm_compute_(precision == Precision::tf32 ? GemmCompute::tf32 : GemmCompute::fp32),
      gelu_epilogue_(precision == Precision::fp16 || precision == Precision::bf16) {
  config_.validate();
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0)
    throw Error(ErrorKind::device, std::string("the cuda backend needs a GPU: ") +
                                       (status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device"));
  for (const auto& [name, shape] : expected_weight_shapes(config_)) {
    const Tensor& tensor = weights.at(name);
    if (tensor.shape != shape || static_cast<int64_t>(tensor.data.size()) != tensor.numel())
      throw Error(ErrorKind::invalid_argument, "weight '" + name + "' has shape " + shape_string(tensor.shape) +
                                                   ", " + config_.name + " expects " + shape_string(shape));
  }
  DIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  NvtxRange range("cuda_model.load");
  upload_weights(weights);
  ensure_capacity(2, 1);
}

CudaDitModel::~CudaDitModel() {
  if (stream_) {
    cudaStreamSynchronize(stream_);  // destruction cannot report; the arenas free after this
    cudaStreamDestroy(stream_);
  }
}

// Weights: name -> dtype; sized in one pass, then carved and uploaded (converted on the host).
void CudaDitModel::upload_weights(const DitWeights& weights) {
  const DeviceDtype f32 = DeviceDtype::f32;
  std::vector<std::pair<std::string, DeviceDtype>> specs = {
      {"x_embedder.proj.weight", f32}, {"x_embedder.proj.bias", f32}, {"pos_embed", f32},
      {"t_embedder.mlp.0.weight", f32}, {"t_embedder.mlp.0.bias", f32},
      {"t_embedder.mlp.2.weight", f32}, {"t_embedder.mlp.2.bias", f32},
      {"y_embedder.embedding_table.weight", f32}};
  auto add_linear = [&](const std::string& prefix, DeviceDtype bias_dtype) {
    specs.emplace_back(prefix + ".weight", compute_);
    specs.emplace_back(prefix + ".bias", bias_dtype);
  };
  for (int i = 0; i < config_.depth; ++i) {
    const std::string block = "blocks." + std::to_string(i) + ".";
    add_linear(block + "adaLN_modulation.1", f32);
    add_linear(block + "attn.qkv", compute_);
    add_linear(block + "attn.proj", f32);
    add_linear(block + "mlp.fc1", compute_);
    add_linear(block + "mlp.fc2", f32);
  }
  add_linear("final_layer.adaLN_modulation.1", f32);
  add_linear("final_layer.linear", f32);

  cuda::ArenaSizer sizer;
  sizer.take(cuda::GemmRunner::kWorkspaceBytes);
  for (const auto& [name, dtype] : specs) sizer.take(weights.at(name).data.size() * cuda::dtype_bytes(dtype));
  weight_arena_ = cuda::DeviceArena(sizer.bytes());
  gemm_ = std::make_unique<cuda::GemmRunner>(weight_arena_.take(cuda::GemmRunner::kWorkspaceBytes));

  std::map<std::string, const void*> device;
  std::vector<__half> halves;
  std::vector<__nv_bfloat16> bfloats;
  for (const auto& [name, dtype] : specs) {
    const std::vector<float>& values = weights.at(name).data;
    void* target = weight_arena_.take(values.size() * cuda::dtype_bytes(dtype));
    const void* source = values.data();
    if (dtype == DeviceDtype::f16) {
      halves.resize(values.size());
      std::transform(values.begin(), values.end(), halves.begin(), [](float v) { return __float2half_rn(v); });
      source = halves.data();
    } else if (dtype == DeviceDtype::bf16) {
      bfloats.resize(values.size());
      std::transform(values.begin(), values.end(), bfloats.begin(),
                     [](float v) { return __float2bfloat16_rn(v); });
      source = bfloats.data();
    }
    DIT_CUDA_CHECK(cudaMemcpy(target, source, values.size() * cuda::dtype_bytes(dtype), cudaMemcpyHostToDevice));
    device[name] = target;
  }

  auto layer = [&](const std::string& prefix) {
    const Tensor& w = weights.at(prefix + ".weight");
    return DeviceLinear{device.at(prefix + ".weight"), device.at(prefix + ".bias"), static_cast<int>(w.dim(0)),
                        static_cast<int>(w.dim(1))};
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
    blocks_.push_back(DeviceBlock{layer(block + "adaLN_modulation.1"), layer(block + "attn.qkv"),
                                  layer(block + "attn.proj"), layer(block + "mlp.fc1"), layer(block + "mlp.fc2")});
  }
  final_adaln_ = layer("final_layer.adaLN_modulation.1");
  final_linear_ = layer("final_layer.linear");
}

template <typename Alloc>
Activations CudaDitModel::carve_activations(Alloc& alloc, int rows, int steps) const {
  const ModelConfig& c = config_;
  const size_t R = rows, T = c.tokens(), D = c.hidden_size, S2 = static_cast<size_t>(c.input_size) * c.input_size;
  const size_t compute_bytes = cuda::dtype_bytes(compute_);
  const size_t out_dim = static_cast<size_t>(c.patch_size) * c.patch_size * c.out_channels();
  Activations a;
  a.rows = rows;
  a.steps = steps;
  a.x_in = alloc.template take<float>(R * c.in_channels * S2);
  a.labels = alloc.template take<int64_t>(R);
  a.timesteps = alloc.template take<int64_t>(R * steps);
  a.frequencies = alloc.template take<float>(R * kFrequencyDim);
  a.t_hidden = alloc.template take<float>(R * D);
  a.t_emb = alloc.template take<float>(R * D);
  a.conditioning = alloc.template take<float>(R * D);
  a.silu_c = alloc.take(R * D * compute_bytes);
  a.modulation = alloc.template take<float>(R * 6 * D);
  a.residual = alloc.template take<float>(R * T * D);
  a.normed = alloc.take(R * T * D * compute_bytes);
  a.qkv = alloc.take(R * T * 3 * D * compute_bytes);
  a.attention = alloc.take(R * T * D * compute_bytes);
  a.branch = alloc.template take<float>(R * T * D);
  a.mlp_hidden = alloc.take(R * T * static_cast<size_t>(c.mlp_hidden()) * compute_bytes);
  a.final_tokens = alloc.template take<float>(R * T * out_dim);
  a.out = alloc.template take<float>(R * c.out_channels() * S2);
  a.x_state = alloc.template take<float>(R * c.in_channels * S2);
  a.noise = alloc.template take<float>(R * c.in_channels * S2);
  a.seeds = alloc.template take<uint64_t>(R);
  a.initial_streams = alloc.template take<uint32_t>(R);
  a.step_streams = alloc.template take<uint32_t>(R);
  return a;
}

// The activation arena is sized for the largest batch and step count seen so far: it is
// (re)allocated only here, at the start of a call, never inside the step loop.
void CudaDitModel::ensure_capacity(int rows, int steps) {
  if (rows <= act_.rows && steps <= act_.steps) return;
  rows = std::max(rows, act_.rows);
  steps = std::max(steps, act_.steps);
  DIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  cuda::ArenaSizer sizer;
  carve_activations(sizer, rows, steps);
  activation_arena_ = cuda::DeviceArena();  // free the old one first
  activation_arena_ = cuda::DeviceArena(sizer.bytes());
  act_ = carve_activations(activation_arena_, rows, steps);
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

// fc1 + GELU: fused into the GEMM's epilogue for fp16/bf16 when cuBLASLt offers it for this
// shape, else (and always on the float32 paths, whose tolerance is tighter than the epilogue's
// GELU) bias in the epilogue and the exact GELU kernel after it.
void CudaDitModel::mlp_up(const DeviceLinear& layer, int M) {
  if (gelu_epilogue_) {
    GemmArgs probe{act_.normed, layer.weight, layer.bias, act_.mlp_hidden, M, layer.out, layer.in,
                   compute_, compute_, GemmCompute::fp32, GemmEpilogue::gelu_bias};
    if (gemm_->can_run(probe)) {
      gemm_->linear(probe, stream_);
      return;
    }
  }
  linear(layer, act_.normed, compute_, act_.mlp_hidden, compute_, M, GemmEpilogue::bias);
  cuda::gelu_tanh(act_.mlp_hidden, act_.mlp_hidden, compute_, static_cast<int64_t>(M) * layer.out, stream_);
}

void CudaDitModel::run_forward(int rows, const int64_t* timesteps) {
  NvtxRange range("forward");
  const ModelConfig& c = config_;
  const int D = c.hidden_size, T = c.tokens(), H = c.num_heads, hd = c.head_dim(), p = c.patch_size;
  const int tokens = rows * T;
  const DeviceDtype f32 = DeviceDtype::f32;

  cuda::patch_embed(act_.x_in, patch_weight_, patch_bias_, pos_embed_, act_.residual, rows, c.in_channels,
                    c.input_size, p, D, stream_);

  // c = t_embedder(t) + y_embedder(y); every adaLN layer consumes SiLU(c).
  cuda::timestep_embed(timesteps, act_.frequencies, rows, kFrequencyDim, kMaxPeriod, stream_);
  linear(time_mlp0_, act_.frequencies, f32, act_.t_hidden, f32, rows, GemmEpilogue::bias);
  cuda::silu(act_.t_hidden, act_.t_hidden, f32, static_cast<int64_t>(rows) * D, stream_);
  linear(time_mlp2_, act_.t_hidden, f32, act_.t_emb, f32, rows, GemmEpilogue::bias);
  cuda::class_embed_add(act_.t_emb, label_table_, act_.labels, act_.conditioning, rows, D, c.num_classes + 1,
                        nullptr, stream_);
  cuda::silu(act_.conditioning, act_.silu_c, compute_, static_cast<int64_t>(rows) * D, stream_);

  const int mod_stride = 6 * D;
  const float* shift_msa = act_.modulation;
  const float* scale_msa = act_.modulation + D;
  const float* gate_msa = act_.modulation + 2 * D;
  const float* shift_mlp = act_.modulation + 3 * D;
  const float* scale_mlp = act_.modulation + 4 * D;
  const float* gate_mlp = act_.modulation + 5 * D;
  for (const DeviceBlock& block : blocks_) {
    NvtxRange block_range("block");
    linear(block.adaln, act_.silu_c, compute_, act_.modulation, f32, rows, GemmEpilogue::bias);

    cuda::layernorm_modulate(act_.residual, shift_msa, scale_msa, mod_stride, act_.normed, compute_, rows, T, D,
                             kLayerNormEps, stream_);
    linear(block.qkv, act_.normed, compute_, act_.qkv, compute_, tokens, GemmEpilogue::bias);
    cuda::attention(act_.qkv, act_.attention, compute_, rows, T, H, hd, stream_);
    linear(block.proj, act_.attention, compute_, act_.branch, f32, tokens, GemmEpilogue::bias);
    cuda::gated_residual(act_.residual, act_.branch, gate_msa, mod_stride, rows, T, D, stream_);

    cuda::layernorm_modulate(act_.residual, shift_mlp, scale_mlp, mod_stride, act_.normed, compute_, rows, T, D,
                             kLayerNormEps, stream_);
    mlp_up(block.fc1, tokens);
    linear(block.fc2, act_.mlp_hidden, compute_, act_.branch, f32, tokens, GemmEpilogue::bias);
    cuda::gated_residual(act_.residual, act_.branch, gate_mlp, mod_stride, rows, T, D, stream_);
  }

  NvtxRange final_range("final_layer");
  linear(final_adaln_, act_.silu_c, compute_, act_.modulation, f32, rows, GemmEpilogue::bias);
  // final adaLN: (shift, scale) with row stride 2D
  cuda::layernorm_modulate(act_.residual, act_.modulation, act_.modulation + D, 2 * D, act_.normed, compute_, rows,
                           T, D, kLayerNormEps, stream_);
  linear(final_linear_, act_.normed, compute_, act_.final_tokens, f32, tokens, GemmEpilogue::bias);
  cuda::unpatchify(act_.final_tokens, act_.out, rows, c.grid(), p, c.out_channels(), stream_);
}

void CudaDitModel::check_inputs(const char* op, const Tensor& x, size_t timesteps,
                                std::span<const int64_t> y) const {
  const ModelConfig& c = config_;
  const int64_t B = x.shape.empty() ? 0 : x.dim(0);
  const std::vector<int64_t> expected{B, c.in_channels, c.input_size, c.input_size};
  if (B == 0 || x.shape != expected || static_cast<int64_t>(timesteps) != B || static_cast<int64_t>(y.size()) != B ||
      static_cast<int64_t>(x.data.size()) != x.numel())
    throw Error(ErrorKind::invalid_argument,
                std::string(op) + ": x " + shape_string(x.shape) + " with " + std::to_string(timesteps) +
                    " timesteps and " + std::to_string(y.size()) + " labels; " + c.name + " expects [B, " +
                    std::to_string(c.in_channels) + ", " + std::to_string(c.input_size) + ", " +
                    std::to_string(c.input_size) + "] with B of each");
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
  run_forward(rows, act_.timesteps);
  Tensor out({rows, config_.out_channels(), config_.input_size, config_.input_size});
  download(out.ptr(), act_.out, out.data.size() * sizeof(float));
  return out;
}

Tensor CudaDitModel::forward_with_cfg(const Tensor& x, std::span<const int64_t> t, std::span<const int64_t> y,
                                      float cfg_scale) {
  check_inputs("forward_with_cfg", x, t.size(), y);
  const int rows = static_cast<int>(x.dim(0));
  if (rows % 2)
    throw Error(ErrorKind::invalid_argument, "forward_with_cfg: the batch must be even (conditional rows, then "
                                             "unconditional rows), got " + std::to_string(rows));
  ensure_capacity(rows, 1);
  // upstream runs the first half twice: cat([x[:B], x[:B]])
  const size_t half_bytes = x.data.size() / 2 * sizeof(float);
  upload(act_.x_in, x.ptr(), half_bytes);
  upload(reinterpret_cast<std::byte*>(act_.x_in) + half_bytes, x.ptr(), half_bytes);
  upload(act_.timesteps, t.data(), t.size() * sizeof(int64_t));
  upload(act_.labels, y.data(), y.size() * sizeof(int64_t));
  run_forward(rows, act_.timesteps);
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
  std::vector<uint64_t> seeds(rows);
  std::vector<uint32_t> initial_streams(rows, 0), step_streams(rows);
  for (int r = 0; r < rows; ++r) {
    seeds[r] = request.seeds[r % images];
    step_streams[r] = static_cast<uint32_t>(r / images);
  }
  std::vector<int64_t> timesteps(static_cast<size_t>(steps) * rows);
  for (int i = 0; i < steps; ++i)
    std::fill_n(timesteps.begin() + static_cast<size_t>(i) * rows, rows, schedule.timestep_map[steps - 1 - i]);
  upload(act_.labels, labels.data(), labels.size() * sizeof(int64_t));
  upload(act_.seeds, seeds.data(), seeds.size() * sizeof(uint64_t));
  upload(act_.initial_streams, initial_streams.data(), initial_streams.size() * sizeof(uint32_t));
  upload(act_.step_streams, step_streams.data(), step_streams.size() * sizeof(uint32_t));
  upload(act_.timesteps, timesteps.data(), timesteps.size() * sizeof(int64_t));

  // x_T: each image's slot-0 noise (stream 0), the same in both halves as upstream's cat([z, z]).
  cuda::gaussian_noise_rows(act_.seeds, act_.initial_streams, kNoiseSlotInitial, act_.x_state, rows, per_image,
                            stream_);

  for (int i = 0; i < steps; ++i) {
    NvtxRange step_range("step");
    const int index = steps - 1 - i;
    // the model sees x[:images] (twice under guidance: forward_with_cfg's cat([half, half]))
    DIT_CUDA_CHECK(cudaMemcpyAsync(act_.x_in, act_.x_state, images * image_bytes, cudaMemcpyDeviceToDevice, stream_));
    if (guided)
      DIT_CUDA_CHECK(cudaMemcpyAsync(act_.x_in + static_cast<size_t>(images) * per_image, act_.x_state,
                                     images * image_bytes, cudaMemcpyDeviceToDevice, stream_));
    run_forward(rows, act_.timesteps + static_cast<size_t>(i) * rows);
    if (guided)
      cuda::guidance_combine(act_.out, images, c.out_channels(), HW, request.cfg_scale,
                             std::min(kGuidedChannels, c.out_channels()), stream_);
    const StepCoefficients k = step_coefficients(schedule, index);
    const bool noisy = !k.last_step && (request.sampler == SamplerKind::ddpm || request.eta != 0.0f);
    if (noisy)
      cuda::gaussian_noise_rows(act_.seeds, act_.step_streams, noise_slot_for_step(i), act_.noise, rows, per_image,
                                stream_);
    if (request.sampler == SamplerKind::ddpm)
      cuda::ddpm_step(act_.x_state, act_.out, noisy ? act_.noise : nullptr, rows, C, HW, k, stream_);
    else
      cuda::ddim_step(act_.x_state, act_.out, noisy ? act_.noise : nullptr, rows, C, HW, k, request.eta, stream_);
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

std::unique_ptr<DitModel> make_cuda_model(const ModelConfig& config, const DitWeights& weights, Precision precision) {
  return std::make_unique<CudaDitModel>(config, weights, precision);
}

}  // namespace dit
