// Fixed during a session (the performance harness).
// Every CUDA kernel of the engine at the real shapes of DiT-XL/2 (batch 2 at 256: 512 tokens of
// 1152; at 512: 2048 tokens; 16 heads of 72), in fp16 and bf16 where the op takes a dtype, and
// the cuBLASLt linear layers of one block. Each iteration flushes the L2 cache, then runs the
// kernel on one of three input sets in rotation (filled once with random values), timed with
// CUDA events on the benchmark's stream. Counters: `bytes` (compulsory traffic: each input read
// once, each output written once) and `flops` per launch and their rates over the GPU time.
#include <benchmark/benchmark.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/support/gpu_support.h"
#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/attention_flash.h"
#include "kernels/bias_activation.h"
#include "kernels/class_embed.h"
#include "kernels/gated_residual.h"
#include "kernels/group_norm.h"
#include "kernels/guidance.h"
#include "kernels/layernorm_modulate.h"
#include "kernels/noise.h"
#include "kernels/patch_embed.h"
#include "kernels/residual_layernorm.h"
#include "kernels/sampler_step.h"
#include "kernels/timestep_embed.h"
#include "kernels/unpatchify.h"
#include "kernels/upsample.h"
#include "kernels/vae_bias.h"
#include "kernels/vae_softmax.h"
#include "model/cuda/cublaslt_gemm.h"

