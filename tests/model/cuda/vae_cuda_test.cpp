// The cuDNN VAE decoder: the vae_tiny vectors at every precision, agreement with the CPU
// reference on a deeper decoder (four blocks, shortcuts, a batch), run-to-run identical bits
// (eager decodes, graph replays and fresh decoders alike).
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/safetensors.h"
#include "model/vae.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

struct PrecisionBound {
  Precision precision;
  double bound;
};

// fp32 is the golden path (no TF32); 16-bit storage rounds every activation.
const PrecisionBound kBounds[] = {
    {Precision::fp32, 1e-5}, {Precision::tf32, 5e-3}, {Precision::fp16, 1e-2}, {Precision::bf16, 4e-2}};

class VaeCudaVectors : public testing::TestWithParam<PrecisionBound> {};

TEST_P(VaeCudaVectors, MatchesTinyVectors) {
  const auto [precision, bound] = GetParam();
  const SafetensorsFile vectors = SafetensorsFile::open(test::data_path("vae_tiny.vectors.safetensors"));
  const VaeConfig config = vae_config_from_json(vectors.metadata().at("config"));
  const VaeWeights weights = VaeWeights::load(test::data_path("vae_tiny.weights.safetensors"), config);
  const std::vector<double> expected = vectors.to_double("decode.out");
  auto decoder = make_vae_decoder(Backend::cuda, config, weights, precision);
  const Tensor out = decoder->decode(vectors.to_float("decode.z"));
  ASSERT_EQ(out.shape, (std::vector<int64_t>{2, 3, 8, 8}));
  const auto c = test::compare(out.data, expected);
  EXPECT_LT(c.relative_error, bound) << c.describe(out.data, expected);
}

INSTANTIATE_TEST_SUITE_P(Vae, VaeCudaVectors, testing::ValuesIn(kBounds),
                         [](const auto& info) { return std::string(precision_name(info.param.precision)); });

class VaeCudaReference : public testing::TestWithParam<PrecisionBound> {};

TEST_P(VaeCudaReference, MatchesCpuOnTinyConfigBatch) {
  const auto [precision, bound] = GetParam();
  const uint64_t seed = test::fresh_seed();
  const VaeConfig config = tiny_vae_config();
  const VaeWeights weights = VaeWeights::random(config, seed);
  Tensor z({3, 4, 8, 8});
  z.data = test::random_normal(z.data.size(), seed + 1);
  const Tensor expected = make_vae_decoder(Backend::cpu, config, weights)->decode(z);
  const Tensor out = make_vae_decoder(Backend::cuda, config, weights, precision)->decode(z);
  ASSERT_EQ(out.shape, (std::vector<int64_t>{3, 3, 64, 64}));
  const std::vector<double> reference(expected.data.begin(), expected.data.end());
  const auto c = test::compare(out.data, reference);
  EXPECT_LT(c.relative_error, bound) << "seed " << seed << "\n" << c.describe(out.data, reference);
}

INSTANTIATE_TEST_SUITE_P(Vae, VaeCudaReference, testing::ValuesIn(kBounds),
                         [](const auto& info) { return std::string(precision_name(info.param.precision)); });

TEST(VaeCuda, IdenticalBitsAcrossCallsShapesAndDecoders) {
  const VaeConfig config = tiny_vae_config();
  const VaeWeights weights = VaeWeights::random(config, 5);
  Tensor z({2, 4, 8, 8});
  z.data = test::random_normal(z.data.size(), 6);
  Tensor first_image({1, 4, 8, 8});
  first_image.data.assign(z.data.begin(), z.data.begin() + first_image.data.size());
  for (Precision precision : {Precision::fp32, Precision::fp16}) {
    auto decoder = make_vae_decoder(Backend::cuda, config, weights, precision);
    const Tensor a = decoder->decode(z);
    const Tensor single = decoder->decode(first_image);  // a new plan for a new shape
    const Tensor b = decoder->decode(z);                 // the first plan again: eager, then captured
    const Tensor replayed = decoder->decode(z);          // the captured graph (EngineOptions::cuda_graphs by default)
    Tensor other = z;
    other.data = test::random_normal(other.data.size(), 7);
    const Tensor replayed_other = decoder->decode(other);  // the graph reads the new latents
    const Tensor c = make_vae_decoder(Backend::cuda, config, weights, precision)->decode(z);
    const Tensor eager_other = make_vae_decoder(Backend::cuda, config, weights, precision)->decode(other);
    EXPECT_EQ(a.data, b.data) << precision_name(precision);
    EXPECT_EQ(a.data, replayed.data) << precision_name(precision);
    EXPECT_EQ(a.data, c.data) << precision_name(precision);
    EXPECT_EQ(replayed_other.data, eager_other.data) << precision_name(precision);
    EXPECT_NE(replayed_other.data, replayed.data) << precision_name(precision);
    ASSERT_EQ(single.shape, (std::vector<int64_t>{1, 3, 64, 64}));
    const std::vector<float> a_first(a.data.begin(), a.data.begin() + single.data.size());
    const auto cmp = test::compare(single.data, a_first);
    EXPECT_LT(cmp.relative_error, 1e-2) << precision_name(precision);  // batch size changes algorithms, not results
  }
}

TEST(VaeCuda, RejectsBadLatents) {
  const VaeConfig config = tiny_vae_config();
  auto decoder = make_vae_decoder(Backend::cuda, config, VaeWeights::random(config, 1));
  EXPECT_THROW(decoder->decode(Tensor({1, 3, 8, 8})), Error);
  EXPECT_THROW(decoder->decode(Tensor({1, 4, 8, 6})), Error);
}

}  // namespace
}  // namespace dit
