// The CUDA DiT as a whole: the reference vectors on the fp32 path, DiT-XL/2 with random weights
// against the CPU reference (fp32) and against its own fp32 path (tf32, fp16, bf16) at 256 and
// 512, the GPU sampling loop against the host loop, and determinism (identical bytes).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/dit_model.h"
#include "core/safetensors.h"
#include "model/sampler.h"
#include "model/schedule.h"
#include "model/weights.h"
#include "tests/support/scratch_directory.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

constexpr double kVectorBound = 1e-5;      // fp32 path against the float64 oracle
constexpr double kTrajectoryBound = 1e-4;  // float32 error compounding over 10 steps
constexpr double kXlFp32Bound = 1e-4;      // CUDA fp32 against the CPU reference, DiT-XL/2
constexpr double kXlTf32Bound = 5e-3;      // 10-bit mantissas in every GEMM, as fp16
constexpr double kXlFp16Bound = 5e-3;
constexpr double kXlBf16Bound = 2e-2;
constexpr double kLoopBound = 1e-4;  // GPU loop against the CPU host loop, 10 steps
// GPU loop against the host loop over the same GPU model: they differ only in the batching of
// the adaLN GEMM (a chunk of steps at once against one step), i.e. in float32 rounding
constexpr double kSameModelLoopBound = 3e-5;

void expect_close(const std::string& name, const Tensor& out, const std::vector<double>& ref, double bound) {
  const test::Comparison c = test::compare(out.data, ref);
  std::printf("  %-52s relative error %.3e (bound %.1e), max abs %.3e\n", name.c_str(), c.relative_error, bound,
              c.max_abs_error);
  EXPECT_EQ(c.non_finite, 0u) << name;
  EXPECT_LE(c.relative_error, bound) << name << ": " << c.describe(out.data, ref);
}

std::vector<double> as_double(const Tensor& t) { return std::vector<double>(t.data.begin(), t.data.end()); }

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && std::memcmp(a.ptr(), b.ptr(), a.data.size() * sizeof(float)) == 0;
}

struct TinyFixture {
  ModelConfig config;
  DitWeights weights;
  SafetensorsFile vectors;
};

TinyFixture load_tiny(const std::string& name) {
  const std::string weights_path = test::data_path(name + ".weights.safetensors");
  const ModelConfig config = model_config_from_json(SafetensorsFile::open(weights_path).metadata().at("config"));
  return TinyFixture{config, DitWeights::load(weights_path, config),
                     SafetensorsFile::open(test::data_path(name + ".vectors.safetensors"))};
}

// --- the reference vectors on the fp32 path -----------------------------------------------------

class CudaReferenceVectors : public testing::TestWithParam<std::string> {};

TEST_P(CudaReferenceVectors, forward_matches) {
  const TinyFixture f = load_tiny(GetParam());
  const auto model = make_model(Backend::cuda, f.config, f.weights, Precision::fp32);
  const Tensor out =
      model->forward(f.vectors.to_float("forward.x"), f.vectors.to_int64("forward.t"), f.vectors.to_int64("forward.y"));
  ASSERT_EQ(out.shape, f.vectors.at("forward.out").shape);
  expect_close(GetParam() + "/forward.out", out, f.vectors.to_double("forward.out"), kVectorBound);
}

TEST_P(CudaReferenceVectors, guided_forward_matches) {
  const TinyFixture f = load_tiny(GetParam());
  const auto model = make_model(Backend::cuda, f.config, f.weights, Precision::fp32);
  const float scale = static_cast<float>(f.vectors.to_double("cfg.scale").at(0));
  const Tensor out = model->forward_with_cfg(f.vectors.to_float("cfg.x"), f.vectors.to_int64("cfg.t"),
                                             f.vectors.to_int64("cfg.y"), scale);
  ASSERT_EQ(out.shape, f.vectors.at("cfg.out").shape);
  expect_close(GetParam() + "/cfg.out", out, f.vectors.to_double("cfg.out"), kVectorBound);
}