namespace {

using dit::cuda::DeviceDtype;

constexpr int kRotation = 3;  // input sets cycled through, one per iteration
constexpr int kHidden = 1152, kHeads = 16, kHeadDim = 72, kMlp = 4608, kChannels = 4, kOutChannels = 8;
constexpr int kPatch = 2, kBatch = 2;

// ---------------------------------------------------------------------------------------------
// Device buffers

enum class Fill { normal, timesteps, labels, positive };

struct BufferSpec {
  size_t elements;
  DeviceDtype dtype;  // f32, f16 or bf16; integer buffers say so with Fill and use int64
  Fill fill = Fill::normal;
  size_t bytes() const {
    return fill == Fill::timesteps || fill == Fill::labels ? elements * sizeof(int64_t)
                                                           : elements * dit::cuda::dtype_bytes(dtype);
  }
};

class DeviceBuffer {
 public:
  DeviceBuffer(const BufferSpec& spec, uint64_t seed) {
    DIT_BENCH_CUDA(cudaMalloc(&pointer_, spec.bytes()));
    std::mt19937_64 generator(seed);
    std::normal_distribution<float> normal;
    std::vector<unsigned char> host(spec.bytes());
    for (size_t i = 0; i < spec.elements; ++i) {
      if (spec.fill == Fill::timesteps || spec.fill == Fill::labels) {
        const int64_t value = static_cast<int64_t>(generator() % (spec.fill == Fill::timesteps ? 1000 : 1001));
        std::memcpy(host.data() + i * sizeof(int64_t), &value, sizeof value);
        continue;
      }
      const float value = spec.fill == Fill::positive ? 0.5f + std::abs(normal(generator)) : normal(generator);
      if (spec.dtype == DeviceDtype::f32) {
        std::memcpy(host.data() + i * 4, &value, 4);
      } else if (spec.dtype == DeviceDtype::f16) {
        const __half half = __float2half(value);
        std::memcpy(host.data() + i * 2, &half, 2);
      } else {
        const __nv_bfloat16 bf = __float2bfloat16(value);
        std::memcpy(host.data() + i * 2, &bf, 2);
      }
    }
    DIT_BENCH_CUDA(cudaMemcpy(pointer_, host.data(), host.size(), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(pointer_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return pointer_; }

 private:
  void* pointer_ = nullptr;
};

// The buffers of one launch: inputs[set][i] rotate, outputs[i] are shared.
struct Buffers {
  std::vector<std::vector<std::unique_ptr<DeviceBuffer>>> inputs;
  std::vector<std::unique_ptr<DeviceBuffer>> outputs;
  template <typename T = void>
  T* in(int set, size_t i) const {
    return static_cast<T*>(inputs[set][i]->get());
  }
  template <typename T = void>
  T* out(size_t i) const {
    return static_cast<T*>(outputs[i]->get());
  }
};

using Launch = std::function<void(const Buffers&, int set, cudaStream_t)>;

struct KernelCase {
  std::vector<BufferSpec> inputs, outputs;
  double flops = 0;
  double written_in_place = 0;  // bytes an in-place op writes back into an input
  Launch launch;
};

double traffic(const KernelCase& c) {
  double bytes = c.written_in_place;
  for (const BufferSpec& b : c.inputs) bytes += static_cast<double>(b.bytes());
  for (const BufferSpec& b : c.outputs) bytes += static_cast<double>(b.bytes());
  return bytes;
}

void run_kernel(benchmark::State& state, const KernelCase& c) {
  cudaStream_t stream = nullptr;
  try {
    DIT_BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Buffers buffers;
    uint64_t seed = 1;
    for (int set = 0; set < kRotation; ++set) {
      buffers.inputs.emplace_back();
      for (const BufferSpec& spec : c.inputs)
        buffers.inputs.back().push_back(std::make_unique<DeviceBuffer>(spec, seed++));
    }
    for (const BufferSpec& spec : c.outputs) buffers.outputs.push_back(std::make_unique<DeviceBuffer>(spec, seed++));
    dit::bench::L2Flusher flusher;
    dit::bench::EventTimer timer(stream);
    dit::bench::RateCounters rates(traffic(c), c.flops);
    c.launch(buffers, 0, stream);  // warm-up: module load, JIT, library plans
    DIT_BENCH_CUDA(cudaStreamSynchronize(stream));
    int set = 0;
    for (auto _ : state) {
      set = (set + 1) % kRotation;
      flusher.flush(stream);
      timer.start();
      c.launch(buffers, set, stream);
      const double seconds = timer.stop_seconds();
      state.SetIterationTime(seconds);
      rates.add(seconds);
    }
    rates.publish(state);
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
  }
  if (stream) cudaStreamDestroy(stream);
}

void add(const std::string& name, KernelCase c) {
  benchmark::RegisterBenchmark(name.c_str(), [c = std::move(c)](benchmark::State& state) { run_kernel(state, c); })
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

// ---------------------------------------------------------------------------------------------
// The cases

const DeviceDtype f32 = DeviceDtype::f32;

const char* suffix(DeviceDtype dtype) {
  return dtype == DeviceDtype::f16 ? "fp16" : dtype == DeviceDtype::bf16 ? "bf16" : "fp32";
}

// One GemmRunner for every GEMM case, made on first use and never destroyed: destroying a
// cuBLASLt handle from a static destructor would race the CUDA runtime's own teardown.
dit::cuda::GemmRunner& gemm_runner() {
  static dit::cuda::GemmRunner* runner = [] {
    void* workspace = nullptr;
    DIT_BENCH_CUDA(cudaMalloc(&workspace, dit::cuda::GemmRunner::kWorkspaceBytes));
    return new dit::cuda::GemmRunner(workspace);
  }();
  return *runner;
}

void add_gemm(const std::string& layer, int M, int N, int K, DeviceDtype dtype, dit::cuda::GemmEpilogue epilogue,
              DeviceDtype output) {
  KernelCase c;
  c.inputs = {
      {static_cast<size_t>(M) * K, dtype}, {static_cast<size_t>(N) * K, dtype}, {static_cast<size_t>(N), output}};
  c.outputs = {{static_cast<size_t>(M) * N, output}};
  c.flops = 2.0 * M * N * K;
  c.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::GemmArgs args;
    args.in = b.in(set, 0);
    args.weight = b.in(set, 1);
    args.bias = b.in(set, 2);
    args.out = b.out(0);
    args.M = M;
    args.N = N;
    args.K = K;
    args.operands = dtype;
    args.output = output;
    args.epilogue = epilogue;
    gemm_runner().linear(args, stream);
  };
  add("gemm/" + layer + "/m" + std::to_string(M) + "_n" + std::to_string(N) + "_k" + std::to_string(K) + "_" +
          suffix(dtype),
      std::move(c));
}

// The GEMMs of one block and the final layer; the adaLN GEMM has M = batch at every size.
void add_block_gemms(int tokens, DeviceDtype dtype) {
  using dit::cuda::GemmEpilogue;
  add_gemm("qkv", tokens, 3 * kHidden, kHidden, dtype, GemmEpilogue::bias, dtype);
  add_gemm("proj", tokens, kHidden, kHidden, dtype, GemmEpilogue::bias, f32);
  add_gemm("fc1_gelu", tokens, kMlp, kHidden, dtype, GemmEpilogue::gelu_bias, dtype);
  add_gemm("fc2", tokens, kHidden, kMlp, dtype, GemmEpilogue::bias, f32);
  add_gemm("final", tokens, kPatch * kPatch * kOutChannels, kHidden, dtype, GemmEpilogue::bias, f32);
}

void add_transformer_kernels(int image_size, DeviceDtype dtype) {
  const int S = image_size / 8, T = (S / kPatch) * (S / kPatch), tokens = kBatch * T;
  const size_t activations = static_cast<size_t>(tokens) * kHidden;
  const std::string shape = "/b" + std::to_string(kBatch) + "_t" + std::to_string(T);
  const std::string typed = shape + "_" + suffix(dtype);

  KernelCase attention;
  attention.inputs = {{static_cast<size_t>(tokens) * 3 * kHidden, dtype}};
  attention.outputs = {{activations, dtype}};
  attention.flops = 4.0 * kBatch * kHeads * static_cast<double>(T) * T * kHeadDim;
  KernelCase naive = attention;
  naive.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::attention_naive(b.in(set, 0), b.out(0), dtype, kBatch, T, kHeads, kHeadDim, stream);
  };
  add("attention_naive" + shape + "_h16_d72_" + suffix(dtype), std::move(naive));
  // The engine's dispatch: the tensor-core kernel where it supports the head size, else naive.
  attention.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::attention(b.in(set, 0), b.out(0), dtype, kBatch, T, kHeads, kHeadDim, stream);
  };
  add("attention" + shape + "_h16_d72_" + suffix(dtype), std::move(attention));

  KernelCase residual_norm;  // the gated residual fused with the next LayerNorm + modulation
  // the branch in the compute dtype, as the engine stores it
  residual_norm.inputs = {{activations, f32}, {activations, dtype}, {static_cast<size_t>(kBatch) * 6 * kHidden, f32}};
  residual_norm.outputs = {{activations, dtype}};
  residual_norm.written_in_place = static_cast<double>(activations) * 4;
  residual_norm.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    const float* modulation = b.in<float>(set, 2);
    dit::cuda::residual_layernorm_modulate(b.in<float>(set, 0), b.in(set, 1), dtype, modulation + 2 * kHidden,
                                           6 * kHidden, modulation + 3 * kHidden, modulation + 4 * kHidden, 6 * kHidden,
                                           b.out(0), dtype, kBatch, T, kHidden, 1e-6f, stream);
  };
  add("residual_layernorm_modulate" + typed, std::move(residual_norm));

