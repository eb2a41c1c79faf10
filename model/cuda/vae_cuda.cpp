// The CUDA VAE decoder (model/cuda/vae_cuda.h). The graph is the CPU reference's (model/cpu/vae_cpu.cpp);
// tensors are channels last, [N, H, W, C]. The latent (4) and RGB (3) channel counts are padded
// to 8 with zero weights so every convolution has tensor-core-friendly channels.
//
// A convolution's bias is one more pass over its output: the bias kernel (kernels/vae_bias.h).
// In fp16 and bf16 cuDNN adds it instead, in the convolution's own epilogue, together with the
// residual a resnet's conv2 adds to (cudnnConvolutionBiasActivationForward; model/cuda/vae_cuda_conv.h):
// one launch and one rounding fewer per convolution (7 to 10% of an SD decode on an H200), for a
// copy of each bias in the storage type. A shape cuDNN has no fused form for keeps the separate
// kernel. fp32 (the golden path) and tf32 always take the separate kernel, which adds the
// float32 bias as before. EngineOptions::vae_fused_bias false keeps the separate kernel at every precision.
//
// The first decode of a (batch, latent size) runs eagerly (cuDNN and cuBLASLt load their kernels)
// and is then captured as a CUDA Graph; later decodes of that shape upload the latents and replay
// it: about 210 launches (fewer where the bias is fused), most of them cuDNN calls with tens of
// microseconds of host work each, become one. The replay runs the same kernels on the same
// buffers, so it gives the same bytes.
// EngineOptions::cuda_graphs false keeps every decode eager, as it does for the DiT (model/cuda/cuda_model.cpp).
#include "model/cuda/vae_cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/group_norm.h"
#include "kernels/upsample.h"
#include "kernels/vae_bias.h"
#include "kernels/vae_image.h"
#include "kernels/vae_softmax.h"
#include "model/cuda/cuda_graph.h"
#include "model/cuda/device_arena.h"
#include "core/cublaslt_library.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "model/cuda/vae_cuda_conv.h"
#include "model/cuda/vae_cuda_matmul.h"
#include "model/cuda/vae_weight_staging.h"
#include "model/vae_layout.h"

