// cudnn-frontend, as the build finds it (cmake/FindCudnnFrontend.cmake), with the cuDNN the build
// links: cuDNN's fused attention (the frontend's SDPA node, inference: no softmax statistics) on
// the engine's attention layout, the packed [B, T, 3, H, hd] qkv of the fused qkv GEMM read as
// three strided [B, H, T, hd] views and the output written as [B, T, H, hd], against a float64 CPU
// reference on fresh random inputs; then the same call captured in a CUDA graph (as the engine's
// forward pass is) and replayed, bit for bit the eager call's output. Shapes: DiT-XL/2's at 256
// and 512 (T 256 and 1024, 16 heads of 72) in fp16 and bf16, at 256 with batch 64 (the throughput
// lane's passes, a plan of its own) in fp16, head size 64, and ragged token counts.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cudnn_frontend.h"
#include "tests/deps/cuda_assert.h"
#include "tests/support/test_support.h"

#define ASSERT_FRONTEND_GOOD(call)                                            \
  do {                                                                        \
    auto status_ = (call);                                                    \
    ASSERT_TRUE(status_.is_good()) << #call << ": " << status_.get_message(); \
  } while (0)

namespace dit {
namespace {

namespace fe = cudnn_frontend;

enum class Dtype { f16, bf16 };

// ||out - ref|| / ||ref|| at most: the inputs are rounded to the dtype before the reference sees
// them, so what is left is P rounded to the dtype before P V and the output's own rounding, a few
// units of the dtype's last place (2^-11 for fp16, 2^-8 for bf16); a wrong stride, head or batch
// is of order 1. The engine's flash kernel is held to the same bounds (tests/kernels/harness.h).
double bound(Dtype dtype) { return dtype == Dtype::f16 ? 2e-3 : 1e-2; }

struct SdpaCase {
  int B, T, H, hd;
  Dtype dtype;
  std::string name() const {
    return "b" + std::to_string(B) + "_t" + std::to_string(T) + "_h" + std::to_string(H) + "_d" + std::to_string(hd) +
           (dtype == Dtype::f16 ? "_fp16" : "_bf16");
  }
};

// Host values as 16-bit device elements, and back.
uint16_t to_bits(float value, Dtype dtype) {
  if (dtype == Dtype::f16) return __half_raw(__float2half_rn(value)).x;
  return __nv_bfloat16_raw(__float2bfloat16_rn(value)).x;
}
float from_bits(uint16_t bits, Dtype dtype) {
  if (dtype == Dtype::f16) {
    __half_raw raw;
    raw.x = bits;
    return __half2float(__half(raw));
  }
  __nv_bfloat16_raw raw;
  raw.x = bits;
  return __bfloat162float(__nv_bfloat16(raw));
}

// Device memory freed with the test.
struct DeviceMemory {
  void* data = nullptr;
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() { cudaFree(data); }
};
struct CudnnHandle {
  cudnnHandle_t handle = nullptr;
  CudnnHandle() = default;
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  ~CudnnHandle() {
    if (handle) cudnnDestroy(handle);
  }
};

// softmax(q k^T / sqrt(hd)) v per batch entry and head, in float64, on the rounded inputs.
std::vector<double> reference_attention(const std::vector<float>& qkv, const SdpaCase& c) {
  const int B = c.B, T = c.T, H = c.H, hd = c.hd;
  const size_t token = size_t(3) * H * hd;
  std::vector<double> out(size_t(B) * T * H * hd);
  std::vector<double> scores(T);
  const double scale = 1.0 / std::sqrt(double(hd));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i) {
        const float* q = &qkv[(size_t(b) * T + i) * token + size_t(h) * hd];
        double max = -INFINITY;
        for (int j = 0; j < T; ++j) {
          const float* k = &qkv[(size_t(b) * T + j) * token + size_t(H + h) * hd];
          double dot = 0;
          for (int d = 0; d < hd; ++d) dot += double(q[d]) * double(k[d]);
          scores[j] = dot * scale;
          max = std::max(max, scores[j]);
        }
        double sum = 0;
        for (int j = 0; j < T; ++j) sum += scores[j] = std::exp(scores[j] - max);
        double* o = &out[((size_t(b) * T + i) * H + h) * hd];
        for (int j = 0; j < T; ++j) {
          const float* v = &qkv[(size_t(b) * T + j) * token + size_t(2 * H + h) * hd];
          for (int d = 0; d < hd; ++d) o[d] += scores[j] / sum * double(v[d]);
        }
      }
  return out;
}

class CudnnSdpa : public testing::TestWithParam<SdpaCase> {};

TEST_P(CudnnSdpa, matches_float64_reference_eager_and_in_a_cuda_graph) {
  const SdpaCase c = GetParam();
  const auto [B, T, H, hd, dtype] = c;
  CudnnHandle cudnn;
  ASSERT_EQ(cudnnCreate(&cudnn.handle), CUDNN_STATUS_SUCCESS);

  // The graph: Q, K and V are views of one packed buffer (K and V at H hd and 2 H hd elements from
  // its start), dims [B, H, T, hd] with the packed tensor's strides.
  const int64_t token = int64_t(3) * H * hd;
  const fe::DataType_t io = dtype == Dtype::f16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16;
  fe::graph::Graph graph;
  graph.set_io_data_type(io)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto view = [&](const char* name) {
    return graph.tensor(
        fe::graph::Tensor_attributes().set_name(name).set_dim({B, H, T, hd}).set_stride({T * token, hd, token, 1}));
  };
  auto q = view("q"), k = view("k"), v = view("v");
  auto options = fe::graph::SDPA_attributes()
                     .set_name("attention")
                     .set_generate_stats(false)
                     .set_attn_scale(static_cast<float>(1.0 / std::sqrt(double(hd))));
  auto [o, stats] = graph.sdpa(q, k, v, options);
  EXPECT_EQ(stats, nullptr) << "inference: no softmax statistics";
  o->set_output(true).set_dim({B, H, T, hd}).set_stride({int64_t(T) * H * hd, hd, int64_t(H) * hd, 1});
  ASSERT_FRONTEND_GOOD(graph.validate());
  ASSERT_FRONTEND_GOOD(graph.build_operation_graph(cudnn.handle));
  ASSERT_FRONTEND_GOOD(graph.create_execution_plans({fe::HeurMode_t::A}));
  ASSERT_FRONTEND_GOOD(graph.check_support(cudnn.handle));
  ASSERT_FRONTEND_GOOD(graph.build_plans(cudnn.handle));
  int64_t workspace_bytes = 0;
  ASSERT_FRONTEND_GOOD(graph.get_workspace_size(workspace_bytes));

  // Inputs: normal, rounded to the dtype; q and k scaled so that the scores spread over a few
  // units, as trained attention's do.
  const uint64_t seed = test::fresh_seed();
  std::vector<float> qkv = test::random_normal(size_t(B) * T * token, seed);
  std::vector<uint16_t> qkv_bits(qkv.size());
  for (size_t i = 0; i < qkv.size(); ++i) {
    const bool value_part = (i % token) >= size_t(2) * H * hd;
    qkv_bits[i] = to_bits(value_part ? qkv[i] : 1.5f * qkv[i], dtype);
    qkv[i] = from_bits(qkv_bits[i], dtype);
  }
  const size_t out_count = size_t(B) * T * H * hd;
  DeviceMemory device_qkv, device_out, device_replayed, workspace;
  ASSERT_CUDA_SUCCESS(cudaMalloc(&device_qkv.data, qkv_bits.size() * 2));
  ASSERT_CUDA_SUCCESS(cudaMemcpy(device_qkv.data, qkv_bits.data(), qkv_bits.size() * 2, cudaMemcpyHostToDevice));
  ASSERT_CUDA_SUCCESS(cudaMalloc(&device_out.data, out_count * 2));
  ASSERT_CUDA_SUCCESS(cudaMalloc(&device_replayed.data, out_count * 2));
  ASSERT_CUDA_SUCCESS(cudaMemset(device_out.data, 0xff, out_count * 2));  // NaN in both dtypes
  ASSERT_CUDA_SUCCESS(cudaMemset(device_replayed.data, 0xff, out_count * 2));
  if (workspace_bytes > 0) ASSERT_CUDA_SUCCESS(cudaMalloc(&workspace.data, size_t(workspace_bytes)));
  auto* packed = static_cast<uint16_t*>(device_qkv.data);
  auto pack_for = [&](void* out) {
    return std::unordered_map<std::shared_ptr<fe::graph::Tensor_attributes>, void*>{
        {q, packed}, {k, packed + size_t(H) * hd}, {v, packed + size_t(2) * H * hd}, {o, out}};
  };

  auto eager_pack = pack_for(device_out.data);
  ASSERT_FRONTEND_GOOD(graph.execute(cudnn.handle, eager_pack, workspace.data));
  ASSERT_CUDA_SUCCESS(cudaDeviceSynchronize());
  std::vector<uint16_t> out_bits(out_count);
  ASSERT_CUDA_SUCCESS(cudaMemcpy(out_bits.data(), device_out.data, out_count * 2, cudaMemcpyDeviceToHost));
  std::vector<float> out(out_count);
  for (size_t i = 0; i < out_count; ++i) out[i] = from_bits(out_bits[i], dtype);

  const std::vector<double> reference = reference_attention(qkv, c);
  const test::Comparison comparison = test::compare(out, reference);
  EXPECT_EQ(comparison.non_finite, 0u) << "elements not written or not finite";
  EXPECT_LE(comparison.relative_error, bound(dtype))
      << "cudnn_sdpa/" << c.name() << " (seed " << seed << "): " << comparison.describe(out, reference);

  // The same call captured on a stream into a CUDA graph and replayed: the eager output's bits.
  cudaStream_t stream = nullptr;
  ASSERT_CUDA_SUCCESS(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::unique_ptr<CUstream_st, cudaError_t (*)(cudaStream_t)> owned_stream(stream, cudaStreamDestroy);
  ASSERT_EQ(cudnnSetStream(cudnn.handle, stream), CUDNN_STATUS_SUCCESS);
  cudaGraph_t captured = nullptr;
  ASSERT_CUDA_SUCCESS(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  auto replay_pack = pack_for(device_replayed.data);
  auto status = graph.execute(cudnn.handle, replay_pack, workspace.data);
  ASSERT_CUDA_SUCCESS(cudaStreamEndCapture(stream, &captured));
  const std::unique_ptr<CUgraph_st, cudaError_t (*)(cudaGraph_t)> owned_graph(captured, cudaGraphDestroy);
  ASSERT_TRUE(status.is_good()) << "execute() under stream capture: " << status.get_message();
  cudaGraphExec_t instance = nullptr;
  ASSERT_CUDA_SUCCESS(cudaGraphInstantiate(&instance, captured, 0));
  const std::unique_ptr<CUgraphExec_st, cudaError_t (*)(cudaGraphExec_t)> owned_instance(instance,
                                                                                         cudaGraphExecDestroy);
  ASSERT_CUDA_SUCCESS(cudaGraphLaunch(instance, stream));
  ASSERT_CUDA_SUCCESS(cudaStreamSynchronize(stream));
  std::vector<uint16_t> replayed_bits(out_count);
  ASSERT_CUDA_SUCCESS(cudaMemcpy(replayed_bits.data(), device_replayed.data, out_count * 2, cudaMemcpyDeviceToHost));
  size_t differing = 0;
  for (size_t i = 0; i < out_count; ++i) differing += replayed_bits[i] != out_bits[i];
  EXPECT_EQ(differing, 0u) << "elements of the graph replay differing from the eager call";
}

INSTANTIATE_TEST_SUITE_P(cudnn_sdpa, CudnnSdpa,
                         testing::Values(SdpaCase{2, 256, 16, 72, Dtype::f16}, SdpaCase{2, 256, 16, 72, Dtype::bf16},
                                         SdpaCase{2, 1024, 16, 72, Dtype::f16}, SdpaCase{2, 1024, 16, 72, Dtype::bf16},
                                         SdpaCase{64, 256, 16, 72, Dtype::f16}, SdpaCase{2, 256, 12, 64, Dtype::f16},
                                         SdpaCase{1, 100, 2, 72, Dtype::f16}, SdpaCase{3, 17, 3, 72, Dtype::bf16}),
                         [](const testing::TestParamInfo<SdpaCase>& info) { return info.param.name(); });

}  // namespace
}  // namespace dit
