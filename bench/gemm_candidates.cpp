// gemm_candidates: every cuBLASLt algorithm the heuristic offers for the linear layers of
// DiT-XL/2, timed one by one, beside the one the engine takes (the heuristic's first, as in
// model/cuda/cublaslt_gemm.cpp); for proj and fc2 also the gated residual folded into the epilogue
// (a per-column alpha vector per batch entry, beta 1, in place; into a float32 and into a 16-bit
// residual stream), which the engine does not use. A research tool, not a benchmark: it answers
// "is the heuristic's pick the fast one at this shape on this GPU, and what does the fast one
// look like" (tile, stages, split-K, swizzle), which a deterministic per-shape choice can then
// encode. The engine never times algorithms at startup.
//
// Layout as in the engine: row-major out[M, N] = in[M, K] * W[N, K]^T is the column-major
// out^T = op(W) * in^T with W transposed. Each timed call follows an L2 flush (a 256 MB memset),
// on random inputs; the figure is the median of --runs calls, from CUDA events.
//
//   gemm_candidates [--tokens 512,2048,16384] [--precisions fp16,fp32] [--candidates 24]
//                   [--runs 15] [--json OUT.json]
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <random>
#include <optional>
#include <string>
#include <vector>

#include "bench/support/gpu_support.h"
#include "bench/support/tool_arguments.h"
#include "kernels/cuda_check.h"
#include "model/cuda/cublaslt_gemm.h"

namespace {

struct Layer {
  const char* name;
  int N, K;
  bool gelu;          // fc1: GELU in the epilogue (fp16) or after it (fp32)
  bool float_output;  // proj, fc2: the engine writes float32 (the residual is float32)
};

const Layer kLayers[] = {
    {"qkv", 3456, 1152, false, false},
    {"proj", 1152, 1152, false, true},
    {"fc1", 4608, 1152, true, false},
    {"fc2", 1152, 4608, false, true},
};

struct Config {
  std::string layer;
  int M = 0, N = 0, K = 0;
  cudaDataType_t operands = CUDA_R_16F, output = CUDA_R_16F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  // gated: out = out + gate (.) (in W^T + bias) per batch entry, in place: the gated residual in
  // the epilogue (batches strided batches of M / batches rows, a per-column alpha vector and a
  // per-column bias for each, beta 1), where the engine now writes in W^T + bias for a separate
  // kernel to gate and add.
  bool gated = false;
  int batches = 1;
  std::string label;
};

size_t type_bytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }
const char* type_name(cudaDataType_t t) { return t == CUDA_R_32F ? "f32" : t == CUDA_R_16F ? "f16" : "bf16"; }

using dit::bench::DeviceBuffer;

void fill_random(void* device, size_t count, cudaDataType_t type, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<unsigned char> host(count * type_bytes(type));
  for (size_t i = 0; i < count; ++i) {
    const float v = normal(generator);
    if (type == CUDA_R_32F) {
      std::memcpy(host.data() + 4 * i, &v, 4);
    } else {
      const __half h = __float2half(v);
      std::memcpy(host.data() + 2 * i, &h, 2);
    }
  }
  DIT_CUDA_CHECK(cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice));
}

nlohmann::json describe(const cublasLtMatmulAlgo_t& algo) { return dit::cuda::algo_config(algo); }

constexpr size_t kWorkspaceBytes = 32u << 20;  // the engine's GemmRunner::kWorkspaceBytes
constexpr size_t kFlushBytes = 256u << 20;