namespace dit {
namespace {

using cuda::ConvParams;
using cuda::ConvShape;
using cuda::CudnnConv;
using cuda::DeviceDtype;
using cuda::LtMatmul;
using cuda::MatmulShape;
using cuda::NormParams;
using cuda::WeightStaging;

constexpr int kPaddedChannels = 8;                            // latent and RGB channels on the device
constexpr int64_t kScoresBudgetElements = int64_t{64} << 20;  // attention scores held at once

int padded(int channels) { return (channels + kPaddedChannels - 1) / kPaddedChannels * kPaddedChannels; }

struct ResnetParams {
  NormParams norm1, norm2;
  ConvParams conv1, conv2, shortcut;  // shortcut's bias = conv_shortcut.bias + conv2.bias
  bool has_shortcut = false;
};
struct AttentionParams {
  NormParams norm;
  size_t qkv_weight = 0, qkv_bias = 0;  // [3C, C] (to_q; to_k; to_v) and [3C]
  size_t out_weight = 0, out_bias = 0;  // [C, C] and [C]
};
struct UpBlockParams {
  std::vector<ResnetParams> resnets;
  std::optional<ConvParams> upsampler;
};

struct GraphExecDestroy {
  void operator()(cudaGraphExec_t graph) const { cudaGraphExecDestroy(graph); }  // cannot fail for a valid graph
};

// Device buffers and library plans for one (batch, latent size).
struct Plan {
  int N = 0, S = 0;
  int image_size = 0;  // S times 2 per upsampler
  std::map<ConvShape, std::unique_ptr<CudnnConv>> convs;
  int attention_chunk = 1;  // images per scores product
  std::optional<LtMatmul> qkv, scores, mix, out;
  cuda::DeviceArena arena;
  void* buffers[3] = {};                          // activations, each the largest [N, H, W, C]
  void *x = nullptr, *a = nullptr, *b = nullptr;  // the roles of the three buffers as a decode runs
  void *qkv_buffer = nullptr, *scores_buffer = nullptr;
  void *conv_workspace = nullptr, *gemm_workspace = nullptr;
  float* norm_workspace = nullptr;
  float* image = nullptr;  // [N, 3, H, W] float32, what decode returns
  size_t conv_workspace_bytes = 0;
  std::unique_ptr<CUgraphExec_st, GraphExecDestroy> graph;  // the captured decode, once there is one
};

class CudaVaeDecoder final : public VaeDecoder {
 public:
  CudaVaeDecoder(const VaeConfig& config, const VaeWeights& weights, Precision precision, const EngineOptions& options)
      : config_(config),
        layout_(vae::decoder_layout(config)),
        precision_(precision),
        dtype_(cuda::storage_dtype(precision)),
        use_graphs_(options.cuda_graphs),
        fuse_bias_(dtype_ != DeviceDtype::f32 && options.vae_fused_bias) {
    int devices = 0;
    const cudaError_t status = cudaGetDeviceCount(&devices);
    if (status != cudaSuccess || devices == 0)
      throw Error(ErrorKind::device, std::string("CUDA VAE decoder: no usable GPU (") +
                                         (status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device") + ")");
    for (const auto& [name, shape] : vae::parameter_shapes(config))
      if (weights.at(name).shape != shape)
        throw Error(ErrorKind::invalid_argument, "VAE weights: " + name + " has shape " +
                                                     shape_string(weights.at(name).shape) + ", expected " +
                                                     shape_string(shape));
    for (int channels : config.block_out_channels)
      cuda::require(channels % kPaddedChannels == 0, "CUDA VAE decoder",
                    "block_out_channels must be multiples of 8, got " + std::to_string(channels));
    // The library handles need the device context and no weights; the weights' staging (packing
    // and narrowing on the host) needs neither: made side by side, the handles on a helper thread
    // (cuDNN's handle alone takes tens of milliseconds), then the staged weights are copied.
    std::exception_ptr handles_failure;
    std::vector<std::byte> staged;
    int device = 0;  // the helper makes them on this thread's device, not its own default one
    DIT_CUDA_CHECK(cudaGetDevice(&device));
    {
      std::jthread handles([this, &handles_failure, device] {
        try {
          DIT_CUDA_CHECK(cudaSetDevice(device));
          make_handles();
        } catch (...) {
          handles_failure = std::current_exception();
        }
      });
      staged = stage_weights(weights);
    }  // the helper is joined here, also when the staging throws
    if (handles_failure) std::rethrow_exception(handles_failure);
    weights_arena_ = cuda::DeviceArena(staged.size());
    weights_base_ = weights_arena_.take(staged.size());
    DIT_CUDA_CHECK(cudaMemcpy(weights_base_, staged.data(), staged.size(), cudaMemcpyHostToDevice));
  }

  const VaeConfig& config() const override { return config_; }

  Tensor decode(const Tensor& z) override {
    check_latents(z, config_);
    const int N = static_cast<int>(z.shape[0]), S = static_cast<int>(z.shape[2]);
    if (!plan_ || plan_->N != N || plan_->S != S) {
      plan_.reset();
      plan_ = make_plan(N, S);
    }
    Plan& plan = *plan_;
    upload_latents(z, latent_buffer(plan));
    if (plan.graph) {
      DIT_CUDA_CHECK(cudaGraphLaunch(plan.graph.get(), stream_));
    } else {
      run_decoder();
    }
    Tensor out = download_image(plan);
    if (!plan.graph && use_graphs_) capture_decoder();
    return out;
  }

 private:
  // The latents go to the buffer the decode starts from (run_decoder resets the roles).
  static void* latent_buffer(const Plan& plan) { return plan.buffers[1]; }

  // Enqueues one decode of the latents in latent_buffer() into plan.image. It starts from the
  // same buffer roles every time, so that a captured decode and an eager one use the same
  // addresses.
  void run_decoder() {
    Plan& plan = *plan_;
    plan.x = plan.buffers[0];
    plan.a = plan.buffers[1];
    plan.b = plan.buffers[2];
    const int N = plan.N, S = plan.S;
    conv(post_quant_, plan.a, plan.b, S, false);
    conv(conv_in_, plan.b, plan.x, S, false);
    int size = S;
    resnet(mid_resnets_[0], size);
    attention(size);
    resnet(mid_resnets_[1], size);
    for (const auto& block : up_blocks_) {
      for (const auto& r : block.resnets) resnet(r, size);
      if (block.upsampler) {
        cuda::upsample_nearest2x(plan.x, plan.a, dtype_, N, size, size, block.upsampler->in_channels, stream_);
        size *= 2;
        conv(*block.upsampler, plan.a, plan.x, size, false);
      }
    }
    norm(norm_out_, plan.x, plan.a, size, layout_.bottom_channels, true);
    conv(conv_out_, plan.a, plan.b, size, false);
    cuda::channels_last_to_planar(plan.b, dtype_, plan.image, N, static_cast<int64_t>(size) * size,
                                  conv_out_.out_channels, layout_.out_channels, stream_);
  }

  // Captures run_decoder() into the plan's graph. A capture that fails leaves this decoder eager,
  // with a warning (the decode itself has already succeeded).
  void capture_decoder() {
    try {
      plan_->graph.reset(cuda::capture_graph(stream_, [&] { run_decoder(); }));
    } catch (const Error& error) {
      cudaGetLastError();  // clear a non-sticky launch error left by the failed capture
      use_graphs_ = false;
      std::fprintf(stderr, "dit: the VAE decode could not be captured as a CUDA Graph; it runs eagerly (%s)\n",
                   error.what());
    }
  }

  template <typename T = void>
  T* device(size_t offset) const {
    return reinterpret_cast<T*>(static_cast<std::byte*>(weights_base_) + offset);
  }

  void make_handles() {
    DIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    owned_stream_.reset(stream_);
    DIT_CUDNN_CHECK(cudnnCreate(&cudnn_));
    owned_cudnn_.reset(cudnn_);
    DIT_CUDNN_CHECK(cudnnSetStream(cudnn_, stream_));
    if (const std::string missing = preload_cublaslt(); !missing.empty())  // opened on first use
      throw Error(ErrorKind::device, "CUDA VAE decoder: " + missing);
    DIT_CUBLAS_CHECK(cublasLtCreate(&cublas_));
    owned_cublas_.reset(cublas_);
  }

  // The device image of the weights, built on the host; sets every parameter's offset in it.
  std::vector<std::byte> stage_weights(const VaeWeights& weights) {
    // Parameters padded to 8 channels and each stored once (biases up to three times: float32,
    // fused, storage type), in at most 4 bytes: twice the float32 count is a safe reserve.
    size_t parameters = 0;
    for (const auto& [name, tensor] : weights.tensors) parameters += tensor.data.size();
    WeightStaging staging(dtype_, fuse_bias_, 2 * parameters * sizeof(float));
    const int latent_pad = padded(layout_.latent_channels);
    post_quant_ = staging.conv(weights, "post_quant_conv.", latent_pad, latent_pad);
    conv_in_ = staging.conv(weights, "decoder.conv_in.", latent_pad, layout_.top_channels);
    auto resnet_params = [&](const vae::ResnetLayout& r) {
      ResnetParams p;
      p.norm1 = staging.norm(weights, r.prefix + "norm1.");
      p.conv1 = staging.conv(weights, r.prefix + "conv1.", r.in_channels, r.out_channels);
      p.norm2 = staging.norm(weights, r.prefix + "norm2.");
      p.has_shortcut = r.has_shortcut();
      p.conv2 = staging.conv(weights, r.prefix + "conv2.", r.out_channels, r.out_channels);
      // With a shortcut, conv2's bias rides on the shortcut, which writes the output first.
      if (p.has_shortcut)
        p.shortcut = staging.conv(weights, r.prefix + "conv_shortcut.", r.in_channels, r.out_channels,
                                  &weights.at(r.prefix + "conv2.bias"));
      return p;
    };
    mid_resnets_[0] = resnet_params(layout_.mid_resnets[0]);
    const std::string attention = vae::kMidAttentionPrefix;
    attention_.norm = staging.norm(weights, attention + "group_norm.");
    std::vector<float> qkv_weight, qkv_bias;
    for (const char* projection : {"to_q.", "to_k.", "to_v."}) {
      const auto& w = weights.at(attention + projection + "weight").data;
      const auto& b = weights.at(attention + projection + "bias").data;
      qkv_weight.insert(qkv_weight.end(), w.begin(), w.end());
      qkv_bias.insert(qkv_bias.end(), b.begin(), b.end());
    }
    attention_.qkv_weight = staging.add(qkv_weight);
    attention_.qkv_bias = staging.add(qkv_bias);
    attention_.out_weight = staging.add(weights.at(attention + "to_out.0.weight").data);
    attention_.out_bias = staging.add(weights.at(attention + "to_out.0.bias").data);
    mid_resnets_[1] = resnet_params(layout_.mid_resnets[1]);
    for (const auto& block : layout_.up_blocks) {
      UpBlockParams params;
      for (const auto& r : block.resnets) params.resnets.push_back(resnet_params(r));
      if (!block.upsampler_prefix.empty())
        params.upsampler = staging.conv(weights, block.upsampler_prefix, block.channels, block.channels);
      up_blocks_.push_back(std::move(params));
    }
    norm_out_ = staging.norm(weights, "decoder.conv_norm_out.");
    conv_out_ = staging.conv(weights, "decoder.conv_out.", layout_.bottom_channels, padded(layout_.out_channels));

    return staging.take_bytes();
  }

  // Every convolution shape the graph runs at batch N and latent size S.
  std::vector<ConvShape> conv_shapes(int N, int S) const {
    std::vector<ConvShape> shapes;
    auto add = [&](const ConvParams& p, int size) {
      shapes.push_back({N, size, size, p.in_channels, p.out_channels, p.kernel});
    };
    add(post_quant_, S);
    add(conv_in_, S);
    int size = S;
    auto resnet_shapes = [&](const ResnetParams& r) {
      add(r.conv1, size);
      add(r.conv2, size);
      if (r.has_shortcut) add(r.shortcut, size);
    };
    resnet_shapes(mid_resnets_[0]);
    resnet_shapes(mid_resnets_[1]);
    for (const auto& block : up_blocks_) {
      for (const auto& r : block.resnets) resnet_shapes(r);
      if (block.upsampler) {
        size *= 2;
        add(*block.upsampler, size);
      }
    }
    add(conv_out_, size);
    return shapes;
  }

  std::unique_ptr<Plan> make_plan(int N, int S) {
    auto plan = std::make_unique<Plan>();
    plan->N = N;
    plan->S = S;
    size_t activation_elements = 0;
    int final_size = S;
    for (const ConvShape& shape : conv_shapes(N, S)) {
      activation_elements = std::max(activation_elements, static_cast<size_t>(shape.N) * shape.H * shape.W *
                                                              std::max(shape.in_channels, shape.out_channels));
      final_size = std::max(final_size, shape.H);
      if (!plan->convs.count(shape)) {
        auto conv = std::make_unique<CudnnConv>(cudnn_, shape, precision_, fuse_bias_);
        plan->conv_workspace_bytes = std::max(plan->conv_workspace_bytes, conv->workspace_bytes());
        plan->convs.emplace(shape, std::move(conv));
      }
    }

    const int C = layout_.top_channels;
    const int64_t P = static_cast<int64_t>(S) * S;
    cuda::require(P % kPaddedChannels == 0, "CUDA VAE decoder",
                  "latent size " + std::to_string(S) + ": the attention needs s * s to be a multiple of 8");
    // The largest divisor of N whose scores fit the budget (at least one image).
    int chunk = 1;
    for (int d = 1; d <= N; ++d)
      if (N % d == 0 && d * P * P <= kScoresBudgetElements) chunk = d;
    plan->attention_chunk = chunk;
    plan->image_size = final_size;
    const int pixels = static_cast<int>(N * P);
    plan->qkv.emplace(
        cublas_,
        MatmulShape{
            .transpose_a = true, .m = 3 * C, .n = pixels, .k = C, .lda = C, .ldb = C, .ldd = 3 * C, .bias = true},
        precision_);
    plan->scores.emplace(cublas_,
                         MatmulShape{.transpose_a = true,
                                     .m = static_cast<int>(P),
                                     .n = static_cast<int>(P),
                                     .k = C,
                                     .lda = 3 * C,
                                     .ldb = 3 * C,
                                     .ldd = P,
                                     .batch = chunk,
                                     .stride_a = P * 3 * C,
                                     .stride_b = P * 3 * C,
                                     .stride_d = P * P,
                                     .alpha = static_cast<float>(1.0 / std::sqrt(static_cast<double>(C)))},
                         precision_);
    plan->mix.emplace(cublas_,
                      MatmulShape{.m = C,
                                  .n = static_cast<int>(P),
                                  .k = static_cast<int>(P),
                                  .lda = 3 * C,
                                  .ldb = P,
                                  .ldd = C,
                                  .batch = chunk,
                                  .stride_a = P * 3 * C,
                                  .stride_b = P * P,
                                  .stride_d = P * C},
                      precision_);
    plan->out.emplace(
        cublas_,
        MatmulShape{
            .transpose_a = true, .m = C, .n = pixels, .k = C, .lda = C, .ldb = C, .ldd = C, .beta = 1.0f, .bias = true},
        precision_);

    const size_t element = cuda::dtype_bytes(dtype_);
    const size_t norm_floats =
        cuda::group_norm_workspace_floats(N, static_cast<int64_t>(final_size) * final_size, config_.norm_num_groups);
    const size_t image_floats = static_cast<size_t>(N) * layout_.out_channels * final_size * final_size;
    auto carve = [&](auto& arena) {
      for (void*& buffer : plan->buffers) buffer = arena.take(activation_elements * element);
      plan->qkv_buffer = arena.take(static_cast<size_t>(pixels) * 3 * C * element);
      plan->scores_buffer = arena.take(static_cast<size_t>(chunk) * P * P * element);
      plan->conv_workspace = arena.take(std::max<size_t>(plan->conv_workspace_bytes, 1));
      plan->gemm_workspace = arena.take(LtMatmul::kWorkspaceBytes);
      plan->norm_workspace = static_cast<float*>(arena.take(norm_floats * sizeof(float)));
      plan->image = static_cast<float*>(arena.take(image_floats * sizeof(float)));
    };
    cuda::ArenaSizer sizer;
    carve(sizer);
    plan->arena = cuda::DeviceArena(sizer.bytes());
    carve(plan->arena);
    return plan;
  }

  // out = conv(in) + bias (with_bias) + out (accumulate). The fused call does it all where the
  // plan has it; otherwise, or where cuDNN declines it, the plain call and the bias kernel.
  void conv(const ConvParams& p, const void* in, void* out, int size, bool accumulate, bool with_bias = true) {
    const ConvShape shape{plan_->N, size, size, p.in_channels, p.out_channels, p.kernel};
    CudnnConv& c = *plan_->convs.at(shape);
    if (with_bias && p.fused_bias &&
        c.run_with_bias(in, device(p.weight), device(*p.fused_bias), out, accumulate, plan_->conv_workspace))
      return;
    c.run(in, device(p.weight), out, accumulate, plan_->conv_workspace);
    if (with_bias)
      cuda::vae_add_bias(out, device<float>(p.bias), dtype_, static_cast<int64_t>(plan_->N) * size * size,
                         p.out_channels, stream_);
  }

  void norm(const NormParams& p, const void* in, void* out, int size, int channels, bool silu) {
    cuda::group_norm(in, device<float>(p.gamma), device<float>(p.beta), out, dtype_, plan_->N,
                     static_cast<int64_t>(size) * size, channels, config_.norm_num_groups, config_.norm_eps, silu,
                     plan_->norm_workspace, stream_);
  }

  // x <- x' + conv2(silu(norm2(conv1(silu(norm1(x)))))), x' = x or conv_shortcut(x).
  void resnet(const ResnetParams& r, int size) {
    Plan& plan = *plan_;
    norm(r.norm1, plan.x, plan.a, size, r.conv1.in_channels, true);
    conv(r.conv1, plan.a, plan.b, size, false);
    norm(r.norm2, plan.b, plan.a, size, r.conv1.out_channels, true);
    if (r.has_shortcut) {
      conv(r.shortcut, plan.x, plan.b, size, false);
      conv(r.conv2, plan.a, plan.b, size, true, false);
      std::swap(plan.x, plan.b);
    } else {
      conv(r.conv2, plan.a, plan.x, size, true);
    }
  }

  // x <- x + to_out(softmax(q k^T / sqrt(C)) v), one head over each image's pixels.
  void attention(int size) {
    Plan& plan = *plan_;
    const int C = layout_.top_channels;
    const int64_t P = static_cast<int64_t>(size) * size;
    const size_t element = cuda::dtype_bytes(dtype_);
    norm(attention_.norm, plan.x, plan.a, size, C, false);
    plan.qkv->run(device(attention_.qkv_weight), plan.a, nullptr, plan.qkv_buffer, device(attention_.qkv_bias),
                  plan.gemm_workspace, stream_);
    for (int first = 0; first < plan.N; first += plan.attention_chunk) {
      auto* qkv = static_cast<std::byte*>(plan.qkv_buffer) + first * P * 3 * C * element;
      std::byte* q = qkv;
      std::byte* k = qkv + C * element;
      std::byte* v = qkv + 2 * C * element;
      plan.scores->run(k, q, nullptr, plan.scores_buffer, nullptr, plan.gemm_workspace, stream_);
      cuda::vae_softmax(plan.scores_buffer, plan.scores_buffer, dtype_, plan.attention_chunk * P, P, stream_);
      auto* mixed = static_cast<std::byte*>(plan.b) + first * P * C * element;
      plan.mix->run(v, plan.scores_buffer, nullptr, mixed, nullptr, plan.gemm_workspace, stream_);
    }
    plan.out->run(device(attention_.out_weight), plan.b, plan.x, plan.x, device(attention_.out_bias),
                  plan.gemm_workspace, stream_);
  }

  void upload_latents(const Tensor& z, void* destination) {
    const int N = static_cast<int>(z.shape[0]), C = static_cast<int>(z.shape[1]), S = static_cast<int>(z.shape[2]);
    const int C_pad = padded(C);
    std::vector<float> nhwc(static_cast<size_t>(N) * S * S * C_pad, 0.0f);
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < C; ++c)
        for (int p = 0; p < S * S; ++p)
          nhwc[(static_cast<size_t>(n) * S * S + p) * C_pad + c] = z.data[(static_cast<size_t>(n) * C + c) * S * S + p];
    WeightStaging staging(dtype_);
    staging.add(nhwc);
    // From pageable memory the runtime has taken the bytes when the call returns, so the staging
    // buffer may go out of scope.
    DIT_CUDA_CHECK(
        cudaMemcpyAsync(destination, staging.bytes().data(), staging.bytes().size(), cudaMemcpyHostToDevice, stream_));
  }

