// CUTLASS, as the build finds it (cmake/FindCUTLASS.cmake): one CUTLASS 2.x device GEMM of the kind
// the engine's kernels would build on for sm_86, D = A B^T + C with fp16 operands and float32
// accumulation on the tensor cores (the sm_80 mma.sync path, which sm_86 runs), against a float64
// CPU reference on fresh random inputs, for a few shapes: partial tiles in every dimension, and
// DiT-XL/2's (1152 wide, MLP 4608) with a ragged token count.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cutlass/gemm/device/gemm.h"
#include "tests/deps/cuda_assert.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

// A [M, K] row-major (activations), B [N, K] row-major, which is K x N column-major (a linear
// layer's weight as stored), C and D [M, N] row-major float32. 128x128x32 block tile, four 64x64x32
// warp tiles, 16x8x16 mma.sync, 3 stages: 3 * (128 + 128) * 32 * 2 bytes = 48 KiB of shared
// memory per block, within sm_86's 99 KB. Operands 8 halves (16 bytes) aligned, outputs 4 floats:
// K a multiple of 8, N of 4.
using Gemm = cutlass::gemm::device::Gemm<cutlass::half_t, cutlass::layout::RowMajor,     // A
                                         cutlass::half_t, cutlass::layout::ColumnMajor,  // B
                                         float, cutlass::layout::RowMajor,               // C, D
                                         float,                                          // accumulator
                                         cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,
                                         cutlass::gemm::GemmShape<128, 128, 32>, cutlass::gemm::GemmShape<64, 64, 32>,
                                         cutlass::gemm::GemmShape<16, 8, 16>,
                                         cutlass::epilogue::thread::LinearCombination<float, 4, float, float>,
                                         cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, 3>;
static_assert(sizeof(Gemm::GemmKernel::SharedStorage) <= 99 * 1024, "over sm_86's 99 KB of shared memory per block");

// The normwise bound on ||D - ref|| / ||ref||. The fp16 products are exact in float32, so the
// error is the float32 accumulation's: the tensor cores add groups of products into the
// accumulator, truncating, and a simulation of that at these inputs' scales gives 4e-6 at K = 1152 and
// 1.4e-5 (groups of 8) to 2.8e-5 (groups of 4) at K = 4608; truncating after every single product
// gives 1e-4 there. A wrong layout, a lost K remainder or tile is 1e-2 or more.
constexpr double kBound = 2e-4;

struct GemmCase {
  int M, N, K;
  std::string name() const {
    std::string name = "m";
    name.append(std::to_string(M)).append("_n").append(std::to_string(N)).append("_k").append(std::to_string(K));
    return name;
  }
};

// A device copy of a host array, freed with the test.
template <typename T>
struct DeviceBuffer {
  T* data = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(data); }
};

template <typename T>
void upload(DeviceBuffer<T>& buffer, const std::vector<T>& values) {
  ASSERT_CUDA_SUCCESS(cudaMalloc(&buffer.data, values.size() * sizeof(T)));
  ASSERT_CUDA_SUCCESS(cudaMemcpy(buffer.data, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice));
}

std::vector<cutlass::half_t> to_half(const std::vector<float>& values) {
  std::vector<cutlass::half_t> halves(values.size());
  for (size_t i = 0; i < values.size(); ++i) halves[i] = cutlass::half_t(values[i]);
  return halves;
}

class CutlassGemm : public testing::TestWithParam<GemmCase> {};

TEST_P(CutlassGemm, matches_float64_reference) {
  const auto [M, N, K] = GetParam();
  const uint64_t seed = test::fresh_seed();
  // Weights scaled by 1/sqrt(K), as a trained linear layer's are, so that D stays near unit size.
  const std::vector<cutlass::half_t> a = to_half(test::random_normal(size_t(M) * K, seed));
  const std::vector<cutlass::half_t> b =
      to_half(test::random_normal(size_t(N) * K, seed + 1, 1.0f / std::sqrt(float(K))));
  const std::vector<float> c = test::random_normal(size_t(M) * N, seed + 2);
  std::vector<float> d(size_t(M) * N);
  test::poison(d);

  DeviceBuffer<cutlass::half_t> device_a, device_b;
  DeviceBuffer<float> device_c, device_d;
  ASSERT_NO_FATAL_FAILURE(upload(device_a, a));
  ASSERT_NO_FATAL_FAILURE(upload(device_b, b));
  ASSERT_NO_FATAL_FAILURE(upload(device_c, c));
  ASSERT_NO_FATAL_FAILURE(upload(device_d, d));  // poisoned: an element the GEMM never writes shows
  const Gemm::Arguments arguments({M, N, K}, {device_a.data, K}, {device_b.data, K}, {device_c.data, N},
                                  {device_d.data, N}, {1.0f, 1.0f});
  Gemm gemm;
  ASSERT_EQ(gemm.can_implement(arguments), cutlass::Status::kSuccess);
  ASSERT_EQ(Gemm::get_workspace_size(arguments), 0u);  // no split-K: no workspace
  const cutlass::Status status = gemm(arguments);
  ASSERT_EQ(status, cutlass::Status::kSuccess) << cutlassGetStatusString(status);
  ASSERT_CUDA_SUCCESS(cudaGetLastError());
  ASSERT_CUDA_SUCCESS(cudaDeviceSynchronize());
  ASSERT_CUDA_SUCCESS(cudaMemcpy(d.data(), device_d.data, d.size() * sizeof(float), cudaMemcpyDeviceToHost));

  // The reference sees the operands as the GEMM does: rounded to fp16.
  std::vector<double> reference(size_t(M) * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double sum = c[size_t(m) * N + n];
      for (int k = 0; k < K; ++k) sum += double(float(a[size_t(m) * K + k])) * double(float(b[size_t(n) * K + k]));
      reference[size_t(m) * N + n] = sum;
    }

  const std::string name = "cutlass_gemm/" + GetParam().name();
  const test::Comparison comparison = test::compare(d, reference);
  std::printf("  %-40s relative error %.3e (bound %.1e), max abs %.3e, seed %llu\n", name.c_str(),
              comparison.relative_error, kBound, comparison.max_abs_error, static_cast<unsigned long long>(seed));
  const size_t never_written = test::count_poisoned(d);
  EXPECT_EQ(never_written, 0u) << name << ": " << never_written << " of " << d.size() << " outputs never written";
  EXPECT_EQ(comparison.non_finite, 0u) << name << " (seed " << seed << "): " << comparison.describe(d, reference);
  EXPECT_LE(comparison.relative_error, kBound)
      << name << " (seed " << seed << "): " << comparison.describe(d, reference);
}

// 37 x 72 x 40: every dimension a partial tile (K one 32-wide step and an 8-wide remainder).
// 512 x 1152 x 1152: a DiT-XL/2 projection at 256 pixels, two images of 256 tokens.
// 300 x 1152 x 4608: its MLP's second GEMM, with a token count that is no multiple of the tile.
INSTANTIATE_TEST_SUITE_P(cutlass_gemm, CutlassGemm,
                         testing::Values(GemmCase{37, 72, 40}, GemmCase{512, 1152, 1152}, GemmCase{300, 1152, 4608}),
                         [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace dit
