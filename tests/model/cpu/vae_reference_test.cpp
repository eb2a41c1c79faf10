// The CPU reference VAE decoder against the vae_tiny vectors, the LDM key layout, the config
// parser and the loader's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/safetensors.h"
#include "model/vae.h"
#include "model/vae_layout.h"
#include "tests/support/scratch_directory.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

constexpr double kCpuBound = 1e-5;

struct TinyVectors {
  VaeConfig config;
  VaeWeights weights;
  Tensor z;
  std::vector<double> expected;
};

TinyVectors load_tiny() {
  const SafetensorsFile vectors = SafetensorsFile::open(test::data_path("vae_tiny.vectors.safetensors"));
  TinyVectors t;
  t.config = vae_config_from_json(vectors.metadata().at("config"));
  t.weights = VaeWeights::load(test::data_path("vae_tiny.weights.safetensors"), t.config);
  t.z = vectors.to_float("decode.z");
  t.expected = vectors.to_double("decode.out");
  return t;
}

TEST(VaeConfig, TinyVectorsConfigParses) {
  const TinyVectors t = load_tiny();
  EXPECT_EQ(t.config.block_out_channels, (std::vector<int>{32, 64}));
  EXPECT_EQ(t.config.layers_per_block, 1);
  EXPECT_EQ(t.config.norm_num_groups, 8);
  EXPECT_EQ(t.config.latent_channels, 4);
  EXPECT_EQ(vae::decoder_layout(t.config).upscale(), 2);
  EXPECT_EQ(vae::decoder_layout(sd_vae_config()).upscale(), 8);
  EXPECT_EQ(vae::decoder_layout(tiny_vae_config()).upscale(), 8);
}

TEST(VaeConfig, RejectsInconsistentFields) {
  EXPECT_THROW(vae_config_from_json("{\"layers_per_block\": 1}"), Error);
  EXPECT_THROW(vae_config_from_json("{\"block_out_channels\": [30], \"layers_per_block\": 1, \"norm_num_groups\": 8}"),
               Error);
  EXPECT_THROW(vae_config_from_json("{\"block_out_channels\": \"x\", \"layers_per_block\": 1}"), Error);
  EXPECT_THROW(vae_config_from_json("not json"), Error);
}

// Each field outside its bound (vae_limits) is refused with the field named, before any layout or
// allocation; configs near the bounds that real autoencoders use are accepted.
TEST(VaeConfig, RefusesFieldsOutsideTheirBounds) {
  const nlohmann::json sd = {{"block_out_channels", {128, 256, 512, 512}}, {"layers_per_block", 2}};
  struct Case {
    std::string field;
    nlohmann::json value;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"latent_channels", 0, "latent_channels = 0 is outside 1..1024"},
      {"latent_channels", 1025, "latent_channels = 1025 is outside"},
      {"out_channels", 100000, "out_channels = 100000 is outside"},
      {"layers_per_block", 65, "layers_per_block = 65 is outside"},
      {"layers_per_block", -1, "layers_per_block = -1 is outside"},
      {"norm_num_groups", 20000, "norm_num_groups = 20000 is outside"},
      {"norm_eps", 2.0, "norm_eps must be in (0, 1)"},
      {"norm_eps", 0.0, "norm_eps must be in (0, 1)"},
      {"block_out_channels", {32, 32, 32, 32, 32, 32, 32, 32, 32}, "9 blocks, more than 8"},
      {"block_out_channels", {128, 2147483520}, "block_out_channels[1] = 2147483520 is outside"},
      {"block_out_channels", {16384, 16384, 16384, 16384}, "parameters, more than 4294967296"},
  };
  for (const Case& c : cases) {
    nlohmann::json config = sd;
    config[c.field] = c.value;
    try {
      vae_config_from_json(config.dump());
      ADD_FAILURE() << c.field << " = " << c.value.dump() << " was accepted";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(c.expected), std::string::npos) << c.field << ": " << error.what();
    }
  }
  nlohmann::json wide = sd;
  wide["latent_channels"] = 32;
  wide["block_out_channels"] = {256, 512, 1024, 1024};
  EXPECT_EQ(vae_config_from_json(wide.dump()).latent_channels, 32);
}

TEST(VaeConfig, SdDecoderHasTheRealParameterCount) {
  int64_t parameters = 0;
  for (const auto& [name, shape] : vae::parameter_shapes(sd_vae_config())) parameters += Tensor::count(shape);
  // The sd-vae-ft-mse decoder plus post_quant_conv: 49,490,199 parameters.
  EXPECT_EQ(parameters, 49490199);
}

