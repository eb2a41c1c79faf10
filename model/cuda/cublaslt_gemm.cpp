// cuBLASLt linear layers (model/cuda/cublaslt_gemm.h). Row-major out[M, N] = in[M, K] * W[N, K]^T is
// the column-major product out^T[N, M] = op(W)[N, K] * in^T[K, M] with op = transpose on W's
// column-major [K, N] view: m = N, n = M, k = K, and the bias (length m) is per output feature.
#include "model/cuda/cublaslt_gemm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/cublaslt_library.h"
#include "kernels/bias_activation.h"
#include "kernels/cuda_check.h"
#include "model/engine_options.h"

namespace dit::cuda {

namespace {

cudaDataType_t cuda_data_type(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::f32: return CUDA_R_32F;
    case DeviceDtype::f16: return CUDA_R_16F;
    case DeviceDtype::bf16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

std::string describe(const GemmArgs& a) {
  return "linear M=" + std::to_string(a.M) + " N=" + std::to_string(a.N) + " K=" + std::to_string(a.K) +
         " operands=" + dtype_name(a.operands) + " output=" + dtype_name(a.output) +
         (a.compute == GemmCompute::tf32 ? " tf32" : " fp32-compute") +
         (a.epilogue == GemmEpilogue::none   ? ""
          : a.epilogue == GemmEpilogue::bias ? " +bias"
                                             : " +bias+gelu");
}

template <typename T>
int64_t algo_attribute(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute) {
  T value{};
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof value, &written) != CUBLAS_STATUS_SUCCESS)
    return -1;
  return static_cast<int64_t>(value);
}

const char* plan_dtype(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::f32: return "f32";
    case DeviceDtype::f16: return "f16";
    case DeviceDtype::bf16: return "bf16";
  }
  return "f32";
}

constexpr int kMaxCandidates = 64;  // the most heuristic results a plan or tuning asks for

#ifndef DIT_GEMM_PLAN_DIR
#define DIT_GEMM_PLAN_DIR ""
#endif

}  // namespace

GemmTuning& gemm_tuning() {
  static GemmTuning tuning;
  return tuning;
}

std::map<std::string, int64_t> algo_config(const cublasLtMatmulAlgo_t& algo) {
  return {{"id", algo_attribute<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID)},
          {"tile", algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID)},
          {"stages", algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID)},
          {"split_k", algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)},
          {"reduction", algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME)},
          {"swizzle", algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)},
          {"custom", algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION)},
          {"inner_shape", algo_attribute<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID)},
          {"cluster_shape", algo_attribute<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)}};
}

GemmPlanDevice GemmRunner::current_device() {
  int device = 0;
  DIT_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp properties{};
  DIT_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  GemmPlanDevice d;
  d.gpu = properties.name;
  d.compute_capability = std::to_string(properties.major) + "." + std::to_string(properties.minor);
  d.cublaslt_version = static_cast<int64_t>(cublasLtGetVersion());
  d.workspace_bytes = static_cast<int64_t>(kWorkspaceBytes);
  return d;
}

GemmPlanKey GemmRunner::plan_key(const GemmArgs& a) {
  GemmPlanKey key;
  key.M = a.M;
  key.N = a.N;
  key.K = a.K;
  key.operands = plan_dtype(a.operands);
  key.output = plan_dtype(a.output);
  key.compute = a.compute == GemmCompute::tf32 ? "tf32" : "fp32";
  key.epilogue = a.epilogue == GemmEpilogue::none ? "none" : a.epilogue == GemmEpilogue::bias ? "bias" : "gelu_bias";
  return key;
}

std::optional<GemmPlan> GemmRunner::plan_for_current_device(const std::string& setting) {
  if (gemm_candidate_setting(setting)) return std::nullopt;
  return select_gemm_plan(current_device(), setting, DIT_GEMM_PLAN_DIR);
}

GemmRunner::GemmRunner(void* workspace, std::optional<GemmPlan> plan, std::optional<int> forced_candidate)
    : workspace_(workspace), gemm_plan_(std::move(plan)), forced_candidate_(forced_candidate) {
  if (forced_candidate_ && (*forced_candidate_ < 0 || *forced_candidate_ >= kMaxCandidates))
    throw Error(ErrorKind::invalid_argument, "GemmRunner: forced candidate " + std::to_string(*forced_candidate_) +
                                                 " is not below " + std::to_string(kMaxCandidates));
  require_aligned(workspace, kPointerAlignment, "GemmRunner", "workspace");
  // cuBLASLt is opened on first use (core/cublaslt_library.h): a library that cannot be loaded is
  // named here, not reported as a handle that is not initialised.
  if (const std::string missing = preload_cublaslt(); !missing.empty())
    throw Error(ErrorKind::device, "GemmRunner: " + missing);
  DIT_CUBLAS_CHECK(cublasLtCreate(&handle_));
}

