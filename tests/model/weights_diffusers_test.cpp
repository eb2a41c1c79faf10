// DitWeights::load of diffusers' DiTTransformer2DModel layout: the same random weights written in
// the engine's layout and in diffusers' load to the same bytes; a missing, misshapen, unexpected,
// non-finite or inconsistent diffusers tensor is refused by its diffusers name; diffusers'
// config.json gives the configuration.
//
// The test writes diffusers' names itself, from the mapping of diffusers'
// scripts/convert_dit_to_diffusers.py (independent of the loader's table):
//   x_embedder.proj.*                  -> pos_embed.proj.*
//   t_embedder.mlp.0.* / mlp.2.*       -> transformer_blocks.N.norm1.emb.timestep_embedder.linear_1.* / linear_2.*
//   y_embedder.embedding_table.weight  -> transformer_blocks.N.norm1.emb.class_embedder.embedding_table.weight
//                                         (the three embedders: one copy in every block N)
//   blocks.N.attn.qkv.*                -> transformer_blocks.N.attn1.to_q.*, to_k.*, to_v.* (rows split in three)
//   blocks.N.attn.proj.*               -> transformer_blocks.N.attn1.to_out.0.*
//   blocks.N.mlp.fc1.* / fc2.*         -> transformer_blocks.N.ff.net.0.proj.* / ff.net.2.*
//   blocks.N.adaLN_modulation.1.*      -> transformer_blocks.N.norm1.linear.*
//   final_layer.adaLN_modulation.1.*   -> proj_out_1.*  (same shift, scale order: diffusers'
//                                         forward chunks proj_out_1 into shift, scale)
//   final_layer.linear.*               -> proj_out_2.*
//   pos_embed                          -> not saved (a non-persistent buffer): the fixed table
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/safetensors.h"
#include "model/config.h"
#include "model/weights.h"
#include "tests/model/diffusers_layout.h"
#include "tests/support/scratch_directory.h"
#include "tests/support/test_support.h"
#include "tests/support/thrown_error.h"

namespace dit {
namespace {

using test::ScratchDirectory;
using test::thrown_error;

// Three blocks, so the per-block embedder copies repeat more than once.
ModelConfig small_config() {
  ModelConfig config;
  config.name = "small";
  config.input_size = 8;
  config.patch_size = 2;
  config.hidden_size = 32;
  config.depth = 3;
  config.num_heads = 2;
  config.num_classes = 5;
  return config;
}

// The engine's tensors under diffusers' names (tests/model/diffusers_layout.h), every name mapped.
std::map<std::string, Tensor> diffusers_tensors(const DitWeights& weights, const ModelConfig& config,
                                                bool with_pos_embed) {
  std::vector<std::string> unmapped;
  std::map<std::string, Tensor> out = test::diffusers_layout(weights, config, with_pos_embed, unmapped);
  EXPECT_TRUE(unmapped.empty()) << "the table has no diffusers name for " << unmapped.front();
  return out;
}

void expect_same_bytes(const DitWeights& a, const DitWeights& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, tensor] : a.tensors) {
    const Tensor& other = b.at(name);
    ASSERT_EQ(tensor.shape, other.shape) << name;
    EXPECT_EQ(std::memcmp(tensor.data.data(), other.data.data(), tensor.data.size() * sizeof(float)), 0) << name;
  }
}

void expect_words(const Error& error, const std::vector<std::string>& words) {
  const std::string message = error.what();
  for (const std::string& word : words)
    EXPECT_NE(message.find(word), std::string::npos) << "expected '" << word << "' in: " << message;
}