  // The planar float32 image of the decode just enqueued, copied straight into the result.
  Tensor download_image(const Plan& plan) {
    Tensor out({plan.N, layout_.out_channels, plan.image_size, plan.image_size});
    DIT_CUDA_CHECK(
        cudaMemcpyAsync(out.data.data(), plan.image, out.data.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    DIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return out;
  }

  template <typename Handle, auto kDestroy>
  struct Destroy {
    void operator()(Handle h) const { kDestroy(h); }
  };

  VaeConfig config_;
  vae::DecoderLayout layout_;
  Precision precision_;
  DeviceDtype dtype_;
  bool use_graphs_;
  // EngineOptions::vae_fused_bias false keeps the separate bias kernel in fp16/bf16 too (the A/B
  // for benchmarks).
  bool fuse_bias_;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasLtHandle_t cublas_ = nullptr;
  // Destroyed after everything below them (members are destroyed in reverse order).
  std::unique_ptr<CUstream_st, Destroy<cudaStream_t, cudaStreamDestroy>> owned_stream_;
  std::unique_ptr<std::remove_pointer_t<cudnnHandle_t>, Destroy<cudnnHandle_t, cudnnDestroy>> owned_cudnn_;
  std::unique_ptr<std::remove_pointer_t<cublasLtHandle_t>, Destroy<cublasLtHandle_t, cublasLtDestroy>> owned_cublas_;
  cuda::DeviceArena weights_arena_;
  void* weights_base_ = nullptr;
  ConvParams post_quant_, conv_in_, conv_out_;
  ResnetParams mid_resnets_[2];
  AttentionParams attention_;
  std::vector<UpBlockParams> up_blocks_;
  NormParams norm_out_;
  std::unique_ptr<Plan> plan_;
};

}  // namespace

std::unique_ptr<VaeDecoder> make_cuda_vae_decoder(const VaeConfig& config, const VaeWeights& weights,
                                                  Precision precision, const EngineOptions& options) {
  return std::make_unique<CudaVaeDecoder>(config, weights, precision, options);
}

void preload_cuda_vae_libraries() {
  if (cudnnTensorDescriptor_t tensor = nullptr; cudnnCreateTensorDescriptor(&tensor) == CUDNN_STATUS_SUCCESS)
    cudnnDestroyTensorDescriptor(tensor);
  if (cudnnFilterDescriptor_t filter = nullptr; cudnnCreateFilterDescriptor(&filter) == CUDNN_STATUS_SUCCESS)
    cudnnDestroyFilterDescriptor(filter);
  if (cudnnConvolutionDescriptor_t conv = nullptr; cudnnCreateConvolutionDescriptor(&conv) == CUDNN_STATUS_SUCCESS)
    cudnnDestroyConvolutionDescriptor(conv);
  if (cudnnActivationDescriptor_t activation = nullptr;
      cudnnCreateActivationDescriptor(&activation) == CUDNN_STATUS_SUCCESS)
    cudnnDestroyActivationDescriptor(activation);
}

}  // namespace dit
