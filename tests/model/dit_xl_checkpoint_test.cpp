// A DiT-XL/2-sized checkpoint in the original layout (every key name and shape of a converted
// DiT-XL-2-256x256.pt), written by the test in F16 with synthetic values, loads through
// DitWeights::load with every value intact. No real checkpoint can be downloaded here; this is
// how the loader is proven at full size.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "core/safetensors.h"
#include "model/weights.h"
#include "tests/support/scratch_directory.h"

namespace dit {
namespace {

// DiT-XL/2 at 256 has 675,129,632 parameters in its state_dict (pos_embed's 294,912 included),
// counted from the upstream module shapes (facebookresearch/DiT models.py).
constexpr int64_t kDitXl2Parameters = 675'129'632;

// A cheap, reproducible value in [-0.125, 0.125) for element `index` of the tensor numbered
// `tensor` (splitmix64), so the test can check every loaded value without keeping the source.
float synthetic_value(uint64_t tensor, uint64_t index) {
  uint64_t z = (tensor << 40) + index + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<int64_t>(z >> 40) - (int64_t{1} << 23)) * 0x1p-26f;
}

TEST(DitXlCheckpoint, LoadsInTheOriginalLayout) {
  const ModelConfig config = model_config("DiT-XL/2", 256);
  const auto shapes = expected_weight_shapes(config);
  test::ScratchDirectory scratch;
  const std::string path = scratch.file("DiT-XL-2-256x256.safetensors");

  int64_t written_parameters = 0;
  {
    std::map<std::string, Tensor> tensors;
    uint64_t ordinal = 0;
    for (const auto& [name, shape] : shapes) {
      Tensor tensor(shape);
      for (size_t i = 0; i < tensor.data.size(); ++i) tensor.data[i] = synthetic_value(ordinal, i);
      written_parameters += tensor.numel();
      tensors.emplace(name, std::move(tensor));
      ++ordinal;
    }
    write_safetensors(path, tensors, {{"config", to_json(config)}}, DType::F16);
  }
  EXPECT_EQ(written_parameters, kDitXl2Parameters);
  EXPECT_EQ(config.parameter_count(), kDitXl2Parameters);
  const auto file_size = static_cast<int64_t>(std::filesystem::file_size(path));
  EXPECT_GE(file_size, 2 * kDitXl2Parameters);
  EXPECT_LT(file_size, 2 * kDitXl2Parameters + (1 << 20)) << "the header should be a few tens of kilobytes";

  const DitWeights weights = DitWeights::load(path, config);
  ASSERT_EQ(weights.tensors.size(), shapes.size());
  int64_t loaded_parameters = 0;
  uint64_t ordinal = 0;
  for (const auto& [name, shape] : shapes) {
    const Tensor& tensor = weights.at(name);
    ASSERT_EQ(tensor.shape, shape) << name;
    loaded_parameters += tensor.numel();
    for (size_t i = 0; i < tensor.data.size(); ++i) {
      const float want = f16_bits_to_float(float_to_f16_bits(synthetic_value(ordinal, i)));
      ASSERT_EQ(tensor.data[i], want) << name << " element " << i;
    }
    ++ordinal;
  }
  EXPECT_EQ(loaded_parameters, kDitXl2Parameters);
  EXPECT_EQ(weights.at("blocks.27.adaLN_modulation.1.weight").shape, (std::vector<int64_t>{6 * 1152, 1152}));
  EXPECT_EQ(weights.at("final_layer.linear.weight").shape, (std::vector<int64_t>{32, 1152}));
  EXPECT_EQ(weights.at("y_embedder.embedding_table.weight").shape, (std::vector<int64_t>{1001, 1152}));
}

}  // namespace
}  // namespace dit