  KernelCase bias_gelu;  // the fallback where cuBLASLt has no fused GELU epilogue (fc1)
  bias_gelu.inputs = {{static_cast<size_t>(kMlp), dtype}};
  bias_gelu.outputs = {{static_cast<size_t>(tokens) * kMlp, dtype}};
  bias_gelu.written_in_place = static_cast<double>(tokens) * kMlp * dit::cuda::dtype_bytes(dtype);
  bias_gelu.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::bias_activation(b.out(0), b.in(set, 0), dtype, tokens, kMlp, true, stream);
  };
  add("bias_gelu/m" + std::to_string(tokens) + "_n" + std::to_string(kMlp) + "_" + suffix(dtype), std::move(bias_gelu));

  KernelCase layernorm;
  layernorm.inputs = {{activations, f32}, {static_cast<size_t>(kBatch) * 6 * kHidden, f32}};
  layernorm.outputs = {{activations, dtype}};
  layernorm.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    const float* modulation = b.in<float>(set, 1);
    dit::cuda::layernorm_modulate(b.in<float>(set, 0), modulation, modulation + kHidden, 6 * kHidden, b.out(0), dtype,
                                  kBatch, T, kHidden, 1e-6f, stream);
  };
  add("layernorm_modulate" + typed, std::move(layernorm));

  KernelCase patch_norm;  // the patch embedding fused with the first LayerNorm + modulation
  patch_norm.inputs = {{static_cast<size_t>(kBatch) * kChannels * S * S, f32},
                       {static_cast<size_t>(kHidden) * kChannels * kPatch * kPatch, f32},
                       {static_cast<size_t>(kHidden), f32},
                       {static_cast<size_t>(T) * kHidden, f32},
                       {static_cast<size_t>(kBatch) * 6 * kHidden, f32}};
  patch_norm.outputs = {{activations, f32}, {activations, dtype}};
  patch_norm.flops = 2.0 * tokens * kHidden * kChannels * kPatch * kPatch;
  patch_norm.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    const float* modulation = b.in<float>(set, 4);
    dit::cuda::patch_embed_layernorm_modulate(
        b.in<float>(set, 0), b.in<float>(set, 1), b.in<float>(set, 2), b.in<float>(set, 3), b.out<float>(0), modulation,
        modulation + kHidden, 6 * kHidden, b.out(1), dtype, kBatch, kChannels, S, kPatch, kHidden, 1e-6f, stream);
  };
  add("patch_embed_layernorm" + typed, std::move(patch_norm));

  KernelCase gelu;
  gelu.inputs = {{static_cast<size_t>(tokens) * kMlp, dtype}};
  gelu.outputs = {{static_cast<size_t>(tokens) * kMlp, dtype}};
  gelu.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::gelu_tanh(b.in(set, 0), b.out(0), dtype, static_cast<int64_t>(tokens) * kMlp, stream);
  };
  add("gelu_tanh/n" + std::to_string(tokens * kMlp) + "_" + suffix(dtype), std::move(gelu));
}