GemmRunner::~GemmRunner() {
  finish_preparing();
  // Destruction cannot report: statuses are dropped on purpose here.
  for (auto& [key, plan] : plans_) destroy(plan);
  if (handle_) cublasLtDestroy(handle_);
}

GemmRunner::Key GemmRunner::key_of(const GemmArgs& a) {
  return Key{a.M,
             a.N,
             a.K,
             static_cast<int>(a.operands),
             static_cast<int>(a.output),
             static_cast<int>(a.compute),
             static_cast<int>(a.epilogue)};
}

bool GemmRunner::can_run(const GemmArgs& a, cudaStream_t stream) {
  const Key key = key_of(a);
  if (plans_.count(key)) return true;
  if (unsupported_.count(key)) return false;
  try {
    plan_for(a, stream);
    return true;
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::device) throw;
    unsupported_.insert(key);
    return false;
  }
}

GemmRunner::Plan GemmRunner::make_descriptors(const GemmArgs& a) {
  Plan plan;
  const cublasComputeType_t compute =
      a.compute == GemmCompute::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  DIT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  DIT_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose));
  DIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep));
  const cublasLtEpilogue_t epilogue = a.epilogue == GemmEpilogue::none   ? CUBLASLT_EPILOGUE_DEFAULT
                                      : a.epilogue == GemmEpilogue::bias ? CUBLASLT_EPILOGUE_BIAS
                                                                         : CUBLASLT_EPILOGUE_GELU_BIAS;
  DIT_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  if (a.epilogue != GemmEpilogue::none) {
    // the bias is in the output's dtype, cuBLASLt's default for non-fp8 outputs
    DIT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &a.bias, sizeof a.bias));
  }
  const cudaDataType_t operand_type = cuda_data_type(a.operands), output_type = cuda_data_type(a.output);
  DIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.weight_layout, operand_type, a.K, a.N, a.K));
  DIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.in_layout, operand_type, a.K, a.M, a.K));
  DIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.out_layout, output_type, a.N, a.M, a.N));
  return plan;
}

void GemmRunner::destroy(Plan& plan) {
  cublasLtMatrixLayoutDestroy(plan.weight_layout);
  cublasLtMatrixLayoutDestroy(plan.in_layout);
  cublasLtMatrixLayoutDestroy(plan.out_layout);
  cublasLtMatmulDescDestroy(plan.desc);
  plan = Plan{};
}

cublasStatus_t GemmRunner::query_heuristic(cublasLtHandle_t handle, const Plan& plan, int wanted,
                                           cublasLtMatmulHeuristicResult_t* results, int& returned) {
  returned = 0;
  cublasLtMatmulPreference_t preference = nullptr;
  if (const cublasStatus_t created = cublasLtMatmulPreferenceCreate(&preference); created != CUBLAS_STATUS_SUCCESS)
    return created;
  const uint64_t workspace_bytes = kWorkspaceBytes;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &workspace_bytes, sizeof workspace_bytes);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(handle, plan.desc, plan.weight_layout, plan.in_layout, plan.out_layout,
                                            plan.out_layout, preference, wanted, results, &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  return status;
}

int GemmRunner::heuristic(Plan& plan, const GemmArgs& a, int wanted, cublasLtMatmulHeuristicResult_t* results) {
  finish_preparing(GemmTypes{a.operands, a.output, a.compute});
  int returned = 0;
  const cublasStatus_t status = query_heuristic(handle_, plan, wanted, results, returned);
  if (status != CUBLAS_STATUS_SUCCESS || returned == 0) {
    destroy(plan);
    throw_device_error(
        __FILE__, __LINE__, "cublasLtMatmulAlgoGetHeuristic",
        (status != CUBLAS_STATUS_SUCCESS ? std::string(cublas_status_name(status)) : std::string("no algorithm")) +
            " for " + describe(a));
  }
  return returned;
}

void GemmRunner::prepare(const std::vector<GemmTypes>& types) {
  int device = 0;
  DIT_CUDA_CHECK(cudaGetDevice(&device));
  for (const GemmTypes& t : types) {
    preparing_.emplace_back(t, [device, t] {
      // Best effort: whatever fails here fails again, and is reported, in the plan that needs it.
      if (cudaSetDevice(device) != cudaSuccess) return;
      cublasLtHandle_t handle = nullptr;
      if (cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) return;
      GemmArgs a;
      a.M = a.N = a.K = 64;
      a.operands = t.operands;
      a.output = t.output;
      a.compute = t.compute;
      try {
        Plan plan = make_descriptors(a);
        cublasLtMatmulHeuristicResult_t result{};
        int returned = 0;
        query_heuristic(handle, plan, 1, &result, returned);
        destroy(plan);
      } catch (...) {
        // a descriptor cuBLASLt refused (or no memory for it): the real plan reports it; an
        // exception must not leave a std::jthread
      }
      cublasLtDestroy(handle);
    });
  }
}

