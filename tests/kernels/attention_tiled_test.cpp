// The tiled fp32 attention variant (kernels/attention_tiled.h; CUDA only) against the CPU reference
// and the naive kernel: DiT-XL/2 at 256 and 512, the tiny models, partial query and key tiles,
// every column-group count (head sizes 1 to 128), odd head sizes and unaligned inputs (the scalar
// loads), and rows sharp enough that the online softmax rescales; that the engine's attention entry
// runs it for f32; its argument checks.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/kernels/harness.h"

#if DIT_CUDA_CASES
#include "kernels/attention.h"
#include "kernels/attention_flash.h"
#include "kernels/attention_tiled.h"
#endif

namespace dit {
namespace {

using std::vector;
using test::expect_close;

#if DIT_CUDA_CASES

using cuda::DeviceDtype;
using test::DeviceTensor;

struct TiledCase {
  int B, H, N, hd;
  float input_std = 1.5f;  // 1.5: softmax rows far from uniform, so a wrong key or value shows
  int qkv_offset = 0;      // floats; 1 makes qkv 4- but not 16-byte aligned (the scalar loads)
  std::string name() const {
    std::string s = test::dims_name({{"b", B}, {"h", H}, {"n", N}, {"d", hd}}) + "_fp32";
    if (input_std != 1.5f) s += "_std" + std::to_string(static_cast<int>(input_std));
    if (qkv_offset != 0) s += "_unaligned";
    return s;
  }
};

// The qkv input of a case, uploaded qkv_offset floats into its buffer.
struct TiledInput {
  vector<float> qkv;
  DeviceTensor buffer;
  int offset;
  const void* data() const { return buffer.f32() + offset; }
  TiledInput(const TiledCase& k, uint64_t seed)
      : qkv(test::random_normal(static_cast<size_t>(k.B) * k.N * 3 * k.H * k.hd, seed, k.input_std)),
        buffer(qkv.size() + k.qkv_offset),
        offset(k.qkv_offset) {
    vector<float> padded(k.qkv_offset, 0.0f);
    padded.insert(padded.end(), qkv.begin(), qkv.end());
    buffer.upload(padded);
  }
};

// --- against the CPU reference and the naive kernel -------------------------------------------

class CudaAttentionTiled : public testing::TestWithParam<TiledCase> {};

TEST_P(CudaAttentionTiled, matches_reference_and_naive_kernel) {
  const TiledCase k = GetParam();
  ASSERT_TRUE(cuda::attention_tiled_supported(DeviceDtype::f32, k.hd));
  const uint64_t seed = test::fresh_seed();
  const TiledInput input(k, seed);
  vector<float> ref(static_cast<size_t>(k.B) * k.N * k.H * k.hd);
  cpu::attention(input.qkv.data(), ref.data(), k.B, k.N, k.H, k.hd);
  DeviceTensor dtiled(ref.size()), dnaive(ref.size());
  dtiled.poison();
  dnaive.poison();
  cuda::attention_tiled(input.data(), dtiled.data(), DeviceDtype::f32, k.B, k.N, k.H, k.hd, nullptr);
  cuda::attention_naive(input.data(), dnaive.data(), DeviceDtype::f32, k.B, k.N, k.H, k.hd, nullptr);
  size_t unwritten = 0, naive_unwritten = 0;
  const vector<float> tiled = dtiled.download(&unwritten);
  const vector<float> naive = dnaive.download(&naive_unwritten);
  ASSERT_EQ(naive_unwritten, 0u);
  expect_close("attention_tiled/" + k.name(), tiled, unwritten, test::to_double(ref), test::kF32Bound, seed);
  expect_close("attention_tiled_vs_naive/" + k.name(), tiled, 0, test::to_double(naive), test::kF32Bound, seed);
}

INSTANTIATE_TEST_SUITE_P(attention_tiled, CudaAttentionTiled,
                         testing::Values(TiledCase{2, 16, 256, 72},   // DiT-XL/2 at 256, guided batch
                                         TiledCase{2, 16, 1024, 72},  // DiT-XL/2 at 512
                                         TiledCase{1, 4, 16, 16},     // tiny models
                                         TiledCase{2, 2, 16, 72},
                                         TiledCase{1, 3, 77, 72},  // partial query and key tiles
                                         TiledCase{2, 6, 256, 64},
                                         TiledCase{1, 2, 100, 128},         // 8 column groups, 16-key tiles
                                         TiledCase{1, 2, 45, 112},          // 7 column groups, 16-key tiles, partial
                                         TiledCase{1, 3, 33, 96},           // 6 column groups: a last tile of one key
                                         TiledCase{2, 4, 50, 20},           // 2 column groups, 12 zero columns of V
                                         TiledCase{1, 2, 77, 33},           // odd head size: scalar loads
                                         TiledCase{1, 1, 65, 1},            // one column
                                         TiledCase{3, 1, 1, 40},            // one token
                                         TiledCase{2, 4, 300, 72, 2.0f},    // sharper rows: the running max moves
                                         TiledCase{1, 3, 77, 72, 1.5f, 1},  // head size 72 from an unaligned qkv
                                         TiledCase{1, 2, 64, 128, 1.5f, 1}),
                         [](const auto& info) { return info.param.name(); });

// --- dispatch ---------------------------------------------------------------------------------

// The engine's attention entry picks the tiled kernel for f32 at DiT-XL/2's head size: its output
// is the tiled kernel's, bit for bit.
TEST(CudaAttentionTiledDispatch, float32_attention_runs_the_tiled_kernel) {
  const TiledCase k{2, 16, 256, 72};
  ASSERT_FALSE(cuda::attention_flash_supported(DeviceDtype::f32, k.hd));
  ASSERT_TRUE(cuda::attention_tiled_supported(DeviceDtype::f32, k.hd));
  const uint64_t seed = test::fresh_seed();
  const TiledInput input(k, seed);
  const size_t out_size = static_cast<size_t>(k.B) * k.N * k.H * k.hd;
  DeviceTensor dtiled(out_size), dengine(out_size);
  dtiled.poison();
  dengine.poison();
  cuda::attention_tiled(input.data(), dtiled.data(), DeviceDtype::f32, k.B, k.N, k.H, k.hd, nullptr);
  cuda::attention(input.data(), dengine.data(), DeviceDtype::f32, k.B, k.N, k.H, k.hd, nullptr);
  size_t tiled_unwritten = 0, engine_unwritten = 0;
  const vector<float> tiled = dtiled.download(&tiled_unwritten);
  const vector<float> engine = dengine.download(&engine_unwritten);
  ASSERT_EQ(tiled_unwritten, 0u);
  ASSERT_EQ(engine_unwritten, 0u);
  EXPECT_EQ(std::memcmp(tiled.data(), engine.data(), out_size * sizeof(float)), 0) << "seed " << seed;
}

// --- argument checks --------------------------------------------------------------------------

TEST(CudaAttentionTiledChecks, rejects_unsupported_arguments) {
  DeviceTensor qkv(3 * 16 * 2 * 130), out(16 * 2 * 130);
  EXPECT_FALSE(cuda::attention_tiled_supported(DeviceDtype::f16, 72));
  EXPECT_FALSE(cuda::attention_tiled_supported(DeviceDtype::bf16, 64));
  EXPECT_FALSE(cuda::attention_tiled_supported(DeviceDtype::f32, 0));
  EXPECT_FALSE(cuda::attention_tiled_supported(DeviceDtype::f32, 129));
  EXPECT_TRUE(cuda::attention_tiled_supported(DeviceDtype::f32, 1));
  EXPECT_TRUE(cuda::attention_tiled_supported(DeviceDtype::f32, 128));
  EXPECT_THROW(cuda::attention_tiled(qkv.data(), out.data(), DeviceDtype::f16, 1, 16, 2, 72, nullptr), Error);
  EXPECT_THROW(cuda::attention_tiled(qkv.data(), out.data(), DeviceDtype::f32, 1, 16, 2, 129, nullptr), Error);
  EXPECT_THROW(cuda::attention_tiled(qkv.data(), out.data(), DeviceDtype::f32, 1, 0, 2, 72, nullptr), Error);
  EXPECT_THROW(cuda::attention_tiled(nullptr, out.data(), DeviceDtype::f32, 1, 16, 2, 72, nullptr), Error);
  const auto* misaligned = static_cast<const unsigned char*>(qkv.data()) + 2;
  EXPECT_THROW(cuda::attention_tiled(misaligned, out.data(), DeviceDtype::f32, 1, 16, 2, 72, nullptr), Error);
}

#endif  // DIT_CUDA_CASES

}  // namespace
}  // namespace dit