// float32-only ops of the DiT and the sampler, at one image size.
void add_float_kernels(int image_size) {
  const int S = image_size / 8, g = S / kPatch, T = g * g, tokens = kBatch * T, HW = S * S;
  const size_t activations = static_cast<size_t>(tokens) * kHidden;
  const std::string shape = "/b" + std::to_string(kBatch) + "_t" + std::to_string(T);

  KernelCase patch;
  patch.inputs = {{static_cast<size_t>(kBatch) * kChannels * HW, f32},
                  {static_cast<size_t>(kHidden) * kChannels * kPatch * kPatch, f32},
                  {static_cast<size_t>(kHidden), f32},
                  {static_cast<size_t>(T) * kHidden, f32}};
  patch.outputs = {{activations, f32}};
  patch.flops = 2.0 * tokens * kHidden * kChannels * kPatch * kPatch;
  patch.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::patch_embed(b.in<float>(set, 0), b.in<float>(set, 1), b.in<float>(set, 2), b.in<float>(set, 3),
                           b.out<float>(0), kBatch, kChannels, S, kPatch, kHidden, stream);
  };
  add("patch_embed" + shape + "_fp32", std::move(patch));

  KernelCase residual;
  residual.inputs = {{activations, f32}, {activations, f32}, {static_cast<size_t>(kBatch) * 6 * kHidden, f32}};
  residual.written_in_place = static_cast<double>(activations) * 4;
  residual.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::gated_residual(b.in<float>(set, 0), b.in<float>(set, 1), b.in<float>(set, 2) + 2 * kHidden, 6 * kHidden,
                              kBatch, T, kHidden, stream);
  };
  add("gated_residual" + shape + "_fp32", std::move(residual));

  KernelCase unpatch;
  unpatch.inputs = {{static_cast<size_t>(tokens) * kPatch * kPatch * kOutChannels, f32}};
  unpatch.outputs = {{static_cast<size_t>(kBatch) * kOutChannels * HW, f32}};
  unpatch.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::unpatchify(b.in<float>(set, 0), b.out<float>(0), kBatch, g, kPatch, kOutChannels, stream);
  };
  add("unpatchify" + shape + "_fp32", std::move(unpatch));

  KernelCase guidance;
  guidance.inputs = {{static_cast<size_t>(kBatch) * kOutChannels * HW, f32}};
  guidance.written_in_place = static_cast<double>(kBatch) * 3 * HW * 4;
  guidance.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::guidance_combine(b.in<float>(set, 0), kBatch / 2, kOutChannels, HW, 4.0f, 3, stream);
  };
  add("guidance_combine/b" + std::to_string(kBatch) + "_hw" + std::to_string(HW) + "_fp32", std::move(guidance));

  KernelCase step;
  step.inputs = {{static_cast<size_t>(kBatch) * kChannels * HW, f32},
                 {static_cast<size_t>(kBatch) * kOutChannels * HW, f32},
                 {static_cast<size_t>(kBatch) * kChannels * HW, f32}};
  step.written_in_place = static_cast<double>(kBatch) * kChannels * HW * 4;
  step.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    const dit::StepCoefficients k{1.0002f, 0.02f, 0.3f, 0.7f, -9.0f, -4.0f, 0.99f, 0.995f, false};
    dit::cuda::ddpm_step(b.in<float>(set, 0), b.in<float>(set, 1), b.in<float>(set, 2), kBatch, kChannels, HW, k,
                         stream);
  };
  add("ddpm_step/b" + std::to_string(kBatch) + "_hw" + std::to_string(HW) + "_fp32", std::move(step));

  KernelCase noise;
  noise.inputs = {{static_cast<size_t>(kBatch), f32, Fill::timesteps},
                  {static_cast<size_t>(kBatch), f32, Fill::labels}};
  noise.outputs = {{static_cast<size_t>(kBatch) * kChannels * HW, f32}};
  noise.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    // Any 64-bit seeds and 32-bit streams do: the rotated int64 buffers serve as both.
    dit::cuda::gaussian_noise_rows(b.in<uint64_t>(set, 0), b.in<uint32_t>(set, 1), 7, b.out<float>(0), kBatch,
                                   static_cast<int64_t>(kChannels) * HW, stream);
  };
  add("gaussian_noise_rows/b" + std::to_string(kBatch) + "_n" + std::to_string(kChannels * HW) + "_fp32",
      std::move(noise));
}