void GemmRunner::finish_preparing(std::optional<GemmTypes> types) {
  // Each std::jthread joins as it is erased.
  std::erase_if(preparing_, [&](const auto& entry) {
    const GemmTypes& t = entry.first;
    return !types || (t.operands == types->operands && t.output == types->output && t.compute == types->compute);
  });
}

std::vector<std::map<std::string, int64_t>> GemmRunner::candidate_configs(const GemmArgs& a, int count) {
  Plan plan = make_descriptors(a);
  cublasLtMatmulHeuristicResult_t results[kMaxCandidates] = {};
  const int returned = heuristic(plan, a, std::clamp(count, 1, kMaxCandidates), results);
  destroy(plan);
  std::vector<std::map<std::string, int64_t>> configs;
  for (int i = 0; i < returned; ++i) configs.push_back(algo_config(results[i].algo));
  return configs;
}

GemmRunner::Plan& GemmRunner::plan_for(const GemmArgs& a, cudaStream_t stream) {
  const Key key = key_of(a);
  if (auto found = plans_.find(key); found != plans_.end()) return found->second;

  Plan plan = make_descriptors(a);
  // How many of the heuristic's candidates to ask for: tuning's, the forced one's, the plan's,
  // else the first.
  GemmTuning& tuning = gemm_tuning();
  const bool tuning_on = tuning.candidates > 0;
  const GemmPlanChoice* planned = gemm_plan_ && !forced_candidate_ ? gemm_plan_->find(plan_key(a)) : nullptr;
  const int wanted = std::min(kMaxCandidates, tuning_on           ? tuning.candidates
                                              : forced_candidate_ ? *forced_candidate_ + 1
                                              : planned           ? planned->candidate + 1
                                                                  : 1);
  // A plain array: nvcc 13's front end fails on a std::vector of this C struct.
  cublasLtMatmulHeuristicResult_t results[kMaxCandidates] = {};
  const int returned = heuristic(plan, a, wanted, results);
  if (tuning_on) {
    try {
      plan.candidate = tune(plan, a, results, returned, stream);
    } catch (...) {
      destroy(plan);
      throw;
    }
  } else if (forced_candidate_) {
    plan.candidate = std::min(*forced_candidate_, returned - 1);  // the last offered when fewer
  } else if (planned) {
    // The plan's candidate, if the heuristic still offers the algorithm that was measured.
    if (planned->candidate < returned && algo_config(results[planned->candidate].algo) == planned->algo) {
      plan.candidate = planned->candidate;
    } else {
      std::fprintf(stderr,
                   "dit: GEMM plan %s: candidate %d for %s is not the algorithm it measured; taking the "
                   "heuristic's first\n",
                   gemm_plan_->source.c_str(), planned->candidate, describe(a).c_str());
    }
  }
  plan.algo = results[plan.candidate].algo;
  return plans_.emplace(key, plan).first->second;
}

void GemmRunner::linear(const GemmArgs& a, cudaStream_t stream) {
  const char* op = "dit::cuda::GemmRunner::linear";
  require(a.M > 0 && a.N > 0 && a.K > 0, op, "empty shape in " + describe(a));
  require(a.output == a.operands || a.output == DeviceDtype::f32, op,
          "output must be f32 or the operands' dtype: " + describe(a));
  require(a.compute == GemmCompute::fp32 || a.operands == DeviceDtype::f32, op,
          "tf32 compute needs f32 operands: " + describe(a));
  require_aligned(a.in, kPointerAlignment, op, "in");
  require_aligned(a.weight, kPointerAlignment, op, "weight");
  require_aligned(a.out, kPointerAlignment, op, "out");
  if (a.epilogue != GemmEpilogue::none) require_aligned(a.bias, kPointerAlignment, op, "bias");

  if (a.epilogue != GemmEpilogue::none && (unfused_epilogues_ || !can_run(a, stream))) {
    GemmArgs plain = a;
    plain.epilogue = GemmEpilogue::none;
    matmul(plan_for(plain, stream), plain, stream);
    bias_activation(a.out, a.bias, a.output, a.M, a.N, a.epilogue == GemmEpilogue::gelu_bias, stream);
    return;
  }
  matmul(plan_for(a, stream), a, stream);
}