TEST(DiffusersWeights, LoadToTheSameBytesAsTheEngineLayout) {
  ScratchDirectory scratch;
  const ModelConfig config = small_config();
  const DitWeights weights = DitWeights::random(config, 7, 0.05f);
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (bool with_pos_embed : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (with_pos_embed ? " with pos_embed.pos_embed" : ""));
      const std::string engine = scratch.file(std::string("engine_") + dtype_name(dtype) + ".safetensors");
      const std::string diffusers = scratch.file(std::string("diffusers_") + dtype_name(dtype) + ".safetensors");
      write_safetensors(engine, weights.tensors, {{"config", to_json(config)}}, dtype);
      write_safetensors(diffusers, diffusers_tensors(weights, config, with_pos_embed), {{"format", "pt"}}, dtype);
      EXPECT_FALSE(is_diffusers_dit_checkpoint(engine));
      EXPECT_TRUE(is_diffusers_dit_checkpoint(diffusers));
      DitWeights from_engine = DitWeights::load(engine, config);
      const DitWeights from_diffusers = DitWeights::load(diffusers, config);
      // A file without the table gets it computed in float32, not rounded to the file's dtype.
      if (!with_pos_embed) from_engine.tensors.at("pos_embed") = weights.at("pos_embed");
      expect_same_bytes(from_engine, from_diffusers);
      if (dtype == DType::F32) expect_same_bytes(weights, from_diffusers);
    }
}

// DitCheckpoint::read: any piece of any engine tensor, across the boundaries of the stored parts
// (diffusers' q, k and v concatenated into qkv) and of the computed table, is that piece of
// DitWeights::load's tensor, in both layouts; a non-finite value is named by the stored tensor
// and its element in it; a range past a tensor and a name no DiT has are refused.
TEST(DitCheckpointReads, PiecesEqualTheLoadedTensorsInBothLayouts) {
  ScratchDirectory scratch;
  const ModelConfig config = small_config();
  const uint64_t seed = test::fresh_seed();
  const DitWeights weights = DitWeights::random(config, seed, 0.05f);
  std::mt19937_64 random(seed);
  for (DType dtype : {DType::F32, DType::F16}) {
    for (bool diffusers : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (diffusers ? " diffusers" : " engine") + " seed " +
                   std::to_string(seed));
      const std::string path = scratch.file("pieces.safetensors");
      if (diffusers)
        write_safetensors(path, diffusers_tensors(weights, config, false), {{"format", "pt"}}, dtype);
      else
        write_safetensors(path, weights.tensors, {{"config", to_json(config)}}, dtype);
      const DitWeights loaded = DitWeights::load(path, config);
      const DitCheckpoint checkpoint = DitCheckpoint::open(path, config);
      EXPECT_EQ(checkpoint.layout(), diffusers ? "diffusers" : "");
      EXPECT_EQ(checkpoint.path(), path);
      for (const auto& [name, tensor] : loaded.tensors) {
        const size_t n = tensor.data.size();
        for (int trial = 0; trial < 6; ++trial) {
          const size_t first = trial == 0 ? 0 : random() % n;
          const size_t count = trial == 0 ? n : random() % (n - first + 1);
          std::vector<float> piece(count + 1, -3.0f);
          checkpoint.read(name, first, count, piece.data());
          ASSERT_EQ(std::memcmp(piece.data(), tensor.data.data() + first, count * sizeof(float)), 0)
              << name << " [" << first << ", " << first + count << ")";
          ASSERT_EQ(piece[count], -3.0f) << name << ": written past the piece";
        }
      }
      std::vector<float> out(64);
      Error error = thrown_error([&] { checkpoint.read("blocks.0.attn.qkv.bias", 3 * 32 - 2, 3, out.data()); });
      EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
      error = thrown_error([&] { checkpoint.read("blocks.9.attn.qkv.bias", 0, 1, out.data()); });
      EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(error.what()).find("no tensor 'blocks.9.attn.qkv.bias'"), std::string::npos)
          << error.what();
    }
  }
  // A NaN in diffusers' to_v of block 1: named by that tensor and its element, from a piece of qkv.
  DitWeights bad = weights;
  const int64_t D = config.hidden_size;
  bad.tensors.at("blocks.1.attn.qkv.weight").data[static_cast<size_t>(2 * D * D + 5)] =
      std::numeric_limits<float>::quiet_NaN();
  const std::string path = scratch.file("nan.safetensors");
  write_safetensors(path, diffusers_tensors(bad, config, false), {{"format", "pt"}});
  const DitCheckpoint checkpoint = DitCheckpoint::open(path, config);
  std::vector<float> out(static_cast<size_t>(3 * D * D));
  EXPECT_NO_THROW(checkpoint.read("blocks.1.attn.qkv.weight", 0, static_cast<size_t>(2 * D * D + 5), out.data()));
  const Error error = thrown_error([&] { checkpoint.read("blocks.1.attn.qkv.weight", 0, out.size(), out.data()); });
  EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
  expect_words(error, {"transformer_blocks.1.attn1.to_v.weight", "element 5 is NaN"});
}

