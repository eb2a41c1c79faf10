// DitWeights::load: the reference checkpoints load with their own configuration; a missing,
// extra or misshapen tensor, or a checkpoint of another model, is refused by name.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
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
