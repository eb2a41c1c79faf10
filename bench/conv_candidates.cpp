// conv_candidates: every cuDNN forward algorithm for the SD VAE decoder's convolutions, timed
// by cuDNN (cudnnFindConvolutionForwardAlgorithmEx on our buffers), beside the algorithm the
// engine takes (model/cuda/vae_cuda_conv.h: the heuristic ranking, deterministic algorithms only) and
// its own measured time. A research tool, not a benchmark: it says how much of a decode the
// convolutions are, and whether another deterministic algorithm would be faster at a shape, which
// a persisted per-shape choice could then encode. The engine never times algorithms itself.
//
// Shapes: the decoder's graph walked as the engine walks it (model/vae_layout.h), batch 1, NHWC,
// channels padded to 8 as on the device. Each distinct shape once, weighted by how often the
// graph runs it.
//
//   conv_candidates [--image 256,512] [--precisions fp16,fp32] [--runs 10] [--json OUT.json]
#include <cudnn.h>
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/support/gpu_support.h"
#include "bench/support/tool_arguments.h"
#include "kernels/cuda_check.h"
#include "model/vae.h"
#include "model/cuda/vae_cuda_conv.h"
#include "model/vae_layout.h"

namespace {

using dit::cuda::ConvShape;

using dit::bench::DeviceBuffer;

int pad8(int c) { return (c + 7) / 8 * 8; }

// Distinct convolution shapes of one decode at latent size S, with how often each runs.
std::map<ConvShape, int> decode_shapes(int S) {
  const dit::vae::DecoderLayout layout = dit::vae::decoder_layout(dit::sd_vae_config());
  std::map<ConvShape, int> shapes;
  auto add = [&](int in, int out, int k, int size) { ++shapes[ConvShape{1, size, size, in, out, k}]; };
  const int latent = pad8(layout.latent_channels);
  add(latent, latent, 1, S);
  add(latent, layout.top_channels, 3, S);
  int size = S;
  auto resnet = [&](const dit::vae::ResnetLayout& r) {
    add(r.in_channels, r.out_channels, 3, size);
    add(r.out_channels, r.out_channels, 3, size);
    if (r.has_shortcut()) add(r.in_channels, r.out_channels, 1, size);
  };
  resnet(layout.mid_resnets[0]);
  resnet(layout.mid_resnets[1]);
  for (const auto& block : layout.up_blocks) {
    for (const auto& r : block.resnets) resnet(r);
    if (!block.upsampler_prefix.empty()) {
      size *= 2;
      add(block.channels, block.channels, 3, size);
    }
  }
  add(layout.bottom_channels, pad8(layout.out_channels), 3, size);
  return shapes;
}

const char* algorithm_label(cudnnConvolutionFwdAlgo_t a) {
  static const char* names[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
                                "WINOGRAD",      "WINOGRAD_NONFUSED"};
  return a >= 0 && a < 8 ? names[a] : "unknown";
}
const char* math_label(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor-op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor-op-conv";
    case CUDNN_FMA_MATH: return "fma";
    default: return "?";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times cuDNN's forward algorithms for the SD VAE decoder's convolutions"};
  std::vector<int> images{256, 512};
  std::vector<std::string> precisions{"fp16", "fp32"};
  int runs = 10;
  std::string json_path;
  app.add_option("--image", images, "image sizes")->delimiter(',');
  app.add_option("--precisions", precisions, "fp16, bf16, fp32")->delimiter(',');
  app.add_option("--runs", runs, "timed runs of the engine's algorithm (median)")->check(CLI::Range(1, 1000));
  app.add_option("--json", json_path, "write every figure here");
  if (const auto code = dit::bench::parse_tool_arguments(app, argc, argv)) return *code;
  try {
    const std::optional<std::string> gpu = dit::bench::first_gpu_name();
    if (!gpu) {
      std::fprintf(stderr, "conv_candidates: no GPU\n");
      return 2;
    }
    cudnnHandle_t handle = nullptr;
    DIT_CUDNN_CHECK(cudnnCreate(&handle));
    cudaStream_t stream = nullptr;
    DIT_CUDA_CHECK(cudaStreamCreate(&stream));
    DIT_CUDNN_CHECK(cudnnSetStream(handle, stream));
    cudaEvent_t start = nullptr, stop = nullptr;
    DIT_CUDA_CHECK(cudaEventCreate(&start));
    DIT_CUDA_CHECK(cudaEventCreate(&stop));
    constexpr size_t kWorkspace = dit::cuda::kConvWorkspaceLimit;
    DeviceBuffer workspace(kWorkspace);
    nlohmann::json document{{"gpu", *gpu}, {"cudnn", cudnnGetVersion()}, {"shapes", nlohmann::json::array()}};
    std::printf("%-5s %5s %4s %4s %2s %4s %5s  %-30s %9s  %-36s %9s  %9s\n", "prec", "image", "in", "out", "k", "HW",
                "count", "engine algorithm", "engine_us", "fastest deterministic", "fast_us", "any_us");
    for (const std::string& precision_text : precisions) {
      const dit::Precision precision = dit::parse_precision(precision_text);
      const cudnnDataType_t type = dit::cuda::cudnn_dtype(dit::cuda::storage_dtype(precision));
      const size_t element = precision == dit::Precision::fp32 ? 4 : 2;
      for (int image : images) {
        double engine_total = 0, fastest_total = 0;
        for (const auto& [shape, count] : decode_shapes(image / 8)) {
          const size_t pixels = size_t(shape.N) * shape.H * shape.W;
          DeviceBuffer in(pixels * shape.in_channels * element), out(pixels * shape.out_channels * element);
          DeviceBuffer weight(size_t(shape.out_channels) * shape.kernel * shape.kernel * shape.in_channels * element);
          DIT_CUDA_CHECK(cudaMemset(in.get(), 0x11, pixels * shape.in_channels * element));
          DIT_CUDA_CHECK(
              cudaMemset(weight.get(), 0x11,
                         size_t(shape.out_channels) * shape.kernel * shape.kernel * shape.in_channels * element));
          // The engine's choice, timed as it runs.
          dit::cuda::CudnnConv engine(handle, shape, precision);
          std::vector<float> times;
          engine.run(in.get(), weight.get(), out.get(), false, workspace.get());
          for (int r = 0; r < runs; ++r) {
            DIT_CUDA_CHECK(cudaEventRecord(start, stream));
            engine.run(in.get(), weight.get(), out.get(), false, workspace.get());
            DIT_CUDA_CHECK(cudaEventRecord(stop, stream));
            DIT_CUDA_CHECK(cudaEventSynchronize(stop));
            float ms = 0;
            DIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
            times.push_back(ms * 1000);
          }
          std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
          const double engine_us = times[times.size() / 2];

          // cuDNN's own timing of every algorithm, on the same buffers.
          cudnnTensorDescriptor_t in_desc = nullptr, out_desc = nullptr;
          cudnnFilterDescriptor_t filter = nullptr;
          cudnnConvolutionDescriptor_t conv = nullptr;
          DIT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&in_desc));
          DIT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&out_desc));
          DIT_CUDNN_CHECK(cudnnCreateFilterDescriptor(&filter));
          DIT_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
          DIT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(in_desc, CUDNN_TENSOR_NHWC, type, shape.N, shape.in_channels,
                                                     shape.H, shape.W));
          DIT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(out_desc, CUDNN_TENSOR_NHWC, type, shape.N, shape.out_channels,
                                                     shape.H, shape.W));
          DIT_CUDNN_CHECK(cudnnSetFilter4dDescriptor(filter, type, CUDNN_TENSOR_NHWC, shape.out_channels,
                                                     shape.in_channels, shape.kernel, shape.kernel));
          const int pad = shape.kernel / 2;
          DIT_CUDNN_CHECK(
              cudnnSetConvolution2dDescriptor(conv, pad, pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
          DIT_CUDNN_CHECK(cudnnSetConvolutionMathType(
              conv, precision == dit::Precision::fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
          std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT * 2);
          int returned = 0;
          DIT_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(handle, in_desc, in.get(), filter, weight.get(), conv,
                                                                 out_desc, out.get(), static_cast<int>(perf.size()),
                                                                 &returned, perf.data(), workspace.get(), kWorkspace));
          nlohmann::json rows = nlohmann::json::array();
          double fastest_det = -1, fastest_any = -1;
          std::string fastest_name = "none";
          for (int i = 0; i < returned; ++i) {
            const auto& p = perf[i];
            if (p.status != CUDNN_STATUS_SUCCESS) continue;
            const bool det = p.determinism == CUDNN_DETERMINISTIC;
            const double us = p.time * 1000.0;
            rows.push_back({{"algorithm", algorithm_label(p.algo)},
                            {"math", math_label(p.mathType)},
                            {"deterministic", det},
                            {"workspace", p.memory},
                            {"us", us}});
            if (fastest_any < 0 || us < fastest_any) fastest_any = us;
            if (det && (fastest_det < 0 || us < fastest_det)) {
              fastest_det = us;
              fastest_name = std::string(algorithm_label(p.algo)) + "/" + math_label(p.mathType);
            }
          }
          cudnnDestroyConvolutionDescriptor(conv);
          cudnnDestroyFilterDescriptor(filter);
          cudnnDestroyTensorDescriptor(in_desc);
          cudnnDestroyTensorDescriptor(out_desc);
          engine_total += count * engine_us;
          fastest_total += count * (fastest_det < 0 ? engine_us : std::min(engine_us, fastest_det));
          std::printf("%-5s %5d %4d %4d %2d %4d %5d  %-30s %9.1f  %-36s %9.1f  %9.1f\n", precision_text.c_str(), image,
                      shape.in_channels, shape.out_channels, shape.kernel, shape.H, count,
                      engine.algorithm_name().c_str(), engine_us, fastest_name.c_str(), fastest_det, fastest_any);
          std::fflush(stdout);
          document["shapes"].push_back({{"precision", precision_text},
                                        {"image", image},
                                        {"in", shape.in_channels},
                                        {"out", shape.out_channels},
                                        {"kernel", shape.kernel},
                                        {"size", shape.H},
                                        {"count", count},
                                        {"engine_algorithm", engine.algorithm_name()},
                                        {"engine_us", engine_us},
                                        {"candidates", rows}});
        }
        std::printf("%-5s %5d  convolutions of one decode: engine %.2f ms, fastest deterministic per shape %.2f ms\n",
                    precision_text.c_str(), image, engine_total / 1000, fastest_total / 1000);
      }
    }
    if (!json_path.empty()) std::ofstream(json_path) << document.dump(1) << "\n";
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaStreamDestroy(stream);
    cudnnDestroy(handle);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "conv_candidates: %s\n", error.what());
    return 1;
  }
  return 0;
}