// The host loop over the CUDA model with the oracle's own noise: the guided CUDA forward inside a
// sampler reproduces the upstream trajectories.
TEST_P(CudaReferenceVectors, trajectories_match) {
  const TinyFixture f = load_tiny(GetParam());
  const auto model = make_model(Backend::cuda, f.config, f.weights, Precision::fp32);
  const Tensor x_T = f.vectors.to_float("ddpm.xT");
  const std::vector<int64_t> labels = f.vectors.to_int64("ddpm.y");
  const float scale = static_cast<float>(f.vectors.to_double("cfg.scale").at(0));
  const std::vector<double> noise = f.vectors.to_double("ddpm.noise");
  const size_t step_size = static_cast<size_t>(x_T.numel());
  const DiffusionSchedule schedule = make_schedule(10);
  const std::pair<SamplerKind, const char*> runs[] = {{SamplerKind::ddpm, "ddpm.trajectory"},
                                                      {SamplerKind::ddim, "ddim.trajectory"}};
  for (const auto& [kind, name] : runs) {
    const std::vector<double> trajectory = f.vectors.to_double(name);
    const Tensor result =
        run_sampler(*model, x_T, labels, schedule, kind, scale, 0.0f, [&](int iteration, Tensor& out) {
          for (size_t i = 0; i < step_size; ++i) out.data[i] = static_cast<float>(noise[iteration * step_size + i]);
        });
    const std::vector<double> last(trajectory.end() - static_cast<std::ptrdiff_t>(step_size), trajectory.end());
    expect_close(GetParam() + "/" + name, result, last, kTrajectoryBound);
  }
}