TEST(VaeCpu, MatchesTinyVectors) {
  const TinyVectors t = load_tiny();
  auto decoder = make_vae_decoder(Backend::cpu, t.config, t.weights);
  const Tensor out = decoder->decode(t.z);
  ASSERT_EQ(out.shape, (std::vector<int64_t>{2, 3, 8, 8}));
  const auto c = test::compare(out.data, t.expected);
  EXPECT_LT(c.relative_error, kCpuBound) << c.describe(out.data, t.expected);
}

TEST(VaeCpu, RejectsBadLatentShapeAndPrecision) {
  const TinyVectors t = load_tiny();
  auto decoder = make_vae_decoder(Backend::cpu, t.config, t.weights);
  EXPECT_THROW(decoder->decode(Tensor({1, 3, 4, 4})), Error);
  EXPECT_THROW(decoder->decode(Tensor({1, 4, 4, 5})), Error);
  EXPECT_THROW(make_vae_decoder(Backend::cpu, t.config, t.weights, Precision::fp16), Error);
}

// The same weights stored under the original LDM (CompVis) names decode identically.
TEST(VaeWeights, LdmNamesLoadToTheSameDecoder) {
  const TinyVectors t = load_tiny();
  std::map<std::string, Tensor> ldm;
  for (const auto& [name, tensor] : t.weights.tensors) {
    Tensor stored = tensor;
    if (name.find("attentions.0.to_") != std::string::npos && stored.shape.size() == 2)
      stored.shape = {stored.shape[0], stored.shape[1], 1, 1};
    ldm.emplace(vae::ldm_name(name, t.config), std::move(stored));
  }
  // Spot-check the mapping against names of the original checkpoint layout.
  EXPECT_TRUE(ldm.count("decoder.mid.attn_1.proj_out.weight"));
  EXPECT_TRUE(ldm.count("decoder.up.0.block.0.nin_shortcut.weight"));  // diffusers up_blocks.1
  EXPECT_TRUE(ldm.count("decoder.up.1.upsample.conv.weight"));         // diffusers up_blocks.0
  EXPECT_TRUE(ldm.count("decoder.norm_out.weight"));
  EXPECT_TRUE(ldm.count("decoder.mid.block_2.conv2.bias"));
  // An encoder half, as a full LDM checkpoint has, is ignored.
  ldm.emplace("encoder.conv_in.weight", Tensor({2, 2}, 1.0f));

  test::ScratchDirectory dir;
  write_safetensors(dir.file("ldm.safetensors"), ldm);
  const VaeWeights loaded = VaeWeights::load(dir.file("ldm.safetensors"), t.config);
  ASSERT_EQ(loaded.tensors.size(), t.weights.tensors.size());
  for (const auto& [name, tensor] : t.weights.tensors) {
    EXPECT_EQ(loaded.at(name).shape, tensor.shape) << name;
    EXPECT_EQ(loaded.at(name).data, tensor.data) << name;
  }
  const Tensor expected = make_vae_decoder(Backend::cpu, t.config, t.weights)->decode(t.z);
  const Tensor out = make_vae_decoder(Backend::cpu, t.config, loaded)->decode(t.z);
  EXPECT_EQ(out.data, expected.data);
}

