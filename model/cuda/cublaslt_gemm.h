// Linear layers on the GPU through cuBLASLt: out[M, N] = in[M, K] * weight[N, K]^T (+ bias[N])
// (then GELU-tanh), all row-major, PyTorch weight layout. One plan (descriptors and an algorithm
// for a fixed workspace) per distinct shape and type, made on first use and reused. The
// algorithm is the heuristic's first, or the candidate a GEMM plan file names for this shape on
// this GPU (model/gemm_plan.h), or for every shape one forced candidate (EngineOptions::
// gemm_plan "candidate:N", a calibration's restatement): either way the choice is the same across
// calls and processes.
#pragma once

#include <cublasLt.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cuda_types.h"
#include "model/gemm_plan.h"

namespace dit::cuda {

enum class GemmCompute {
  fp32,  // CUBLAS_COMPUTE_32F: true float32 (TF32 off), the golden path
  tf32,  // CUBLAS_COMPUTE_32F_FAST_TF32 (float32 operands only)
};

enum class GemmEpilogue { none, bias, gelu_bias };  // cuBLASLt's GELU is the tanh form

struct GemmArgs {
  const void* in = nullptr;      // [M, K], `operands` dtype
  const void* weight = nullptr;  // [N, K], `operands` dtype
  const void* bias = nullptr;    // [N], `output` dtype; required unless epilogue == none
  void* out = nullptr;           // [M, N], `output` dtype
  int M = 0, N = 0, K = 0;
  DeviceDtype operands = DeviceDtype::f32;
  DeviceDtype output = DeviceDtype::f32;  // operands' dtype or f32
  GemmCompute compute = GemmCompute::fp32;
  GemmEpilogue epilogue = GemmEpilogue::none;
};

// Process-wide tuning, for bench/gemm_plan only: while `candidates` > 0 every GemmRunner that
// makes a new plan times the heuristic's first `candidates` algorithms on the call's own
// buffers and stream (an eager call; never during a graph capture), takes the fastest unless
// it beats the first by less than `margin` (a fraction), and appends the choice to `choices`.
struct GemmTuning {
  int candidates = 0;
  double margin = 0.03;
  std::vector<GemmPlanChoice> choices;
};
GemmTuning& gemm_tuning();

// The operand, output and compute types of some GEMMs (GemmRunner::prepare).
struct GemmTypes {
  DeviceDtype operands = DeviceDtype::f32;
  DeviceDtype output = DeviceDtype::f32;
  GemmCompute compute = GemmCompute::fp32;
};

// An algorithm's configuration attributes (id, tile, stages, split_k, reduction, swizzle,
// custom, inner_shape, cluster_shape): what a plan records and checks.
std::map<std::string, int64_t> algo_config(const cublasLtMatmulAlgo_t& algo);

class GemmRunner {
 public:
  static constexpr size_t kWorkspaceBytes = 32u << 20;  // fixed: the heuristic depends on it
  static constexpr size_t kPointerAlignment = 256;      // what cuBLASLt's preference assumes

  // `workspace` is device memory of kWorkspaceBytes (from the caller's arena); `plan` the GEMM
  // plan for this device, if any (select_gemm_plan with current_device()); `forced_candidate`,
  // when set, the heuristic candidate every shape takes instead (the last one offered when the
  // heuristic offers fewer), the plan ignored.
  explicit GemmRunner(void* workspace, std::optional<GemmPlan> plan = std::nullopt,
                      std::optional<int> forced_candidate = std::nullopt);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // cuBLASLt readies its algorithms for a combination of operand, output and compute types at
  // that combination's first heuristic query: 60 to 125 ms each on an H200 (measured 2026-12-04),
  // one after another from one thread, at once from several.
  // Starts one thread per entry of `types`, each making that first query (its own handle, the
  // caller's device) on a small shape, and returns at once; a heuristic query of one of these
  // combinations waits for its thread.
  // The heuristic answers as it would without them (CudaGemmPrepare, tests/kernels/linear_test.cpp).
  void prepare(const std::vector<GemmTypes>& types);

  // Checks shapes, dtypes and 256-byte alignment, then enqueues on `stream`. An epilogue that
  // cuBLASLt does not offer for this shape and type runs as a separate bias/GELU kernel.
  void linear(const GemmArgs& args, cudaStream_t stream);
  // Whether cuBLASLt has an algorithm for this shape, types and epilogue (the answer is cached).
  bool can_run(const GemmArgs& args, cudaStream_t stream = nullptr);
  // Tests only: run every epilogue as the separate kernel.
  void set_unfused_epilogues(bool unfused) { unfused_epilogues_ = unfused; }
  // Which candidate of the heuristic's list the plan of `args` took (0: the first); makes the
  // plan if there is none yet.
  int candidate_for(const GemmArgs& args) { return plan_for(args).candidate; }

  // The configurations of the heuristic's first `count` candidates for `args` (at most 64).
  std::vector<std::map<std::string, int64_t>> candidate_configs(const GemmArgs& args, int count);

  // The running GPU, cuBLASLt and kWorkspaceBytes, as a plan names them.
  static GemmPlanDevice current_device();
  static GemmPlanKey plan_key(const GemmArgs& args);
  // The plan for the running GPU: `setting` as EngineOptions::gemm_plan ("off", a plan file), or
  // when empty the plan directory built in (DIT_GEMM_PLAN_DIR, model/gemm-plans of the source tree);
  // none for "candidate:N" (gemm_candidate_setting gives N for the constructor).
  static std::optional<GemmPlan> plan_for_current_device(const std::string& setting);

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t weight_layout = nullptr, in_layout = nullptr, out_layout = nullptr;
    cublasLtMatmulAlgo_t algo{};
    int candidate = 0;  // its index in the heuristic's list
  };
  using Key = std::tuple<int, int, int, int, int, int, int>;
  static Key key_of(const GemmArgs& args);
  static Plan make_descriptors(const GemmArgs& args);
  static void destroy(Plan& plan);
  // The heuristic's first `wanted` candidates into `results`; how many it gave. Destroys `plan`
  // and throws dit::Error(device) when it gives none.
  int heuristic(Plan& plan, const GemmArgs& args, int wanted, cublasLtMatmulHeuristicResult_t* results);
  // cublasLtMatmulAlgoGetHeuristic with this runner's workspace limit; `returned` is how many.
  static cublasStatus_t query_heuristic(cublasLtHandle_t handle, const Plan& plan, int wanted,
                                        cublasLtMatmulHeuristicResult_t* results, int& returned);
  // Waits for prepare()'s thread of `types`, or for all of them.
  void finish_preparing(std::optional<GemmTypes> types = std::nullopt);
  Plan& plan_for(const GemmArgs& args, cudaStream_t stream = nullptr);
  void matmul(Plan& plan, const GemmArgs& args, cudaStream_t stream);
  int tune(const Plan& plan, const GemmArgs& args, const cublasLtMatmulHeuristicResult_t* results, int count,
           cudaStream_t stream);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::map<Key, Plan> plans_;
  std::set<Key> unsupported_;
  bool unfused_epilogues_ = false;
  std::optional<GemmPlan> gemm_plan_;
  std::optional<int> forced_candidate_;
  std::vector<std::pair<GemmTypes, std::jthread>> preparing_;  // prepare()'s, joined by finish_preparing()
};

}  // namespace dit::cuda