TEST(DiffusersWeights, TheLoadersNamesMatchTheTestsTable) {
  const ModelConfig config = small_config();
  const std::map<std::string, Tensor> table = diffusers_tensors(DitWeights::random(config, 1), config, true);
  size_t named = 0;
  for (const auto& [name, shape] : expected_weight_shapes(config))
    for (const std::string& stored : diffusers_tensor_names(name)) {
      EXPECT_TRUE(table.count(stored)) << name << " -> " << stored;
      ++named;
    }
  // Every table entry is named once, but for the embedders' copies in blocks 1 and 2.
  EXPECT_EQ(named + 5 * (config.depth - 1), table.size());
  expect_words(thrown_error([] { diffusers_tensor_names("blocks.0.attn.qkv.scale"); }),
               {"no diffusers name for 'blocks.0.attn.qkv.scale'"});
  expect_words(thrown_error([] { diffusers_tensor_names("decoder.conv_in.weight"); }), {"not a DiT weight"});
}

// Each broken checkpoint is refused with the diffusers tensor it names.
TEST(DiffusersWeights, ABrokenCheckpointIsRefusedByDiffusersNames) {
  ScratchDirectory scratch;
  const ModelConfig config = small_config();
  const DitWeights weights = DitWeights::random(config, 3, 0.05f);
  const struct {
    const char* label;
    void (*change)(std::map<std::string, Tensor>&);
    std::vector<std::string> says;
  } cases[] = {
      {"missing_q",
       [](auto& t) { t.erase("transformer_blocks.1.attn1.to_q.weight"); },
       {"(diffusers layout) does not match small (1 problem)",
        "missing tensor 'transformer_blocks.1.attn1.to_q.weight' (expected shape [32, 32]) for "
        "blocks.1.attn.qkv.weight"}},
      {"wrong_shape",
       [](auto& t) {
         t["transformer_blocks.2.ff.net.2.weight"] = Tensor({32, 100});
       },
       {"tensor 'transformer_blocks.2.ff.net.2.weight' has shape [32, 100], expected [32, 128] for "
        "blocks.2.mlp.fc2.weight"}},
      {"missing_copy",
       [](auto& t) { t.erase("transformer_blocks.2.norm1.emb.timestep_embedder.linear_2.bias"); },
       {"missing tensor 'transformer_blocks.2.norm1.emb.timestep_embedder.linear_2.bias' (expected shape [32])"}},
      {"copy_differs",
       [](auto& t) { t.at("transformer_blocks.1.norm1.emb.class_embedder.embedding_table.weight").data[17] += 1.0f; },
       {"tensor 'transformer_blocks.1.norm1.emb.class_embedder.embedding_table.weight' differs from "
        "'transformer_blocks.0.norm1.emb.class_embedder.embedding_table.weight'"}},
      {"unexpected",
       [](auto& t) { t["transformer_blocks.0.norm2.weight"] = Tensor({32}); },
       {"unexpected tensor 'transformer_blocks.0.norm2.weight' of shape [32]"}},
      {"wrong_pos_embed",
       [](auto& t) {
         t["pos_embed.pos_embed"] = Tensor({1, 15, 32});
       },
       {"tensor 'pos_embed.pos_embed' has shape [1, 15, 32], expected [1, 16, 32] for pos_embed"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    std::map<std::string, Tensor> tensors = diffusers_tensors(weights, config, false);
    c.change(tensors);
    const std::string path = scratch.file(std::string(c.label) + ".safetensors");
    write_safetensors(path, tensors);
    const Error error = thrown_error([&] { DitWeights::load(path, config); });
    EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
    std::vector<std::string> words = c.says;
    words.push_back(path);
    expect_words(error, words);
  }

  std::map<std::string, Tensor> tensors = diffusers_tensors(weights, config, false);
  tensors.at("transformer_blocks.0.attn1.to_k.bias").data[5] = std::numeric_limits<float>::quiet_NaN();
  const std::string path = scratch.file("nan.safetensors");
  write_safetensors(path, tensors);
  expect_words(thrown_error([&] { DitWeights::load(path, config); }),
               {"tensor 'transformer_blocks.0.attn1.to_k.bias' (F32)", "element 5 is NaN"});
}

// DiT-XL/2 at 256 as facebook/DiT-XL-2-256's transformer/config.json has it.
constexpr const char* kXl2Config = R"({
  "_class_name": "DiTTransformer2DModel", "_diffusers_version": "0.30.0",
  "activation_fn": "gelu-approximate", "attention_bias": true, "attention_head_dim": 72, "dropout": 0.0,
  "in_channels": 4, "norm_elementwise_affine": false, "norm_eps": 1e-05, "norm_num_groups": 32,
  "norm_type": "ada_norm_zero", "num_attention_heads": 16, "num_embeds_ada_norm": 1000, "num_layers": 28,
  "out_channels": 8, "patch_size": 2, "sample_size": 32, "upcast_attention": false})";

