// The VAE output to the planar float32 image (kernels/vae_image.h). CPU cases: the reference
// against a float64 re-derivation on fresh random inputs. CUDA cases: the kernel against the
// reference in fp32, fp16 and bf16, exactly; the arguments it refuses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/vae_image.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuImageCase {
  int N;
  int64_t P;
  int C_stride, C;
  std::string name() const { return test::dims_name({{"n", N}, {"p", P}, {"s", C_stride}, {"c", C}}); }
};

class CpuPlanarImage : public testing::TestWithParam<CpuImageCase> {};

TEST_P(CpuPlanarImage, moves_each_channel_to_its_plane) {
  const auto [N, P, C_stride, C] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> in = test::random_normal(size_t(N) * P * C_stride, seed);
  vector<float> out = test::poisoned(size_t(N) * C * P);
  cpu::channels_last_to_planar(in.data(), out.data(), N, P, C_stride, C);
  vector<double> ref(out.size());
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) ref[(size_t(n) * C + c) * P + p] = in[(size_t(n) * P + p) * C_stride + c];
  expect_close("vae_image/" + GetParam().name(), out, test::count_poisoned(out), ref, 0.0, seed);  // exact
}

INSTANTIATE_TEST_SUITE_P(vae_image, CpuPlanarImage,
                         testing::Values(CpuImageCase{2, 100, 8, 3}, CpuImageCase{1, 17, 3, 3}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

struct CudaImageCase {
  int N;
  int64_t P;
  int C_stride, C;
  DeviceDtype dtype;
  std::string name() const {
    return test::dims_name({{"n", N}, {"p", P}, {"s", C_stride}, {"c", C}}) + "_" + test::dtype_suffix(dtype);
  }
};

class CudaPlanarImage : public testing::TestWithParam<CudaImageCase> {};

TEST_P(CudaPlanarImage, widens_exactly) {
  const CudaImageCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> x = test::rounded_normal(static_cast<size_t>(c.N) * c.P * c.C_stride, seed, c.dtype, 1.0f);
  vector<float> ref(static_cast<size_t>(c.N) * c.C * c.P);
  cpu::channels_last_to_planar(x.data(), ref.data(), c.N, c.P, c.C_stride, c.C);
  DeviceTensor in(x, c.dtype), out(ref.size());
  out.poison();
  cuda::channels_last_to_planar(in.data(), c.dtype, out.f32(), c.N, c.P, c.C_stride, c.C, nullptr);
  size_t unwritten = 0;
  const vector<float> got = out.download(&unwritten);
  expect_close("vae_image/" + c.name(), got, unwritten, test::to_double(ref), 0.0, seed);  // widening: exact
}

INSTANTIATE_TEST_SUITE_P(vae_image, CudaPlanarImage,
                         testing::Values(CudaImageCase{1, 65536, 8, 3, DeviceDtype::f16},
                                         CudaImageCase{2, 100, 8, 3, DeviceDtype::f32},
                                         CudaImageCase{3, 17, 5, 5, DeviceDtype::bf16},
                                         CudaImageCase{2, 4096, 8, 3, DeviceDtype::bf16},
                                         CudaImageCase{1, 33, 4, 1, DeviceDtype::f32}),
                         [](const auto& info) { return info.param.name(); });

TEST(CudaPlanarImageChecks, rejects_bad_channels_and_overlap) {
  DeviceTensor buffer(1024);
  float* base = buffer.f32();
  EXPECT_THROW(cuda::channels_last_to_planar(base, DeviceDtype::f32, base + 512, 1, 16, 4, 5, nullptr), Error);
  EXPECT_THROW(cuda::channels_last_to_planar(base, DeviceDtype::f32, base + 8, 1, 16, 8, 3, nullptr), Error);
}

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
