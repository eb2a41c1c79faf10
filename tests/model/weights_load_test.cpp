// DitWeights::load: the reference checkpoints load with their own configuration; a missing,
// extra or misshapen tensor, or a checkpoint of another model, is refused by name.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "model/weights.h"
#include "tests/support/scratch_directory.h"
#include "tests/support/thrown_error.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

using test::ScratchDirectory;
using test::thrown_error;

void expect_words(const Error& error, const std::vector<std::string>& words) {
  EXPECT_EQ(error.kind(), ErrorKind::invalid_file) << error.what();
  const std::string message = error.what();
  for (const std::string& word : words) {
    EXPECT_NE(message.find(word), std::string::npos) << "expected '" << word << "' in: " << message;
  }
}

std::string tiny_path(const std::string& model) { return test::data_path(model + ".weights.safetensors"); }

ModelConfig tiny_config(const std::string& model) {
  return model_config_from_json(SafetensorsFile::open(tiny_path(model)).metadata().at("config"));
}

// Every tensor of a reference checkpoint, as float32.
std::map<std::string, Tensor> tiny_tensors(const std::string& model) {
  const SafetensorsFile file = SafetensorsFile::open(tiny_path(model));
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, view] : file.tensors()) tensors.emplace(name, file.to_float(name));
  return tensors;
}

class TinyReference : public testing::TestWithParam<std::string> {};

TEST_P(TinyReference, LoadsWithItsConfiguration) {
  const std::string path = tiny_path(GetParam());
  const ModelConfig config = tiny_config(GetParam());
  const DitWeights weights = DitWeights::load(path, config);

  const auto expected = expected_weight_shapes(config);
  ASSERT_EQ(weights.tensors.size(), expected.size());
  int64_t parameters = 0;
  const SafetensorsFile file = SafetensorsFile::open(path);
  for (const auto& [name, shape] : expected) {
    const Tensor& tensor = weights.at(name);
    EXPECT_EQ(tensor.shape, shape) << name;
    parameters += tensor.numel();
    const std::vector<double> stored = file.to_double(name);
    ASSERT_EQ(tensor.data.size(), stored.size()) << name;
    for (size_t i = 0; i < stored.size(); ++i) {
      ASSERT_EQ(static_cast<double>(tensor.data[i]), stored[i]) << name << " element " << i;
    }
  }
  EXPECT_EQ(parameters, config.parameter_count());
  EXPECT_EQ(weights.at("pos_embed").shape, (std::vector<int64_t>{1, config.tokens(), config.hidden_size}));
}

INSTANTIATE_TEST_SUITE_P(ReferenceVectors, TinyReference, testing::Values("dit_tiny_a", "dit_tiny_b"));

TEST(WeightsLoad, HalfPrecisionCheckpointsLoadAsFloat32) {
  ScratchDirectory scratch;
  const std::map<std::string, Tensor> tensors = tiny_tensors("dit_tiny_a");
  const ModelConfig config = tiny_config("dit_tiny_a");
  for (DType dtype : {DType::F16, DType::BF16, DType::F64}) {
    const std::string path = scratch.file(std::string("tiny_") + dtype_name(dtype) + ".safetensors");
    write_safetensors(path, tensors, {}, dtype);
    const DitWeights weights = DitWeights::load(path, config);
    for (const auto& [name, tensor] : tensors) {
      const Tensor& loaded = weights.at(name);
      ASSERT_EQ(loaded.shape, tensor.shape) << name;
      for (size_t i = 0; i < tensor.data.size(); ++i) {
        const float want = dtype == DType::F16    ? f16_bits_to_float(float_to_f16_bits(tensor.data[i]))
                           : dtype == DType::BF16 ? bf16_bits_to_float(float_to_bf16_bits(tensor.data[i]))
                                                  : tensor.data[i];
        ASSERT_EQ(loaded.data[i], want) << dtype_name(dtype) << " " << name << " element " << i;
      }
    }
  }
}

TEST(WeightsLoad, AMissingTensorIsNamedWithItsShape) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("missing.safetensors");
  std::map<std::string, Tensor> tensors = tiny_tensors("dit_tiny_a");
  ASSERT_EQ(tensors.erase("final_layer.linear.bias"), 1u);
  write_safetensors(path, tensors);
  const Error error = thrown_error([&] { DitWeights::load(path, tiny_config("dit_tiny_a")); });
  expect_words(error, {path, "1 problem)", "missing tensor 'final_layer.linear.bias' (expected shape [32])"});
}

TEST(WeightsLoad, AMisshapenTensorIsNamedWithBothShapes) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("misshapen.safetensors");
  std::map<std::string, Tensor> tensors = tiny_tensors("dit_tiny_a");
  tensors["blocks.1.mlp.fc1.weight"] = Tensor({256, 65});
  write_safetensors(path, tensors);
  const Error error = thrown_error([&] { DitWeights::load(path, tiny_config("dit_tiny_a")); });
  expect_words(error, {path, "tensor 'blocks.1.mlp.fc1.weight' has shape [256, 65], expected [256, 64]"});
}

TEST(WeightsLoad, AnUnexpectedTensorIsRefused) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("extra.safetensors");
  std::map<std::string, Tensor> tensors = tiny_tensors("dit_tiny_a");
  tensors["blocks.2.attn.qkv.bias"] = Tensor({192});
  write_safetensors(path, tensors);
  const Error error = thrown_error([&] { DitWeights::load(path, tiny_config("dit_tiny_a")); });
  expect_words(error, {path, "unexpected tensor 'blocks.2.attn.qkv.bias' of shape [192]"});
}

