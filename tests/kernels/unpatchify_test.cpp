// Unpatchify (kernels/unpatchify.h). CPU cases: the reference against the permutation written out.
// CUDA cases: the kernel against the reference, exactly.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/unpatchify.h"
#include "tests/kernels/harness.h"

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CPU_CASES

struct CpuUnpatchifyCase {
  int B, g, p, C;
  std::string name() const { return test::dims_name({{"b", B}, {"g", g}, {"p", p}, {"c", C}}); }
};

class CpuUnpatchify : public testing::TestWithParam<CpuUnpatchifyCase> {};

TEST_P(CpuUnpatchify, equals_the_permutation) {
  const auto [B, g, p, C] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const int S = g * p;
  const vector<float> tokens = test::random_normal(size_t(B) * g * g * p * p * C, seed);
  vector<float> out = test::poisoned(tokens.size());
  cpu::unpatchify(tokens.data(), out.data(), B, g, p, C);
  vector<double> ref(out.size());
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < C; ++c)
      for (int row = 0; row < S; ++row)
        for (int col = 0; col < S; ++col) {
          const int token = (row / p) * g + col / p, r = row % p, q = col % p;
          ref[((size_t(b) * C + c) * S + row) * S + col] =
              tokens[(size_t(b) * g * g + token) * p * p * C + (r * p + q) * C + c];
        }
  expect_close("unpatchify/" + GetParam().name(), out, test::count_poisoned(out), ref, 0.0, seed);  // exact
}

INSTANTIATE_TEST_SUITE_P(unpatchify, CpuUnpatchify,
                         testing::Values(CpuUnpatchifyCase{2, 4, 2, 8}, CpuUnpatchifyCase{1, 3, 4, 6}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CPU_CASES

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

// --- unpatchify ---------------------------------------------------------------------------------

struct UnpatchifyCase {
  int B, g, p, C;
  std::string name() const { return test::dims_name({{"b", B}, {"g", g}, {"p", p}, {"c", C}}); }
};

class CudaUnpatchify : public testing::TestWithParam<UnpatchifyCase> {};

TEST_P(CudaUnpatchify, equals_reference) {
  const UnpatchifyCase k = GetParam();
  const uint64_t seed = test::fresh_seed();
  const vector<float> tokens = test::random_normal(static_cast<size_t>(k.B) * k.g * k.g * k.p * k.p * k.C, seed);
  vector<float> ref(tokens.size());
  cpu::unpatchify(tokens.data(), ref.data(), k.B, k.g, k.p, k.C);
  DeviceTensor dtokens(tokens), dout(ref.size());
  dout.poison();
  cuda::unpatchify(dtokens.f32(), dout.f32(), k.B, k.g, k.p, k.C, nullptr);
  size_t unwritten = 0;
  const vector<float> out = dout.download(&unwritten);
  expect_close("unpatchify/" + k.name(), out, unwritten, test::to_double(ref), 0.0, seed);  // a permutation
}

INSTANTIATE_TEST_SUITE_P(unpatchify, CudaUnpatchify,
                         testing::Values(UnpatchifyCase{2, 16, 2, 8}, UnpatchifyCase{1, 4, 4, 8},
                                         UnpatchifyCase{3, 32, 2, 8}, UnpatchifyCase{2, 8, 8, 4}),
                         [](const auto& info) { return info.param.name(); });

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
