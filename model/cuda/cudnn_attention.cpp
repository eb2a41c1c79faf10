// cuDNN's fused attention through cudnn-frontend (model/cuda/cudnn_attention.h): one SDPA graph a
// shape (inference: no softmax statistics; float32 scores and softmax, P rounded to the I/O dtype
// before P V, as the flash kernel does), its plan chosen by cuDNN's heuristics (mode A, the first
// supported), kept with its workspace for the model's life.
#include "model/cuda/cudnn_attention.h"

#if defined(DIT_WITH_CUDNN_FRONTEND)

#include <cudnn.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "cudnn_frontend.h"
#include "kernels/cuda_check.h"
#include "model/cuda/vae_cuda_conv.h"

namespace dit::cuda {

namespace fe = cudnn_frontend;

namespace {

struct Plan {
  bool supported = false;
  std::unique_ptr<fe::graph::Graph> graph;
  std::shared_ptr<fe::graph::Tensor_attributes> q, k, v, o;
  void* workspace = nullptr;
};

using Shape = std::tuple<int, int, int, int, int>;  // dtype, B, T, H, hd

}  // namespace

struct CudnnAttention::State {
  cudnnHandle_t handle = nullptr;
  std::map<Shape, Plan> plans;
  ~State() {
    for (auto& [shape, plan] : plans) cudaFree(plan.workspace);
    if (handle) cudnnDestroy(handle);
  }
};

CudnnAttention::CudnnAttention() : state_(std::make_unique<State>()) { DIT_CUDNN_CHECK(cudnnCreate(&state_->handle)); }

CudnnAttention::~CudnnAttention() = default;

bool CudnnAttention::available() { return true; }

namespace {

// The plan of one shape, or why there is none (printed once, to stderr).
Plan make_plan(cudnnHandle_t handle, DeviceDtype dtype, int B, int T, int H, int hd) {
  Plan plan;
  plan.graph = std::make_unique<fe::graph::Graph>();
  fe::graph::Graph& graph = *plan.graph;
  graph.set_io_data_type(dtype == DeviceDtype::f16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const int64_t token = int64_t{3} * H * hd;
  auto view = [&](const char* name) {
    return graph.tensor(fe::graph::Tensor_attributes()
                            .set_name(name)
                            .set_dim({B, H, T, hd})
                            .set_stride({int64_t{T} * token, hd, token, 1}));
  };
  plan.q = view("q");
  plan.k = view("k");
  plan.v = view("v");
  auto options = fe::graph::SDPA_attributes()
                     .set_name("attention")
                     .set_generate_stats(false)
                     .set_attn_scale(static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd))));
  auto [o, stats] = graph.sdpa(plan.q, plan.k, plan.v, options);
  o->set_output(true).set_dim({B, H, T, hd}).set_stride({int64_t{T} * H * hd, hd, int64_t{H} * hd, 1});
  plan.o = o;
  fe::error_t status = graph.validate();
  if (status.is_good()) status = graph.build_operation_graph(handle);
  if (status.is_good()) status = graph.create_execution_plans({fe::HeurMode_t::A});
  if (status.is_good()) status = graph.check_support(handle);
  if (status.is_good()) status = graph.build_plans(handle);
  int64_t workspace_bytes = 0;
  if (status.is_good()) status = graph.get_workspace_size(workspace_bytes);
  if (!status.is_good()) {
    std::fprintf(stderr,
                 "dit: cuDNN has no fused attention for B %d, T %d, H %d, hd %d (%s); the engine's kernel runs\n", B, T,
                 H, hd, status.get_message().c_str());
    return plan;
  }
  if (workspace_bytes > 0) DIT_CUDA_CHECK(cudaMalloc(&plan.workspace, static_cast<size_t>(workspace_bytes)));
  plan.supported = true;
  return plan;
}

}  // namespace

bool CudnnAttention::run(const void* qkv, void* out, DeviceDtype dtype, int B, int T, int H, int hd,
                         cudaStream_t stream) {
  if (dtype != DeviceDtype::f16 && dtype != DeviceDtype::bf16) return false;
  const Shape shape{static_cast<int>(dtype), B, T, H, hd};
  auto found = state_->plans.find(shape);
  if (found == state_->plans.end())
    found = state_->plans.emplace(shape, make_plan(state_->handle, dtype, B, T, H, hd)).first;
  Plan& plan = found->second;
  if (!plan.supported) return false;
  // Two bytes an element: K and V start H hd and 2 H hd elements after Q in each token's row.
  auto* packed = static_cast<char*>(const_cast<void*>(qkv));
  const size_t part = static_cast<size_t>(H) * hd * 2;
  std::unordered_map<std::shared_ptr<fe::graph::Tensor_attributes>, void*> pack{
      {plan.q, packed}, {plan.k, packed + part}, {plan.v, packed + 2 * part}, {plan.o, out}};
  DIT_CUDNN_CHECK(cudnnSetStream(state_->handle, stream));
  fe::error_t status = plan.graph->execute(state_->handle, pack, plan.workspace);
  if (!status.is_good())
    throw Error(ErrorKind::device, "cuDNN fused attention (B " + std::to_string(B) + ", T " + std::to_string(T) +
                                       "): " + status.get_message());
  return true;
}

}  // namespace dit::cuda

#else  // no cudnn-frontend in this build

namespace dit::cuda {

struct CudnnAttention::State {};
CudnnAttention::CudnnAttention() = default;
CudnnAttention::~CudnnAttention() = default;
bool CudnnAttention::available() { return false; }
bool CudnnAttention::run(const void*, void*, DeviceDtype, int, int, int, int, cudaStream_t) { return false; }

}  // namespace dit::cuda

#endif