TEST(WeightsLoad, ACheckpointOfAnotherConfigurationIsRefused) {
  const std::string path = tiny_path("dit_tiny_a");
  Error error = thrown_error([&] { DitWeights::load(path, tiny_config("dit_tiny_b")); });
  expect_words(error, {path, "(31 problems)",
                       "tensor 'blocks.0.attn.qkv.weight' has shape [192, 64], expected [432, 144]", "and 23 more"});

  ModelConfig deeper = tiny_config("dit_tiny_a");
  deeper.depth = 3;
  error = thrown_error([&] { DitWeights::load(path, deeper); });
  expect_words(error, {"missing tensor 'blocks.2.adaLN_modulation.1.bias' (expected shape [384])"});
}

// A NaN or an infinity in a checkpoint would give NaN latents and exit 0: the loader refuses it
// by tensor and element, in every stored dtype (an F64 beyond float32's range becomes an
// infinity, so it is refused too), wherever it sits in the tensor.
TEST(WeightsLoad, NonFiniteWeightsAreRefusedByTensorAndElement) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const struct {
    DType dtype;
    const char* tensor;
    int64_t element;
    float value;
    const char* says;
  } cases[] = {
      {DType::F32, "blocks.1.mlp.fc1.weight", 0, nan, "is NaN"},
      {DType::F32, "final_layer.linear.bias", 31, inf, "is +inf"},
      {DType::F32, "pos_embed", 1000, -inf, "is -inf"},
      {DType::F16, "y_embedder.embedding_table.weight", 77, nan, "is NaN"},
      {DType::F16, "blocks.0.attn.qkv.weight", 12287, -inf, "is -inf"},  // the last element
      {DType::BF16, "t_embedder.mlp.0.weight", 5, inf, "is +inf"},
      {DType::F64, "x_embedder.proj.bias", 3, nan, "is NaN"},
      {DType::F64, "blocks.1.attn.proj.weight", 9, inf, "is +inf"},
  };
  ScratchDirectory scratch;
  const ModelConfig config = tiny_config("dit_tiny_a");
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " " + c.tensor);
    std::map<std::string, Tensor> tensors = tiny_tensors("dit_tiny_a");
    tensors.at(c.tensor).data.at(static_cast<size_t>(c.element)) = c.value;
    const std::string path = scratch.file(std::string("non_finite_") + dtype_name(c.dtype) + ".safetensors");
    write_safetensors(path, tensors, {}, c.dtype);
    const Error error = thrown_error([&] { DitWeights::load(path, config); });
    expect_words(error, {path, std::string("tensor '") + c.tensor + "' (" + dtype_name(c.dtype) + ")",
                         "element " + std::to_string(c.element) + " " + c.says, "must be finite"});
  }

  // A finite F64 value beyond float32's range is an infinity once converted, and named so.
  std::map<std::string, TensorBytes> wide;
  const SafetensorsFile reference = SafetensorsFile::open(tiny_path("dit_tiny_a"));
  for (const auto& [name, view] : reference.tensors()) {
    const std::vector<double> values = reference.to_double(name);
    TensorBytes bytes{DType::F64, view.shape, std::vector<std::byte>(values.size() * sizeof(double))};
    std::memcpy(bytes.bytes.data(), values.data(), bytes.bytes.size());
    wide.emplace(name, std::move(bytes));
  }
  const double huge = -1e300;
  std::memcpy(wide.at("blocks.0.mlp.fc2.bias").bytes.data() + 2 * sizeof(double), &huge, sizeof huge);
  const std::string path = scratch.file("beyond_float.safetensors");
  write_safetensors_bytes(path, wide);
  expect_words(thrown_error([&] { DitWeights::load(path, config); }),
               {"tensor 'blocks.0.mlp.fc2.bias' (F64)", "element 2 is -inf as float32"});

  // The finite checkpoint it came from still loads.
  EXPECT_NO_THROW(DitWeights::load(tiny_path("dit_tiny_a"), config));
}

// A config beyond its bounds is refused before the checkpoint is even opened: no tensor is
// sized from it (the expected-shape arithmetic would have overflowed int for these).
TEST(WeightsLoad, AConfigBeyondItsBoundsIsRefusedBeforeReading) {
  ModelConfig config = tiny_config("dit_tiny_a");
  const struct {
    void (*change)(ModelConfig&);
    const char* says;
  } cases[] = {
      {[](ModelConfig& c) { c.num_classes = 2147483647; }, "num_classes 2147483647 is outside [1, 1000000]"},
      {[](ModelConfig& c) { c.input_size = 2147483646, c.patch_size = 2; }, "input_size 2147483646 is outside"},
      {[](ModelConfig& c) { c.depth = 2000000000; }, "depth 2000000000 is outside [1, 1024]"},
  };
  for (const auto& c : cases) {
    ModelConfig bad = config;
    c.change(bad);
    const Error error = thrown_error([&] { DitWeights::load("/nonexistent/checkpoint.safetensors", bad); });
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument) << error.what();
    EXPECT_NE(std::string(error.what()).find(c.says), std::string::npos) << error.what();
  }
}

TEST(WeightsLoad, AMalformedOrAbsentFileIsRefusedByTheReader) {
  ScratchDirectory scratch;
  const std::string path = scratch.file("truncated.safetensors");
  write_safetensors(path, tiny_tensors("dit_tiny_a"));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);
  Error error = thrown_error([&] { DitWeights::load(path, tiny_config("dit_tiny_a")); });
  expect_words(error, {path, "runs past the end of the data section"});

  error = thrown_error([&] { DitWeights::load(scratch.file("absent.safetensors"), tiny_config("dit_tiny_a")); });
  EXPECT_EQ(error.kind(), ErrorKind::io);
}

}  // namespace
}  // namespace dit