void add_conditioning_kernels() {
  for (DeviceDtype dtype : {DeviceDtype::f16, DeviceDtype::bf16}) {
    KernelCase silu;
    silu.inputs = {{static_cast<size_t>(kBatch) * kHidden, f32}};
    silu.outputs = {{static_cast<size_t>(kBatch) * kHidden, dtype}};
    silu.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
      dit::cuda::silu(b.in<float>(set, 0), b.out(0), dtype, static_cast<int64_t>(kBatch) * kHidden, stream);
    };
    add("silu/n" + std::to_string(kBatch * kHidden) + "_" + suffix(dtype), std::move(silu));
  }

  KernelCase timestep;
  timestep.inputs = {{static_cast<size_t>(kBatch), f32, Fill::timesteps}};
  timestep.outputs = {{static_cast<size_t>(kBatch) * 256, f32}};
  timestep.launch = [](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::timestep_embed(b.in<int64_t>(set, 0), b.out<float>(0), kBatch, 256, 10000.0f, stream);
  };
  add("timestep_embed/b2_d256_fp32", std::move(timestep));

  KernelCase label;
  label.inputs = {{static_cast<size_t>(kBatch) * kHidden, f32},
                  {static_cast<size_t>(1001) * kHidden, f32},
                  {static_cast<size_t>(kBatch), f32, Fill::labels}};
  label.outputs = {{static_cast<size_t>(kBatch) * kHidden, f32}};
  label.launch = [](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::class_embed_add(b.in<float>(set, 0), b.in<float>(set, 1), b.in<int64_t>(set, 2), b.out<float>(0), kBatch,
                               kHidden, 1001, nullptr, stream);
  };
  add("class_embed_add/b2_d1152_fp32", std::move(label));
}