INSTANTIATE_TEST_SUITE_P(tiny, CudaReferenceVectors, testing::Values("dit_tiny_a", "dit_tiny_b"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// --- the sampling loop on the GPU ---------------------------------------------------------------

struct LoopCase {
  SamplerKind sampler;
  float cfg_scale, eta;
  std::string name() const {
    return std::string(sampler_name(sampler)) + "_cfg" + std::to_string(static_cast<int>(cfg_scale * 10)) + "_eta" +
           std::to_string(static_cast<int>(eta * 10));
  }
};

class CudaSampling : public testing::TestWithParam<LoopCase> {};

TEST_P(CudaSampling, gpu_loop_matches_host_loops) {
  const LoopCase k = GetParam();
  const TinyFixture f = load_tiny("dit_tiny_b");
  const uint64_t seed = test::fresh_seed();
  SampleRequest request;
  request.class_labels = {1, 5, 9};
  request.seeds = {seed, seed + 1, seed ^ 0x5eedull};
  request.steps = 10;
  request.cfg_scale = k.cfg_scale;
  request.sampler = k.sampler;
  request.eta = k.eta;
  std::printf("  seed %llu\n", static_cast<unsigned long long>(seed));

  const auto cpu_model = make_model(Backend::cpu, f.config, f.weights);
  const auto cuda_model = make_model(Backend::cuda, f.config, f.weights, Precision::fp32);
  int progress_calls = 0, last_done = 0;
  const Tensor gpu = cuda_model->sample(request, [&](int done, int total) {
    ++progress_calls;
    last_done = done;
    EXPECT_EQ(total, request.steps);
  });
  EXPECT_EQ(progress_calls, request.steps);
  EXPECT_EQ(last_done, request.steps);
  ASSERT_EQ(gpu.shape, (std::vector<int64_t>{3, f.config.in_channels, f.config.input_size, f.config.input_size}));

  const Tensor host_loop_cpu = cpu_model->sample(request);
  expect_close("sampling/" + k.name() + "/gpu_loop_vs_cpu_model", gpu, as_double(host_loop_cpu), kLoopBound);
  // the same CUDA forward under the host loop: isolates the loop (noise, guidance, update)
  const Tensor host_loop_gpu = cuda_model->DitModel::sample(request);
  expect_close("sampling/" + k.name() + "/gpu_loop_vs_host_loop", gpu, as_double(host_loop_gpu), kSameModelLoopBound);

  const Tensor again = cuda_model->sample(request);
  EXPECT_TRUE(same_bytes(gpu, again)) << "two GPU samplings of the same request differ";
}

INSTANTIATE_TEST_SUITE_P(loop, CudaSampling,
                         testing::Values(LoopCase{SamplerKind::ddpm, 4.0f, 0.0f},
                                         LoopCase{SamplerKind::ddpm, 1.0f, 0.0f},
                                         LoopCase{SamplerKind::ddim, 4.0f, 0.0f},
                                         LoopCase{SamplerKind::ddim, 1.5f, 0.5f}),
                         [](const auto& info) { return info.param.name(); });

TEST(CudaSamplingBatch, an_image_does_not_depend_on_its_batch) {
  const TinyFixture f = load_tiny("dit_tiny_a");
  const auto model = make_model(Backend::cuda, f.config, f.weights, Precision::fp32);
  SampleRequest pair;
  pair.class_labels = {2, 4};
  pair.seeds = {101, 202};
  pair.steps = 5;
  SampleRequest single = pair;
  single.class_labels = {4};
  single.seeds = {202};
  const Tensor both = model->sample(pair), alone = model->sample(single);
  Tensor second({1, both.dim(1), both.dim(2), both.dim(3)});
  std::copy(both.data.begin() + static_cast<std::ptrdiff_t>(second.numel()), both.data.end(), second.data.begin());
  // the GEMMs may pick other algorithms for another batch size: close, not identical
  expect_close("sampling/batch_independence", alone, as_double(second), kSameModelLoopBound);
}

TEST(CudaGraphs, replayed_graph_equals_eager_run) {
  const TinyFixture f = load_tiny("dit_tiny_b");
  SampleRequest request;
  request.class_labels = {3, 8};
  request.seeds = {7, 9};
  request.steps = 6;
  const auto graphs = make_model(Backend::cuda, f.config, f.weights, Precision::fp32);
  EngineOptions eager_options;
  eager_options.cuda_graphs = false;
  const auto eager = make_model(Backend::cuda, f.config, f.weights, Precision::fp32, eager_options);
  EXPECT_TRUE(same_bytes(graphs->sample(request), eager->sample(request)))
      << "the sampling loop with the forward pass as a CUDA Graph differs from the eager loop";
}

// --- DiT-XL/2 with random weights ---------------------------------------------------------------

struct XlInputs {
  Tensor x;
  std::vector<int64_t> t, y;
};

XlInputs xl_inputs(const ModelConfig& config, uint64_t seed) {
  XlInputs in;
  in.x = Tensor({2, config.in_channels, config.input_size, config.input_size});
  in.x.data = test::random_normal(static_cast<size_t>(in.x.numel()), seed);
  std::mt19937_64 generator(seed);
  in.t = {static_cast<int64_t>(generator() % 1000), static_cast<int64_t>(generator() % 1000)};
  in.y = {static_cast<int64_t>(generator() % config.num_classes), config.null_class()};
  std::printf("  inputs: seed %llu, t = {%lld, %lld}, y = {%lld, %lld}\n", static_cast<unsigned long long>(seed),
              static_cast<long long>(in.t[0]), static_cast<long long>(in.t[1]), static_cast<long long>(in.y[0]),
              static_cast<long long>(in.y[1]));
  return in;
}

Tensor cuda_forward(const ModelConfig& config, const DitWeights& weights, Precision precision, const XlInputs& in) {
  const auto model = make_model(Backend::cuda, config, weights, precision);
  return model->forward(in.x, in.t, in.y);
}

TEST(CudaXl, fp32_forward_matches_cpu_reference_at_256) {
  const ModelConfig config = model_config("DiT-XL/2", 256);
  const uint64_t seed = test::fresh_seed();
  const DitWeights weights = DitWeights::random(config, seed);
  const XlInputs in = xl_inputs(config, seed + 1);
  const Tensor gpu = cuda_forward(config, weights, Precision::fp32, in);
  const Tensor cpu = make_model(Backend::cpu, config, weights)->forward(in.x, in.t, in.y);
  expect_close("xl256/fp32_vs_cpu", gpu, as_double(cpu), kXlFp32Bound);
}

class CudaXlPrecision : public testing::TestWithParam<int> {};

TEST_P(CudaXlPrecision, reduced_precisions_stay_near_fp32) {
  const int image_size = GetParam();
  const ModelConfig config = model_config("DiT-XL/2", image_size);
  const uint64_t seed = test::fresh_seed();
  const DitWeights weights = DitWeights::random(config, seed);
  const XlInputs in = xl_inputs(config, seed + 1);
  const Tensor fp32 = cuda_forward(config, weights, Precision::fp32, in);
  const std::vector<double> reference = as_double(fp32);
  const std::string prefix = "xl" + std::to_string(image_size) + "/";
  expect_close(prefix + "tf32_vs_fp32", cuda_forward(config, weights, Precision::tf32, in), reference, kXlTf32Bound);
  const Tensor fp16 = cuda_forward(config, weights, Precision::fp16, in);
  expect_close(prefix + "fp16_vs_fp32", fp16, reference, kXlFp16Bound);
  expect_close(prefix + "bf16_vs_fp32", cuda_forward(config, weights, Precision::bf16, in), reference, kXlBf16Bound);

  // determinism: the same model twice, and a fresh model, give the same bytes
  const auto model = make_model(Backend::cuda, config, weights, Precision::fp16);
  const Tensor first = model->forward(in.x, in.t, in.y), second = model->forward(in.x, in.t, in.y);
  EXPECT_TRUE(same_bytes(first, second)) << prefix << "two fp16 forwards of one model differ";
  EXPECT_TRUE(same_bytes(first, fp16)) << prefix << "fp16 forwards of two models differ";
}

INSTANTIATE_TEST_SUITE_P(xl, CudaXlPrecision, testing::Values(256, 512),
                         [](const auto& info) { return "image" + std::to_string(info.param); });

// Seeded random weights drawn on the device (make_model with RandomDitWeights) are the weights
// DitWeights::random makes on the host, converted as the backend converts host weights: the
// forward pass and a guided sampling run of both models give the same bytes, at every precision.
class CudaDeviceRandomWeights : public testing::TestWithParam<Precision> {};

TEST_P(CudaDeviceRandomWeights, equal_host_random_weights_bit_for_bit) {
  const Precision precision = GetParam();
  const ModelConfig config = model_config("DiT-XL/2", 256);
  const uint64_t seed = test::fresh_seed();
  const float std_dev = 0.02f + static_cast<float>(seed % 7) * 0.01f;  // not always the default
  const XlInputs in = xl_inputs(config, seed + 1);
  Tensor host_forward, host_sample;
  SampleRequest request;
  request.class_labels = {static_cast<int>(seed % 1000)};
  request.seeds = {seed + 2};
  request.steps = 3;
  request.cfg_scale = 4.0f;
  {
    const auto host = make_model(Backend::cuda, config, DitWeights::random(config, seed, std_dev), precision);
    host_forward = host->forward(in.x, in.t, in.y);
    host_sample = host->sample(request);
  }
  const auto device = make_model(Backend::cuda, config, RandomDitWeights{seed, std_dev}, precision);
  EXPECT_TRUE(same_bytes(device->forward(in.x, in.t, in.y), host_forward))
      << precision_name(precision) << ": the forward pass of device-drawn weights differs (seed " << seed << ")";
  EXPECT_TRUE(same_bytes(device->sample(request), host_sample))
      << precision_name(precision) << ": sampling with device-drawn weights differs (seed " << seed << ")";
}

INSTANTIATE_TEST_SUITE_P(precisions, CudaDeviceRandomWeights,
                         testing::Values(Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16),
                         [](const auto& info) { return std::string(precision_name(info.param)); });

// A checkpoint streamed from its mapping (make_model with a DitCheckpoint: pieces converted into
// pinned buffers, copied while the next converts) is the model DitWeights::load of the same file
// gives: the forward pass gives the same bytes at every precision, from an fp32 file (tensors of
// more than one piece) and an fp16 one. A NaN deep in a large tensor is refused by name and
// element, and the failed load leaves the device usable.
class CudaCheckpointUpload : public testing::TestWithParam<Precision> {};

TEST_P(CudaCheckpointUpload, streamed_weights_equal_loaded_weights_bit_for_bit) {
  const Precision precision = GetParam();
  ModelConfig config = model_config("DiT-B/2", 256);  // D 768: the MLP and adaLN weights pass 8 MB in fp32
  config.depth = 2;
  config.name = "DiT-B/2 of depth 2";
  const uint64_t seed = test::fresh_seed();
  const DitWeights weights = DitWeights::random(config, seed, 0.03f);
  const XlInputs in = xl_inputs(config, seed + 1);
  test::ScratchDirectory scratch;
  for (DType dtype : {DType::F32, DType::F16}) {
    const std::string path = scratch.file(std::string("b2_") + dtype_name(dtype) + ".safetensors");
    write_safetensors(path, weights.tensors, {}, dtype);
    const Tensor loaded = cuda_forward(config, DitWeights::load(path, config), precision, in);
    const auto streamed = make_model(Backend::cuda, DitCheckpoint::open(path, config), precision);
    EXPECT_TRUE(same_bytes(streamed->forward(in.x, in.t, in.y), loaded))
        << precision_name(precision) << " from " << dtype_name(dtype)
        << ": the streamed checkpoint's forward pass differs (seed " << seed << ")";
  }
  DitWeights bad = weights;
  bad.tensors.at("blocks.1.mlp.fc1.weight").data[2'000'003] = -std::numeric_limits<float>::infinity();
  const std::string path = scratch.file("b2_inf.safetensors");
  write_safetensors(path, bad.tensors);
  const DitCheckpoint checkpoint = DitCheckpoint::open(path, config);
  try {
    make_model(Backend::cuda, checkpoint, precision);
    ADD_FAILURE() << "a checkpoint holding -inf was loaded";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
    EXPECT_NE(std::string(error.what()).find("'blocks.1.mlp.fc1.weight' (F32) element 2000003 is -inf"),
              std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(
      same_bytes(cuda_forward(config, weights, precision, in),
                 cuda_forward(config, DitWeights::load(scratch.file("b2_F32.safetensors"), config), precision, in)));
}

INSTANTIATE_TEST_SUITE_P(precisions, CudaCheckpointUpload,
                         testing::Values(Precision::fp32, Precision::fp16, Precision::bf16),
                         [](const auto& info) { return std::string(precision_name(info.param)); });

TEST(CudaModelChecks, rejects_bad_inputs) {
  const TinyFixture f = load_tiny("dit_tiny_a");
  const auto model = make_model(Backend::cuda, f.config, f.weights, Precision::fp16);
  EXPECT_EQ(model->backend(), Backend::cuda);
  EXPECT_EQ(model->precision(), Precision::fp16);
  const Tensor x({2, f.config.in_channels, f.config.input_size, f.config.input_size});
  const std::vector<int64_t> t = {1, 2}, good_y = {0, f.config.null_class()};
  const std::vector<int64_t> bad_y = {0, f.config.num_classes + 1}, short_t = {1};
  EXPECT_THROW(model->forward(x, t, bad_y), Error);
  EXPECT_THROW(model->forward(x, short_t, good_y), Error);
  const Tensor odd({3, f.config.in_channels, f.config.input_size, f.config.input_size});
  const std::vector<int64_t> t3 = {1, 2, 3}, y3 = {0, 1, 2};
  EXPECT_THROW(model->forward_with_cfg(odd, t3, y3, 4.0f), Error);
  EXPECT_NO_THROW(model->forward(x, t, good_y));
}

}  // namespace
}  // namespace dit
