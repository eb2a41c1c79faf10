// Nearest 2x upsampling (kernels/upsample.h). CPU cases: the reference against a float64
// re-derivation on fresh random inputs. CUDA cases: the kernel against the reference in fp32, fp16
// and bf16, exactly; the arguments it refuses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/upsample.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuUpsampleCase {
  int N, H, W, C;
  std::string name() const { return test::dims_name({{"n", N}, {"h", H}, {"w", W}, {"c", C}}); }
};

class CpuUpsample : public testing::TestWithParam<CpuUpsampleCase> {};

TEST_P(CpuUpsample, copies_each_pixel_to_its_four) {
  const auto [N, H, W, C] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> x = test::random_normal(size_t(N) * H * W * C, seed);
  vector<float> out = test::poisoned(x.size() * 4);
  cpu::upsample_nearest2x(x.data(), out.data(), N, H, W, C);
  vector<double> ref(out.size());
  for (int n = 0; n < N; ++n)
    for (int y = 0; y < 2 * H; ++y)
      for (int col = 0; col < 2 * W; ++col)
        for (int c = 0; c < C; ++c)
          ref[((size_t(n) * 2 * H + y) * 2 * W + col) * C + c] = x[((size_t(n) * H + y / 2) * W + col / 2) * C + c];
  expect_close("upsample/" + GetParam().name(), out, test::count_poisoned(out), ref, 0.0, seed);  // a copy: exact
}

INSTANTIATE_TEST_SUITE_P(upsample, CpuUpsample,
                         testing::Values(CpuUpsampleCase{2, 4, 4, 8}, CpuUpsampleCase{1, 3, 5, 3}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

struct CudaUpsampleCase {
  int N, H, W, C;
  DeviceDtype dtype;
  std::string name() const {
    return test::dims_name({{"n", N}, {"h", H}, {"w", W}, {"c", C}}) + "_" + test::dtype_suffix(dtype);
  }
};

class CudaUpsample : public testing::TestWithParam<CudaUpsampleCase> {};

TEST_P(CudaUpsample, copies_exactly) {
  const CudaUpsampleCase c = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> x = test::rounded_normal(static_cast<size_t>(c.N) * c.H * c.W * c.C, seed, c.dtype, 1.0f);
  vector<float> ref(x.size() * 4);
  cpu::upsample_nearest2x(x.data(), ref.data(), c.N, c.H, c.W, c.C);
  DeviceTensor in(x, c.dtype), out(ref.size(), c.dtype);
  out.poison();
  cuda::upsample_nearest2x(in.data(), out.data(), c.dtype, c.N, c.H, c.W, c.C, nullptr);
  size_t unwritten = 0;
  const vector<float> got = out.download(&unwritten);
  expect_close("upsample/" + c.name(), got, unwritten, test::to_double(ref), 0.0, seed);  // a copy: exact
}

INSTANTIATE_TEST_SUITE_P(upsample, CudaUpsample,
                         testing::Values(CudaUpsampleCase{2, 4, 4, 64, DeviceDtype::f32},
                                         CudaUpsampleCase{1, 3, 5, 6, DeviceDtype::f32},
                                         CudaUpsampleCase{2, 32, 32, 512, DeviceDtype::f16},
                                         CudaUpsampleCase{1, 64, 64, 256, DeviceDtype::bf16},
                                         CudaUpsampleCase{3, 7, 2, 2, DeviceDtype::f16}),
                         [](const auto& info) { return info.param.name(); });

TEST(CudaUpsampleChecks, rejects_odd_channels_and_overlap) {
  DeviceTensor buffer(4 * 4 * 4 * 4, DeviceDtype::f16);
  EXPECT_THROW(cuda::upsample_nearest2x(buffer.data(), static_cast<char*>(buffer.data()) + 64, DeviceDtype::f16, 1, 2,
                                        2, 3, nullptr),
               Error);
  EXPECT_THROW(cuda::upsample_nearest2x(buffer.data(), buffer.data(), DeviceDtype::f16, 1, 2, 2, 4, nullptr), Error);
}

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
