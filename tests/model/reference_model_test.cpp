// The CPU model around the forward pass: configurations, expected weight shapes, the sin-cos
// table and random weights, backend dispatch, input validation, and DitModel::sample (batch
// independence, determinism, DDIM with eta > 0, guidance off), and the sampler's noise.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/dit_model.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "model/sampler.h"
#include "model/weights.h"
#include "tests/support/test_support.h"
#include "tests/support/thrown_error.h"

namespace dit {
namespace {

ModelConfig tiny_config(const std::string& name) {
  return model_config_from_json(
      SafetensorsFile::open(test::data_path(name + ".weights.safetensors")).metadata().at("config"));
}

template <typename F>
void expect_error(F&& call, ErrorKind kind, const std::string& mentions) {
  try {
    call();
    ADD_FAILURE() << "expected a dit::Error mentioning '" << mentions << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
  }
}

TEST(ModelConfig, FamilyTableAndNames) {
  const ModelConfig xl = model_config("DiT-XL/2", 256);
  EXPECT_EQ(xl.name, "DiT-XL/2");
  EXPECT_EQ(xl.input_size, 32);
  EXPECT_EQ(xl.depth, 28);
  EXPECT_EQ(xl.hidden_size, 1152);
  EXPECT_EQ(xl.num_heads, 16);
  EXPECT_EQ(xl.head_dim(), 72);
  EXPECT_EQ(xl.tokens(), 256);
  EXPECT_EQ(xl.mlp_hidden(), 4608);
  EXPECT_EQ(xl.out_channels(), 8);
  EXPECT_EQ(xl.parameter_count(), 675129632);  // upstream train.py's "DiT Parameters"
  EXPECT_EQ(model_config("xl-2", 512).input_size, 64);
  EXPECT_EQ(model_config("XL/2", 512).tokens(), 1024);
  const ModelConfig s8 = model_config("dit-s-8", 256);
  EXPECT_EQ(s8.name, "DiT-S/8");
  EXPECT_EQ(s8.head_dim(), 64);
  EXPECT_EQ(s8.tokens(), 16);
  EXPECT_EQ(model_names().size(), 12u);
  for (const std::string& name : model_names()) EXPECT_EQ(model_config(name, 256).name, name);
  expect_error([] { model_config("DiT-XXL/2", 256); }, ErrorKind::invalid_argument, "DiT-XXL/2");
  expect_error([] { model_config("DiT-XL/2", 384); }, ErrorKind::invalid_argument, "384");
}

TEST(ModelConfig, JsonRoundTripAndErrors) {
  const ModelConfig a = tiny_config("dit_tiny_a");
  EXPECT_EQ(a.hidden_size, 64);
  EXPECT_EQ(a.num_heads, 4);
  EXPECT_EQ(a.num_classes, 10);
  EXPECT_EQ(a.in_channels, 4);
  EXPECT_TRUE(a.learn_sigma);
  const ModelConfig again = model_config_from_json(to_json(a));
  EXPECT_EQ(to_json(again), to_json(a));
  expect_error([] { model_config_from_json(R"({"input_size": 8, "patch_size": 2})"); }, ErrorKind::invalid_file,
               "hidden_size");
  expect_error([] { model_config_from_json("{not json"); }, ErrorKind::invalid_file, "JSON");
  expect_error(
      [] {
        model_config_from_json(
            R"({"input_size": 8, "patch_size": 3, "hidden_size": 64, "depth": 1, "num_heads": 4, "num_classes": 10})");
      },
      ErrorKind::invalid_argument, "patch_size");
}

// ---------------------------------------------------------------------------------------------
// Config bounds: every field has one, each violation a dit::Error naming the field, its value and
// the bound, before any arithmetic on it can overflow or any weight is allocated.

ModelConfig xl256() { return model_config("DiT-XL/2", 256); }

struct BoundCase {
  const char* label;
  ModelConfig config;
  std::vector<std::string> mentions;  // each must appear in the message
};

ModelConfig changed(ModelConfig config, const std::function<void(ModelConfig&)>& change) {
  change(config);
  return config;
}

std::vector<BoundCase> bound_cases() {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  return {
      {"depth 0", changed(xl256(), [](auto& c) { c.depth = 0; }), {"depth 0", "[1, 1024]"}},
      {"depth 1025", changed(xl256(), [](auto& c) { c.depth = 1025; }), {"depth 1025", "[1, 1024]"}},
      {"depth 2e9 (was 97 s to bad_alloc)",
       changed(xl256(), [](auto& c) { c.depth = 2'000'000'000; }),
       {"depth 2000000000", "[1, 1024]"}},
      {"hidden_size 0", changed(xl256(), [](auto& c) { c.hidden_size = 0; }), {"hidden_size 0", "[4, 32768]"}},
      {"hidden_size above",
       changed(xl256(), [](auto& c) { c.hidden_size = 32768 + 16; }),
       {"hidden_size 32784", "[4, 32768]"}},
      {"hidden_size not a multiple of 4",
       changed(xl256(), [](auto& c) { c.hidden_size = 18, c.num_heads = 2; }),
       {"hidden_size 18", "multiple of 4"}},
      {"num_heads 0", changed(xl256(), [](auto& c) { c.num_heads = 0; }), {"num_heads 0", "[1, 1024]"}},
      {"num_heads 2048",
       changed(xl256(), [](auto& c) { c.hidden_size = 4096, c.num_heads = 2048; }),
       {"num_heads 2048", "[1, 1024]"}},
      {"num_heads not dividing hidden_size",
       changed(xl256(), [](auto& c) { c.num_heads = 7; }),
       {"hidden_size 1152", "multiple of num_heads 7"}},
      {"patch_size 0", changed(xl256(), [](auto& c) { c.patch_size = 0; }), {"patch_size 0", "[1, 64]"}},
      {"patch_size 128",
       changed(xl256(), [](auto& c) { c.input_size = 128, c.patch_size = 128; }),
       {"patch_size 128", "[1, 64]"}},
      {"patch_size not dividing input_size",
       changed(xl256(), [](auto& c) { c.patch_size = 3; }),
       {"input_size 32", "multiple of patch_size 3"}},
      {"input_size 0", changed(xl256(), [](auto& c) { c.input_size = 0; }), {"input_size 0", "[1, 1024]"}},
      {"input_size 2^31-2 (overflowed the token count)",
       changed(xl256(), [](auto& c) { c.input_size = 2147483646, c.patch_size = 1; }),
       {"input_size 2147483646", "[1, 1024]"}},
      {"in_channels 0", changed(xl256(), [](auto& c) { c.in_channels = 0; }), {"in_channels 0", "[1, 1024]"}},
      {"in_channels 4096", changed(xl256(), [](auto& c) { c.in_channels = 4096; }), {"in_channels 4096", "[1, 1024]"}},
      {"num_classes 0", changed(xl256(), [](auto& c) { c.num_classes = 0; }), {"num_classes 0", "[1, 1000000]"}},
      {"num_classes 2^31-1 (overflowed the table's rows)",
       changed(xl256(), [](auto& c) { c.num_classes = 2147483647; }),
       {"num_classes 2147483647", "[1, 1000000]"}},
      {"mlp_ratio 0", changed(xl256(), [](auto& c) { c.mlp_ratio = 0.0f; }), {"mlp_ratio 0", "(0, 64]"}},
      {"mlp_ratio NaN", changed(xl256(), [=](auto& c) { c.mlp_ratio = nan; }), {"mlp_ratio nan", "(0, 64]"}},
      {"mlp_ratio inf", changed(xl256(), [=](auto& c) { c.mlp_ratio = inf; }), {"mlp_ratio inf", "(0, 64]"}},
      {"mlp_ratio 65", changed(xl256(), [](auto& c) { c.mlp_ratio = 65.0f; }), {"mlp_ratio 65", "(0, 64]"}},
      {"mlp_ratio leaving no width",
       changed(xl256(), [](auto& c) { c.mlp_ratio = 1e-4f; }),
       {"mlp_ratio 0.0001", "no MLP width"}},
      {"too many tokens",
       changed(xl256(), [](auto& c) { c.input_size = 1024, c.patch_size = 2; }),
       {"262144 tokens", "limit of 65536"}},
      {"too many parameters",
       changed(xl256(), [](auto& c) { c.depth = 1024, c.hidden_size = 8192, c.num_heads = 64; }),
       {"depth 1024", "hidden_size 8192", "parameters, more than the limit of 17179869184"}},
      {"name too long",
       changed(xl256(), [](auto& c) { c.name = std::string(300, 'x'); }),
       {"name is 300 characters long", "limit of 256"}},
  };
}

TEST(ModelConfigBounds, EachViolationNamesTheFieldItsValueAndTheBound) {
  for (const BoundCase& bound : bound_cases()) {
    SCOPED_TRACE(bound.label);
    for (const auto& action : std::vector<std::function<void()>>{
             [&] { bound.config.validate(); },
             [&] { bound.config.parameter_count(); },
             [&] { expected_weight_shapes(bound.config); },
             [&] { DitWeights::random(bound.config, 1); },  // refused before any tensor is allocated
             [&] { DitWeights::load(test::data_path("dit_tiny_a.weights.safetensors"), bound.config); },
         }) {
      const Error error = test::thrown_error(action);
      EXPECT_EQ(error.kind(), ErrorKind::invalid_argument) << error.what();
      for (const std::string& mention : bound.mentions)
        EXPECT_NE(std::string(error.what()).find(mention), std::string::npos)
            << "expected '" << mention << "' in: " << error.what();
    }
  }
}

// The JSON form (a checkpoint's __metadata__.config) range-checks each integer before it is
// narrowed to int: nlohmann's get<int> would turn 2^32 + 28 into 28.
TEST(ModelConfigBounds, JsonIntegersAreCheckedBeforeNarrowing) {
  const nlohmann::json base = nlohmann::json::parse(
      R"({"input_size": 8, "patch_size": 2, "hidden_size": 64, "depth": 2, "num_heads": 4, "num_classes": 10})");
  const struct {
    const char* field;
    const char* value;
    std::string bound;
  } cases[] = {
      {"depth", "4294967324", "[1, 1024]"},  // 2^32 + 28
      {"depth", "2000000000", "[1, 1024]"},
      {"depth", "-1", "[1, 1024]"},
      {"num_classes", "2147483647", "[1, 1000000]"},
      {"num_classes", "18446744073709551615", "[1, 1000000]"},
      {"input_size", "2147483646", "[1, 1024]"},
      {"hidden_size", "-9223372036854775808", "[4, 32768]"},
      {"patch_size", "100", "[1, 64]"},
      {"num_heads", "4096", "[1, 1024]"},
      {"in_channels", "99999", "[1, 1024]"},
      {"mlp_ratio", "1e+300", "(0, 64]"},
      {"mlp_ratio", "-4.0", "(0, 64]"},
  };
  for (const auto& c : cases) {
    nlohmann::json json = base;
    json[c.field] = nlohmann::json::parse(c.value);
    const Error error = test::thrown_error([&] { model_config_from_json(json.dump()); });
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument) << error.what();
    const std::string message = error.what();
    EXPECT_NE(message.find(std::string(c.field) + " " + c.value), std::string::npos) << message;
    EXPECT_NE(message.find(c.bound), std::string::npos) << message;
  }
  EXPECT_EQ(model_config_from_json(base.dump()).depth, 2);
}

// The DiT family at both image sizes, the reference configs, and configs at each bound load:
// the bounds refuse nothing a real model has. parameter_count is exactly the expected tensors.
TEST(ModelConfigBounds, RealAndBoundaryConfigsAreAccepted) {
  std::vector<ModelConfig> configs;
  for (const std::string& name : model_names())
    for (int image_size : {256, 512}) configs.push_back(model_config(name, image_size));
  configs.push_back(tiny_config("dit_tiny_a"));
  configs.push_back(tiny_config("dit_tiny_b"));
  const ModelConfig small = tiny_config("dit_tiny_a");  // hidden 64, 4 heads, input 8
  configs.push_back(changed(small, [](auto& c) { c.depth = 1024; }));
  configs.push_back(changed(small, [](auto& c) { c.num_classes = 1'000'000; }));
  configs.push_back(changed(small, [](auto& c) { c.in_channels = 1024, c.patch_size = 1; }));
  configs.push_back(changed(small, [](auto& c) { c.mlp_ratio = 64.0f; }));
  configs.push_back(changed(small, [](auto& c) { c.input_size = 1024, c.patch_size = 4; }));  // 65536 tokens
  configs.push_back(changed(small, [](auto& c) { c.input_size = 64, c.patch_size = 64; }));
  configs.push_back(
      changed(small, [](auto& c) { c.hidden_size = 32768, c.num_heads = 1024, c.depth = 1, c.mlp_ratio = 1.0f; }));
  configs.push_back(changed(small, [](auto& c) { c.name = std::string(256, 'n'); }));
  for (const ModelConfig& config : configs) {
    SCOPED_TRACE(to_json(config).substr(0, 200));
    EXPECT_NO_THROW(config.validate());
    int64_t parameters = 0;
    for (const auto& [name, shape] : expected_weight_shapes(config)) parameters += Tensor::count(shape);
    EXPECT_EQ(config.parameter_count(), parameters);
    EXPECT_LE(parameters, model_limits::kMaxParameters);
  }
  EXPECT_EQ(model_config("DiT-XL/2", 512).parameter_count(), 675129632 + (1024 - 256) * 1152);
}

TEST(Weights, ExpectedShapesAreExactlyTheReferenceCheckpoints) {
  for (const std::string name : {"dit_tiny_a", "dit_tiny_b"}) {
    const SafetensorsFile file = SafetensorsFile::open(test::data_path(name + ".weights.safetensors"));
    std::map<std::string, std::vector<int64_t>> stored;
    for (const auto& [tensor, view] : file.tensors()) stored[tensor] = view.shape;
    EXPECT_EQ(expected_weight_shapes(tiny_config(name)), stored) << name;
  }
}

TEST(Weights, SinCosTableEqualsTheStoredOne) {
  for (const std::string name : {"dit_tiny_a", "dit_tiny_b"}) {
    const ModelConfig config = tiny_config(name);
    const Tensor stored = SafetensorsFile::open(test::data_path(name + ".weights.safetensors")).to_float("pos_embed");
    const Tensor random = DitWeights::random(config, 1234).at("pos_embed");
    ASSERT_EQ(random.shape, stored.shape) << name;
    double worst = 0;
    for (size_t i = 0; i < stored.data.size(); ++i)
      worst = std::max(worst, double(std::abs(random.data[i] - stored.data[i])));
    EXPECT_LE(worst, 1e-6) << name;
  }
}

TEST(Weights, RandomWeightsAreSeededAndEveryLayerIsNonZero) {
  const ModelConfig config = tiny_config("dit_tiny_b");
  const float std_dev = 0.05f;
  const DitWeights a = DitWeights::random(config, 7, std_dev), b = DitWeights::random(config, 7, std_dev),
                   c = DitWeights::random(config, 8, std_dev);
  ASSERT_EQ(a.tensors.size(), expected_weight_shapes(config).size());
  for (const auto& [name, shape] : expected_weight_shapes(config)) {
    const Tensor& t = a.at(name);
    ASSERT_EQ(t.shape, shape) << name;
    EXPECT_EQ(t.data, b.at(name).data) << name << ": same seed, same weights";
    if (name == "pos_embed") continue;
    EXPECT_NE(t.data, c.at(name).data) << name << ": another seed, other weights";
    double sum_squares = 0;
    size_t zeros = 0;
    for (float v : t.data) sum_squares += double(v) * v, zeros += v == 0.0f;
    EXPECT_LT(zeros, t.data.size()) << name << " is all zero";
    const double rms = std::sqrt(sum_squares / t.data.size());
    if (t.data.size() >= 1000) EXPECT_NEAR(rms, std_dev, 0.1 * std_dev) << name;
  }
  // Different tensors of the same shape draw different values.
  EXPECT_NE(a.at("blocks.0.attn.proj.weight").data, a.at("blocks.1.attn.proj.weight").data);
  expect_error([] { DitWeights::random(model_config("DiT-S/8", 256), 1, -1.0f); }, ErrorKind::invalid_argument, "std");
}

TEST(Backends, NamesParseAndDispatch) {
  for (Backend b : {Backend::cpu, Backend::cuda}) EXPECT_EQ(parse_backend(backend_name(b)), b);
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  for (SamplerKind k : {SamplerKind::ddpm, SamplerKind::ddim}) EXPECT_EQ(parse_sampler(sampler_name(k)), k);
  expect_error([] { parse_backend("tpu"); }, ErrorKind::invalid_argument, "tpu");
  expect_error([] { parse_precision("fp8"); }, ErrorKind::invalid_argument, "fp8");
  expect_error([] { parse_sampler("euler"); }, ErrorKind::invalid_argument, "euler");
  const ModelConfig config = tiny_config("dit_tiny_a");
  const DitWeights weights = DitWeights::random(config, 1);
  expect_error([&] { make_model(Backend::cpu, config, weights, Precision::fp16); }, ErrorKind::invalid_argument,
               "fp16");
#if !DIT_WITH_CUDA
  expect_error([&] { make_model(Backend::cuda, config, weights); }, ErrorKind::device, "without CUDA");
#endif
  DitWeights missing = weights;
  missing.tensors.erase("blocks.1.mlp.fc2.bias");
  expect_error([&] { make_model(Backend::cpu, config, missing); }, ErrorKind::invalid_argument,
               "blocks.1.mlp.fc2.bias");
  DitWeights misshapen = weights;
  misshapen.tensors["final_layer.linear.weight"] = Tensor({3, 3});
  expect_error([&] { make_model(Backend::cpu, config, misshapen); }, ErrorKind::invalid_argument,
               "final_layer.linear.weight");
}

TEST(CpuModel, ForwardRejectsMalformedInputs) {
  const ModelConfig config = tiny_config("dit_tiny_a");
  auto model = make_model(Backend::cpu, config, DitWeights::random(config, 1));
  const std::vector<int64_t> t{10, 20}, y{1, 10};
  expect_error([&] { model->forward(Tensor({2, 4, 8, 4}), t, y); }, ErrorKind::invalid_argument, "[2, 4, 8, 4]");
  expect_error(
      [&] {
        model->forward(Tensor({2, 4, 8, 8}), t, std::vector<int64_t>{1});
      },
      ErrorKind::invalid_argument, "1 labels");
  expect_error(
      [&] {
        model->forward(Tensor({2, 4, 8, 8}), t, std::vector<int64_t>{1, 11});
      },
      ErrorKind::invalid_argument, "11");
  expect_error(
      [&] {
        model->forward_with_cfg(Tensor({3, 4, 8, 8}), {}, {}, 4.0f);
      },
      ErrorKind::invalid_argument, "even");
  EXPECT_EQ(model->forward(Tensor({2, 4, 8, 8}), t, y).shape, (std::vector<int64_t>{2, 8, 8, 8}));
}

class Sampling : public testing::Test {
 protected:
  ModelConfig config = tiny_config("dit_tiny_a");
  DitWeights weights = DitWeights::load(test::data_path("dit_tiny_a.weights.safetensors"), config);
  std::unique_ptr<DitModel> model = make_model(Backend::cpu, config, weights);

  std::vector<float> image(const Tensor& batch, int64_t n) const {
    const int64_t size = batch.numel() / batch.dim(0);
    return {batch.data.begin() + n * size, batch.data.begin() + (n + 1) * size};
  }
};

TEST_F(Sampling, RequestsAreValidated) {
  const SampleRequest good{.class_labels = {1, 2}, .seeds = {1, 2}, .steps = 5};
  EXPECT_NO_THROW(validate(good, 10));
  auto with = [&](auto change) {
    SampleRequest r = good;
    change(r);
    return r;
  };
  expect_error([&] { validate(with([](auto& r) { r.seeds = {1}; }), 10); }, ErrorKind::invalid_argument, "seed");
  expect_error(
      [&] {
        validate(with([](auto& r) { r.class_labels = {1, 10}; }), 10);
      },
      ErrorKind::invalid_argument, "10");
  expect_error(
      [&] {
        validate(with([](auto& r) {
                   r.class_labels = {};
                   r.seeds = {};
                 }),
                 10);
      },
      ErrorKind::invalid_argument, "class label");
  expect_error([&] { validate(with([](auto& r) { r.steps = 0; }), 10); }, ErrorKind::invalid_argument, "steps");
  expect_error([&] { validate(with([](auto& r) { r.steps = 1001; }), 10); }, ErrorKind::invalid_argument, "steps");
  expect_error([&] { validate(with([](auto& r) { r.eta = 0.5f; }), 10); }, ErrorKind::invalid_argument, "ddim");
  expect_error(
      [&] {
        validate(with([](auto& r) {
                   r.sampler = SamplerKind::ddim;
                   r.eta = -1.0f;
                 }),
                 10);
      },
      ErrorKind::invalid_argument, "eta");
  expect_error([&] { model->sample(with([](auto& r) {
                       r.class_labels = {1, 10};
                     })); }, ErrorKind::invalid_argument,
               "10");
}

TEST_F(Sampling, AnImageDoesNotDependOnItsBatchAndRunsRepeatBitForBit) {
  for (SamplerKind kind : {SamplerKind::ddpm, SamplerKind::ddim}) {
    SCOPED_TRACE(sampler_name(kind));
    const float eta = kind == SamplerKind::ddim ? 0.5f : 0.0f;
    const SampleRequest alone{.class_labels = {5}, .seeds = {77}, .steps = 8, .sampler = kind, .eta = eta};
    const SampleRequest batch{
        .class_labels = {3, 5, 9}, .seeds = {11, 77, 12}, .steps = 8, .sampler = kind, .eta = eta};
    int progress_calls = 0;
    const Tensor one = model->sample(alone, [&](int done, int total) {
      EXPECT_EQ(done, ++progress_calls);
      EXPECT_EQ(total, 8);
    });
    EXPECT_EQ(progress_calls, 8);
    const Tensor three = model->sample(batch);
    ASSERT_EQ(one.shape, (std::vector<int64_t>{1, 4, 8, 8}));
    ASSERT_EQ(three.shape, (std::vector<int64_t>{3, 4, 8, 8}));
    EXPECT_EQ(image(one, 0), image(three, 1));
    EXPECT_EQ(model->sample(alone).data, one.data);
    EXPECT_NE(image(three, 0), image(three, 1));
    for (float v : three.data) ASSERT_TRUE(std::isfinite(v));
  }
}

TEST_F(Sampling, DdimNoiseOnlyWithPositiveEta) {
  const SampleRequest base{.class_labels = {4}, .seeds = {9}, .steps = 6, .sampler = SamplerKind::ddim};
  SampleRequest stochastic = base;
  stochastic.eta = 1.0f;
  const Tensor deterministic = model->sample(base), noisy = model->sample(stochastic);
  EXPECT_NE(deterministic.data, noisy.data);
  SampleRequest other_seed = base;
  other_seed.seeds = {10};
  // eta = 0: the seed only picks x_T; eta > 0 draws noise at every step but the last.
  int requests = 0;
  const DiffusionSchedule schedule = make_schedule(6);
  run_sampler(*model, initial_latents(stochastic, config), batch_labels(stochastic, config), schedule,
              SamplerKind::ddim, stochastic.cfg_scale, 1.0f, [&](int iteration, Tensor& noise) {
                ++requests;
                step_noise(stochastic, iteration, noise);
              });
  EXPECT_EQ(requests, 5);
  EXPECT_NE(model->sample(other_seed).data, deterministic.data);
}

TEST_F(Sampling, WithoutGuidanceTheBatchIsNotDoubled) {
  const SampleRequest request{.class_labels = {1, 2}, .seeds = {3, 4}, .steps = 4, .cfg_scale = 1.0f};
  EXPECT_EQ(batch_labels(request, config), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(initial_latents(request, config).dim(0), 2);
  const Tensor out = model->sample(request);
  EXPECT_EQ(out.shape, (std::vector<int64_t>{2, 4, 8, 8}));
  SampleRequest guided = request;
  guided.cfg_scale = 4.0f;
  EXPECT_EQ(batch_labels(guided, config), (std::vector<int64_t>{1, 2, 10, 10}));
  EXPECT_NE(model->sample(guided).data, out.data);
}

// The sampler's noise (initial_latents, step_noise; the noise source itself is tested in
// tests/kernels/noise_test.cpp): an image's noise is its own, whatever batch it is in.
TEST(SamplerNoise, AnImagesNoiseDoesNotDependOnItsBatch) {
  ModelConfig config = model_config("DiT-S/8", 256);
  SampleRequest alone{.class_labels = {5}, .seeds = {77}, .steps = 10, .cfg_scale = 4.0f};
  SampleRequest batch{.class_labels = {3, 5, 9}, .seeds = {11, 77, 12}, .steps = 10, .cfg_scale = 4.0f};
  const Tensor x_alone = initial_latents(alone, config), x_batch = initial_latents(batch, config);
  const int64_t per_image = x_alone.numel() / 2;
  ASSERT_EQ(x_batch.numel(), 6 * per_image);
  auto row = [per_image](const Tensor& t, int64_t r) {
    return std::vector<float>(t.data.begin() + r * per_image, t.data.begin() + (r + 1) * per_image);
  };
  EXPECT_EQ(row(x_alone, 0), row(x_batch, 1));
  EXPECT_EQ(row(x_alone, 1), row(x_batch, 4));  // the unconditional copy
  EXPECT_EQ(row(x_alone, 0), row(x_alone, 1));  // upstream's cat([z, z])

  Tensor noise_alone(x_alone.shape), noise_batch(x_batch.shape);
  step_noise(alone, 4, noise_alone);
  step_noise(batch, 4, noise_batch);
  EXPECT_EQ(row(noise_alone, 0), row(noise_batch, 1));
  EXPECT_EQ(row(noise_alone, 1), row(noise_batch, 4));
  EXPECT_NE(row(noise_alone, 0), row(noise_alone, 1));  // each half has its own noise
  EXPECT_NE(row(noise_alone, 0), row(x_alone, 0));      // and it is not x_T's
}

}  // namespace
}  // namespace dit