TEST(DiffusersConfig, GivesTheDitConfiguration) {
  const ModelConfig config = model_config_from_diffusers_json(kXl2Config);
  EXPECT_EQ(to_json(config), to_json(model_config("DiT-XL/2", 256)));

  const struct {
    std::string from, to, says;
  } cases[] = {
      {"\"ada_norm_zero\"", "\"layer_norm\"", "norm_type 'layer_norm' is not ada_norm_zero"},
      {"\"out_channels\": 8", "\"out_channels\": 6", "out_channels 6 is neither in_channels 4 nor twice it"},
      {"\"num_layers\": 28", "\"num_layers\": -1", "'num_layers' -1 is outside [1, 1000000]"},
      {"\"num_layers\": 28,", "", "missing 'num_layers'"},
      {"DiTTransformer2DModel", "UNet2DModel", "_class_name 'UNet2DModel' is not DiTTransformer2DModel"},
      {"\"sample_size\": 32", "\"sample_size\": 33", "input_size 33 is not a multiple of patch_size 2"},
  };
  for (const auto& c : cases) {
    std::string text = kXl2Config;
    text.replace(text.find(c.from), c.from.size(), c.to);
    expect_words(thrown_error([&] { model_config_from_diffusers_json(text); }), {c.says});
  }
}

TEST(DiffusersConfig, ACheckpointCarriesItsConfiguration) {
  ScratchDirectory scratch;
  const ModelConfig config = small_config();
  const DitWeights weights = DitWeights::random(config, 5);
  const std::string engine = scratch.file("engine.safetensors");
  write_safetensors(engine, weights.tensors, {{"config", to_json(config)}});
  EXPECT_EQ(to_json(checkpoint_model_config(engine).value()), to_json(config));

  const std::string diffusers = scratch.file("diffusion_pytorch_model.safetensors");
  write_safetensors(diffusers, diffusers_tensors(weights, config, false));
  EXPECT_FALSE(checkpoint_model_config(diffusers).has_value());  // no config.json beside it yet
  std::ofstream(scratch.file("config.json"))
      << R"({"_class_name": "DiTTransformer2DModel", "activation_fn": "gelu-approximate", "attention_head_dim": 16,
             "in_channels": 4, "norm_type": "ada_norm_zero", "num_attention_heads": 2, "num_embeds_ada_norm": 5,
             "num_layers": 3, "out_channels": 8, "patch_size": 2, "sample_size": 8})";
  ModelConfig read = checkpoint_model_config(diffusers).value();
  EXPECT_EQ(read.name, "diffusers");
  read.name = config.name;
  EXPECT_EQ(to_json(read), to_json(config));
  expect_same_bytes(DitWeights::load(diffusers, read), weights);
}

}  // namespace
}  // namespace dit