TEST(VaeWeights, LoaderNamesWhatIsWrong) {
  const TinyVectors t = load_tiny();
  test::ScratchDirectory dir;
  auto expect_error = [&](std::map<std::string, Tensor> tensors, const std::string& needle) {
    write_safetensors(dir.file("bad.safetensors"), tensors);
    try {
      VaeWeights::load(dir.file("bad.safetensors"), t.config);
      ADD_FAILURE() << "no error; expected one naming " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto missing = t.weights.tensors;
  missing.erase("decoder.conv_out.bias");
  expect_error(missing, "decoder.conv_out.bias");
  auto reshaped = t.weights.tensors;
  reshaped["decoder.conv_in.weight"].shape = {64, 4, 9};
  expect_error(reshaped, "decoder.conv_in.weight");
  auto extra = t.weights.tensors;
  extra.emplace("decoder.up_blocks.2.resnets.0.conv1.bias", Tensor({32}));
  expect_error(extra, "decoder.up_blocks.2.resnets.0.conv1.bias");
  expect_error({{"model.foo", Tensor({1})}}, "not a VAE decoder checkpoint");
  for (const float bad : {std::nanf(""), -HUGE_VALF}) {  // non-finite values, by tensor and element
    auto non_finite = t.weights.tensors;
    non_finite.at("decoder.mid_block.attentions.0.to_q.weight").data.at(5) = bad;
    expect_error(non_finite, "tensor 'decoder.mid_block.attentions.0.to_q.weight' (F32) element 5 is " +
                                 std::string(std::isnan(bad) ? "NaN" : "-inf"));
  }
  // The sd config against the tiny file: shapes differ.
  EXPECT_THROW(VaeWeights::load(test::data_path("vae_tiny.weights.safetensors"), sd_vae_config()), Error);
}

// The seeded random weights are part of what the quality goldens were rendered with: any change
// to their values (the generator, the order of draws, the spread) is a change of the goldens.
// Pinned as a fingerprint (FNV-1a over every tensor's name and float bits, in name order).
uint64_t fingerprint(const VaeWeights& weights) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const auto mix = [&hash](const void* bytes, size_t size) {
    for (size_t i = 0; i < size; ++i) hash = (hash ^ static_cast<const unsigned char*>(bytes)[i]) * 0x100000001b3ull;
  };
  for (const auto& [name, tensor] : weights.tensors) {
    mix(name.data(), name.size());
    mix(tensor.data.data(), tensor.data.size() * sizeof(float));
  }
  return hash;
}

TEST(VaeWeights, RandomValuesArePinned) {
  EXPECT_EQ(fingerprint(VaeWeights::random(tiny_vae_config(), 7)), 13654388213848338899ull);
  EXPECT_EQ(fingerprint(VaeWeights::random(sd_vae_config(), 0)), 1704229705437298358ull);
}

TEST(VaeWeights, RandomIsSeededAndComplete) {
  const VaeConfig config = tiny_vae_config();
  const VaeWeights a = VaeWeights::random(config, 7), b = VaeWeights::random(config, 7),
                   c = VaeWeights::random(config, 8);
  EXPECT_EQ(a.tensors.size(), vae::parameter_shapes(config).size());
  for (const auto& [name, tensor] : a.tensors) {
    EXPECT_EQ(tensor.data, b.at(name).data) << name;
    EXPECT_NE(tensor.data, c.at(name).data) << name;
  }
  // Each tensor holds the spread it is drawn with: norm gains about N(1, 0.1), other weights
  // N(0, 1/fan_in), biases N(0, 0.05) (tensors of at least 2000 values; 10% on the spread).
  for (const auto& [name, tensor] : a.tensors) {
    const size_t n = tensor.data.size();
    if (n < 2000) continue;
    double sum = 0, sum2 = 0;
    for (float v : tensor.data) sum += v;
    const double mean = sum / n;
    for (float v : tensor.data) sum2 += (v - mean) * (v - mean);
    const double spread = std::sqrt(sum2 / (n - 1));
    const bool weight = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    const bool norm = name.find("norm") != std::string::npos;
    int64_t fan_in = 1;
    for (size_t i = 1; i < tensor.shape.size(); ++i) fan_in *= tensor.shape[i];
    const double want_mean = norm && weight ? 1.0 : 0.0;
    const double want_spread = norm && weight ? 0.1 : weight ? 1.0 / std::sqrt(double(fan_in)) : 0.05;
    EXPECT_NEAR(mean, want_mean, 5 * want_spread / std::sqrt(double(n))) << name;
    EXPECT_NEAR(spread, want_spread, 0.1 * want_spread) << name;
  }
  // Random weights give a decoder whose output is finite, not constant, and of unit scale.
  auto decoder = make_vae_decoder(Backend::cpu, config, a);
  const Tensor z(std::vector<int64_t>{1, 4, 4, 4});
  Tensor latent = z;
  latent.data = test::random_normal(latent.data.size(), 3);
  const Tensor out = decoder->decode(latent);
  ASSERT_EQ(out.shape, (std::vector<int64_t>{1, 3, 32, 32}));
  double sum2 = 0;
  for (float v : out.data) {
    ASSERT_TRUE(std::isfinite(v));
    sum2 += double(v) * v;
  }
  const double rms = std::sqrt(sum2 / out.data.size());
  EXPECT_GT(rms, 0.05);
  EXPECT_LT(rms, 20.0);
}

}  // namespace
}  // namespace dit