void GemmRunner::matmul(Plan& plan, const GemmArgs& a, cudaStream_t stream) {
  if (a.epilogue != GemmEpilogue::none)
    DIT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &a.bias, sizeof a.bias));
  const float alpha = 1.0f, beta = 0.0f;
  DIT_CUBLAS_CHECK(cublasLtMatmul(handle_, plan.desc, &alpha, a.weight, plan.weight_layout, a.in, plan.in_layout, &beta,
                                  a.out, plan.out_layout, a.out, plan.out_layout, &plan.algo, workspace_,
                                  kWorkspaceBytes, stream));
}

namespace {

// tune()'s own stream, events and candidate graph, released however tune() leaves.
struct TuningResources {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;

  TuningResources() = default;
  TuningResources(const TuningResources&) = delete;
  TuningResources& operator=(const TuningResources&) = delete;
  ~TuningResources() {  // destruction cannot report: statuses are dropped
    release_graph();
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
  void release_graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    exec = nullptr;
    graph = nullptr;
  }
};

}  // namespace

// Times each candidate on the call's own buffers (hot L2, as in the forward pass where a layer's
// input was just written) as the forward pass runs it, in a CUDA Graph: 10 calls captured in one
// graph, one warm-up launch, then the best of 5 timed launches. Timing eager calls would time the
// host's launch rate for the small shapes (about 10 us a cublasLtMatmul call), not the GPU's.
int GemmRunner::tune(const Plan& plan, const GemmArgs& a, const cublasLtMatmulHeuristicResult_t* results, int count,
                     cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  DIT_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone)
    throw Error(ErrorKind::invalid_argument, "GEMM tuning during a graph capture (" + describe(a) + ")");
  DIT_CUDA_CHECK(cudaStreamSynchronize(stream));  // the call's inputs are ready
  constexpr int kCallsPerGraph = 10, kRounds = 5;
  TuningResources r;
  DIT_CUDA_CHECK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  DIT_CUDA_CHECK(cudaEventCreate(&r.start));
  DIT_CUDA_CHECK(cudaEventCreate(&r.stop));
  cudaStream_t own = r.stream;
  const float alpha = 1.0f, beta = 0.0f;
  std::vector<double> us(static_cast<size_t>(count), -1.0);
  for (int i = 0; i < count; ++i) {
    const auto call = [&] {
      return cublasLtMatmul(handle_, plan.desc, &alpha, a.weight, plan.weight_layout, a.in, plan.in_layout, &beta,
                            a.out, plan.out_layout, a.out, plan.out_layout, &results[i].algo, workspace_,
                            kWorkspaceBytes, own);
    };
    if (call() != CUBLAS_STATUS_SUCCESS || cudaStreamSynchronize(own) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    DIT_CUDA_CHECK(cudaStreamBeginCapture(own, cudaStreamCaptureModeThreadLocal));
    bool captured = true;
    for (int call_index = 0; call_index < kCallsPerGraph; ++call_index)
      captured = captured && call() == CUBLAS_STATUS_SUCCESS;
    if (cudaStreamEndCapture(own, &r.graph) != cudaSuccess) captured = false;
    if (captured && cudaGraphInstantiate(&r.exec, r.graph, 0) == cudaSuccess) {
      double best = 1e30;
      DIT_CUDA_CHECK(cudaGraphLaunch(r.exec, own));
      for (int round = 0; round < kRounds; ++round) {
        DIT_CUDA_CHECK(cudaEventRecord(r.start, own));
        DIT_CUDA_CHECK(cudaGraphLaunch(r.exec, own));
        DIT_CUDA_CHECK(cudaEventRecord(r.stop, own));
        DIT_CUDA_CHECK(cudaEventSynchronize(r.stop));
        float ms = 0.0f;
        DIT_CUDA_CHECK(cudaEventElapsedTime(&ms, r.start, r.stop));
        best = std::min(best, 1000.0 * ms / kCallsPerGraph);  // us per call
      }
      us[static_cast<size_t>(i)] = best;
    }
    cudaGetLastError();  // a failed instantiation leaves its error; the candidate is skipped
    r.release_graph();
  }
  if (us[0] < 0.0)
    throw_device_error(__FILE__, __LINE__, "cublasLtMatmul", "the first candidate failed for " + describe(a));
  int chosen = 0;
  for (int i = 1; i < count; ++i)
    if (us[static_cast<size_t>(i)] >= 0.0 && us[static_cast<size_t>(i)] < us[static_cast<size_t>(chosen)]) chosen = i;
  GemmTuning& tuning = gemm_tuning();
  if (us[static_cast<size_t>(chosen)] > us[0] * (1.0 - tuning.margin)) chosen = 0;
  GemmPlanChoice choice;
  choice.key = plan_key(a);
  choice.candidate = chosen;
  choice.algo = algo_config(results[chosen].algo);
  choice.us = us[static_cast<size_t>(chosen)];
  choice.first_us = us[0];
  tuning.choices.push_back(std::move(choice));
  return chosen;
}

}  // namespace dit::cuda