// The VAE decoder's own kernels at the shapes of a 256 image (and the largest ones of 512).
void add_vae_kernels(DeviceDtype dtype) {
  struct NormShape {
    int64_t pixels;
    int channels;
  };
  for (const NormShape& s : {NormShape{32 * 32, 512}, NormShape{256 * 256, 128}, NormShape{512 * 512, 128}}) {
    KernelCase norm;
    const size_t elements = static_cast<size_t>(s.pixels) * s.channels;
    norm.inputs = {{elements, dtype},
                   {static_cast<size_t>(s.channels), f32, Fill::positive},
                   {static_cast<size_t>(s.channels), f32}};
    norm.outputs = {{elements, dtype}, {dit::cuda::group_norm_workspace_floats(1, s.pixels, 32), f32}};
    norm.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
      dit::cuda::group_norm(b.in(set, 0), b.in<float>(set, 1), b.in<float>(set, 2), b.out(0), dtype, 1, s.pixels,
                            s.channels, 32, 1e-6f, true, b.out<float>(1), stream);
    };
    add("group_norm_silu/p" + std::to_string(s.pixels) + "_c" + std::to_string(s.channels) + "_g32_" + suffix(dtype),
        std::move(norm));
  }
  struct UpShape {
    int size, channels;
  };
  for (const UpShape& s : {UpShape{32, 512}, UpShape{128, 256}}) {
    KernelCase up;
    const size_t elements = static_cast<size_t>(s.size) * s.size * s.channels;
    up.inputs = {{elements, dtype}};
    up.outputs = {{4 * elements, dtype}};
    up.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
      dit::cuda::upsample_nearest2x(b.in(set, 0), b.out(0), dtype, 1, s.size, s.size, s.channels, stream);
    };
    add("upsample_nearest2x/s" + std::to_string(s.size) + "_c" + std::to_string(s.channels) + "_" + suffix(dtype),
        std::move(up));
  }
  KernelCase bias;  // after a convolution at the full resolution of a 256 image: 65536 pixels x 128
  bias.inputs = {{static_cast<size_t>(256) * 256 * 128, dtype}, {128, f32}};
  bias.written_in_place = 256.0 * 256 * 128 * dit::cuda::dtype_bytes(dtype);
  bias.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::vae_add_bias(b.in(set, 0), b.in<float>(set, 1), dtype, 256 * 256, 128, stream);
  };
  add(std::string("vae_add_bias/r65536_c128_") + suffix(dtype), std::move(bias));

  KernelCase softmax;  // mid-block attention scores at 256: 1024 pixels attend to 1024
  softmax.inputs = {{1024 * 1024, dtype}};
  softmax.outputs = {{1024 * 1024, dtype}};
  softmax.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
    dit::cuda::vae_softmax(b.in(set, 0), b.out(0), dtype, 1024, 1024, stream);
  };
  add(std::string("vae_softmax/r1024_l1024_") + suffix(dtype), std::move(softmax));
}

// Every flash attention form on the transformer's shapes (batch 2 and 64 at 256, batch 2 at 512):
// the measurements behind attention_flash_default_form.
void add_attention_forms() {
  struct Shape {
    int batch, T;
  };
  for (const Shape& shape : {Shape{2, 256}, Shape{64, 256}, Shape{2, 1024}})
    for (const dit::cuda::FlashForm form : dit::cuda::attention_flash_forms()) {
      KernelCase c;
      const size_t tokens = static_cast<size_t>(shape.batch) * shape.T;
      c.inputs = {{tokens * 3 * kHidden, DeviceDtype::f16}};
      c.outputs = {{tokens * kHidden, DeviceDtype::f16}};
      c.flops = 4.0 * shape.batch * kHeads * static_cast<double>(shape.T) * shape.T * kHeadDim;
      c.launch = [=](const Buffers& b, int set, cudaStream_t stream) {
        dit::cuda::attention_flash(b.in(set, 0), b.out(0), DeviceDtype::f16, shape.batch, shape.T, kHeads, kHeadDim,
                                   form, stream);
      };
      add("attention_form/" + dit::cuda::flash_form_name(form) + "/b" + std::to_string(shape.batch) + "_t" +
              std::to_string(shape.T) + "_h16_d72_fp16",
          std::move(c));
    }
}

const bool registered = [] {
  add_attention_forms();
  add_conditioning_kernels();
  for (int image_size : {256, 512}) {
    add_float_kernels(image_size);
    for (DeviceDtype dtype : {DeviceDtype::f16, DeviceDtype::bf16}) add_transformer_kernels(image_size, dtype);
  }
  for (DeviceDtype dtype : {DeviceDtype::f16, DeviceDtype::bf16}) {
    add_gemm("adaln", kBatch, 6 * kHidden, kHidden, dtype, dit::cuda::GemmEpilogue::bias, f32);
    add_block_gemms(kBatch * 256, dtype);
    add_block_gemms(kBatch * 1024, dtype);
    add_vae_kernels(dtype);
  }
  return true;
}();

}  // namespace