nlohmann::json probe(cublasLtHandle_t handle, const Config& c, int candidates, int runs, void* workspace, void* flush,
                     cudaStream_t stream) {
  const int batch_rows = c.M / c.batches;
  DeviceBuffer in(size_t(c.M) * c.K * type_bytes(c.operands)), weight(size_t(c.N) * c.K * type_bytes(c.operands));
  DeviceBuffer out(size_t(c.M) * c.N * type_bytes(c.output)), bias(size_t(c.batches) * c.N * type_bytes(c.output));
  DeviceBuffer gate(size_t(c.batches) * c.N * sizeof(float));
  fill_random(in.get(), size_t(c.M) * c.K, c.operands, 1);
  fill_random(weight.get(), size_t(c.N) * c.K, c.operands, 2);
  fill_random(bias.get(), size_t(c.batches) * c.N, c.output, 3);
  fill_random(gate.get(), size_t(c.batches) * c.N, CUDA_R_32F, 4);
  fill_random(out.get(), size_t(c.M) * c.N, c.output, 5);

  cublasLtMatmulDesc_t desc = nullptr;
  DIT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, c.compute, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose));
  DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep));
  DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &c.epilogue, sizeof c.epilogue));
  const void* bias_pointer = bias.get();
  DIT_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer, sizeof bias_pointer));
  cublasLtMatrixLayout_t w_layout = nullptr, in_layout = nullptr, out_layout = nullptr;
  DIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&w_layout, c.operands, c.K, c.N, c.K));
  DIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&in_layout, c.operands, c.K, batch_rows, c.K));
  DIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&out_layout, c.output, c.N, batch_rows, c.N));
  if (c.batches > 1) {
    auto batch = [&](cublasLtMatrixLayout_t layout, int64_t stride) {
      DIT_CUBLAS_CHECK(
          cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &c.batches, sizeof c.batches));
      DIT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                        sizeof stride));
    };
    batch(w_layout, 0);  // one weight for every batch entry
    batch(in_layout, int64_t{batch_rows} * c.K);
    batch(out_layout, int64_t{batch_rows} * c.N);
    const int64_t vector_stride = c.N;
    DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &vector_stride,
                                                    sizeof vector_stride));
    if (c.gated)
      DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE,
                                                      &vector_stride, sizeof vector_stride));
  }
  if (c.gated) {
    const cublasLtPointerMode_t mode = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST;
    DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof mode));
  }
  cublasLtMatmulPreference_t preference = nullptr;
  DIT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const uint64_t workspace_bytes = kWorkspaceBytes;
  DIT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &workspace_bytes, sizeof workspace_bytes));
  std::vector<cublasLtMatmulHeuristicResult_t> results(candidates);
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle, desc, w_layout, in_layout, out_layout, out_layout, preference, candidates, results.data(), &returned);
  nlohmann::json entry{{"layer", c.layer},     {"M", c.M},         {"N", c.N}, {"K", c.K},
                       {"batches", c.batches}, {"config", c.label}};
  cudaEvent_t start = nullptr, stop = nullptr;
  DIT_CUDA_CHECK(cudaEventCreate(&start));
  DIT_CUDA_CHECK(cudaEventCreate(&stop));
  const float alpha = 1.0f, beta = c.gated ? 1.0f : 0.0f;
  const void* alpha_pointer = c.gated ? gate.get() : static_cast<const void*>(&alpha);
  nlohmann::json rows = nlohmann::json::array();
  for (int i = 0; status == CUBLAS_STATUS_SUCCESS && i < returned; ++i) {
    const cublasLtMatmulAlgo_t& algo = results[i].algo;
    auto call = [&] {
      return cublasLtMatmul(handle, desc, alpha_pointer, weight.get(), w_layout, in.get(), in_layout, &beta, out.get(),
                            out_layout, out.get(), out_layout, &algo, workspace, kWorkspaceBytes, stream);
    };
    nlohmann::json row = describe(algo);
    row["rank"] = i;
    row["waves"] = results[i].wavesCount;
    row["workspace"] = results[i].workspaceSize;
    if (call() != CUBLAS_STATUS_SUCCESS) {
      row["error"] = "cublasLtMatmul refused it";
      rows.push_back(row);
      continue;
    }
    std::vector<float> times;
    for (int r = 0; r < runs; ++r) {
      DIT_CUDA_CHECK(cudaMemsetAsync(flush, r & 0xff, kFlushBytes, stream));
      DIT_CUDA_CHECK(cudaEventRecord(start, stream));
      DIT_CUBLAS_CHECK(call());
      DIT_CUDA_CHECK(cudaEventRecord(stop, stream));
      DIT_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      DIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      times.push_back(ms * 1000.0f);
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    row["us"] = times[times.size() / 2];
    row["tflops"] = 2.0 * c.M * c.N * c.K / (times[times.size() / 2] * 1e-6) / 1e12;
    rows.push_back(row);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cublasLtMatmulPreferenceDestroy(preference);
  cublasLtMatrixLayoutDestroy(w_layout);
  cublasLtMatrixLayoutDestroy(in_layout);
  cublasLtMatrixLayoutDestroy(out_layout);
  cublasLtMatmulDescDestroy(desc);
  entry["status"] = status == CUBLAS_STATUS_SUCCESS ? "ok" : dit::cuda::cublas_status_name(status);
  entry["candidates"] = rows;
  return entry;
}

std::vector<Config> configs(const std::vector<int>& tokens, const std::vector<std::string>& precisions) {
  std::vector<Config> list;
  for (const std::string& precision : precisions) {
    for (int M : tokens) {
      for (const Layer& layer : kLayers) {
        Config c;
        c.layer = layer.name;
        c.M = M;
        c.N = layer.N;
        c.K = layer.K;
        if (precision == "fp32") {
          c.operands = c.output = CUDA_R_32F;
          c.epilogue = CUBLASLT_EPILOGUE_BIAS;
          c.label = "fp32 (f32 in/out, no TF32) +bias";
          list.push_back(c);
          if (layer.gelu) {
            c.epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
            c.label = "fp32 (f32 in/out, no TF32) +bias+gelu";
            list.push_back(c);
          }
          continue;
        }
        c.operands = precision == "bf16" ? CUDA_R_16BF : CUDA_R_16F;
        c.output = layer.float_output ? CUDA_R_32F : c.operands;
        c.epilogue = layer.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
        c.label = precision + " in, " + type_name(c.output) + " out" + (layer.gelu ? " +bias+gelu" : " +bias");
        list.push_back(c);
        if (layer.float_output) {
          // The gated residual in the epilogue, per batch entry (DiT-XL/2's sequences: 256 tokens
          // at 256, 1024 at 512; M = 2048 is batch 2 at 512), then which part is supported: the
          // alpha vector unbatched, with and without the bias. Into a float32 stream, then into
          // a 16-bit one (the engine's fp16 path since 470ccad), with a float32 alpha vector.
          auto push_gated = [&](Config gated) {
            const std::string prefix = precision + " in, " + type_name(gated.output) + " out, x += ";
            gated.gated = true;
            gated.batches = M == 2048 ? 2 : std::max(1, M / 256);
            gated.label = prefix + "gate*(+bias) x" + std::to_string(gated.batches);
            list.push_back(gated);
            gated.batches = 1;
            gated.label = prefix + "alpha*(+bias) x1";
            list.push_back(gated);
            gated.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
            gated.label = prefix + "alpha*(.) x1";
            list.push_back(gated);
          };
          push_gated(c);
          // the alternative: 16-bit output, as PyTorch's fp16 model has
          c.output = c.operands;
          c.label = precision + " in, " + type_name(c.output) + " out +bias (alternative)";
          list.push_back(c);
          push_gated(c);
        }
      }
    }
  }
  return list;
}

std::vector<int> parse_ints(const std::string& text) {
  std::vector<int> values;
  size_t at = 0;
  while (at < text.size()) {
    size_t comma = text.find(',', at);
    values.push_back(std::stoi(text.substr(at, comma - at)));
    at = comma == std::string::npos ? text.size() : comma + 1;
  }
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times every cuBLASLt heuristic candidate for DiT-XL/2's linear layers"};
  std::string tokens = "512,2048,16384", json_path;
  std::vector<std::string> precisions{"fp16", "fp32"};
  int candidates = 24, runs = 15;
  app.add_option("--tokens", tokens, "rows M (batch x tokens), comma-separated");
  app.add_option("--precisions", precisions, "fp16, bf16, fp32")->delimiter(',');
  app.add_option("--candidates", candidates, "heuristic results to ask for")->check(CLI::Range(1, 128));
  app.add_option("--runs", runs, "timed calls per candidate (median)")->check(CLI::Range(1, 1000));
  app.add_option("--json", json_path, "write every figure here");
  if (const auto code = dit::bench::parse_tool_arguments(app, argc, argv)) return *code;
  try {
    const std::optional<std::string> gpu = dit::bench::first_gpu_name();
    if (!gpu) {
      std::fprintf(stderr, "gemm_candidates: no GPU\n");
      return 2;
    }
    cublasLtHandle_t handle = nullptr;
    DIT_CUBLAS_CHECK(cublasLtCreate(&handle));
    cudaStream_t stream = nullptr;
    DIT_CUDA_CHECK(cudaStreamCreate(&stream));
    DeviceBuffer workspace(kWorkspaceBytes), flush(kFlushBytes);
    nlohmann::json document{{"gpu", *gpu}, {"cublaslt", cublasLtGetVersion()}, {"shapes", nlohmann::json::array()}};
    std::printf("%-5s %6s %5s %5s  %-40s %9s %9s %4s  %s\n", "layer", "M", "N", "K", "config", "pick_us", "best_us",
                "rank", "best: id/tile/stages/splitk/swizzle");
    for (const Config& c : configs(parse_ints(tokens), precisions)) {
      nlohmann::json entry = probe(handle, c, candidates, runs, workspace.get(), flush.get(), stream);
      const auto& rows = entry["candidates"];
      double pick = -1, best = -1;
      int best_rank = -1;
      std::string best_config;
      for (const auto& row : rows) {
        if (!row.contains("us")) continue;
        const double us = row["us"].get<double>();
        if (row["rank"] == 0) pick = us;
        if (best < 0 || us < best) {
          best = us;
          best_rank = row["rank"];
          best_config = std::to_string(row["id"].get<int>()) + "/" + std::to_string(row["tile"].get<unsigned>()) + "/" +
                        std::to_string(row["stages"].get<unsigned>()) + "/" +
                        std::to_string(row["split_k"].get<unsigned>()) + "/" +
                        std::to_string(row["swizzle"].get<unsigned>());
        }
      }
      std::printf("%-5s %6d %5d %5d  %-40s %9.1f %9.1f %4d  %s (%zu candidates)\n", c.layer.c_str(), c.M, c.N, c.K,
                  c.label.c_str(), pick, best, best_rank, best_config.c_str(), rows.size());
      std::fflush(stdout);
      document["shapes"].push_back(entry);
    }
    if (!json_path.empty()) std::ofstream(json_path) << document.dump(1) << "\n";
    cudaStreamDestroy(stream);
    cublasLtDestroy(handle);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gemm_candidates: %s\n", error.what());
    return 1;
  }
  return 0;
}
