// dit-sample end to end, latents only (--vae none; dit_sample_images_test covers the images): a
// run from a checkpoint writes the same latents as DitModel::sample in process, with the request
// (and the checkpoint's sha256) in the metadata; bad arguments and files, a checkpoint of another
// sha256 than --weights-sha256's included, exit with code 2 and a message naming the problem.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/dit_model.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/sha256.h"
#include "model/weights.h"
#include "tests/model/diffusers_layout.h"
#include "tests/support/process_runner.h"
#include "tests/support/test_support.h"

namespace dit {
namespace {

using test::ProcessResult;

ProcessResult run_dit_sample(const std::string& arguments) { return test::run_program(DIT_SAMPLE_PATH, arguments); }

class DitSample : public testing::Test {
 protected:
  std::filesystem::path out_dir =
      std::filesystem::temp_directory_path() / ("dit_sample_test_" + std::to_string(getpid()));
  void TearDown() override { std::filesystem::remove_all(out_dir); }
};

TEST_F(DitSample, WritesTheLatentsOfTheRequestFromACheckpoint) {
  const std::string weights = test::data_path("dit_tiny_a.weights.safetensors");
  const std::filesystem::path phases_path = out_dir / "phases.json";
  const ProcessResult run = run_dit_sample("--weights " + weights +
                                           " --class 3 --class 7 --seed 40 --steps 6 --cfg-scale 3 "
                                           "--sampler ddpm --vae none --phase-times " +
                                           phases_path.string() + " --out " + out_dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("step 6/6"), std::string::npos) << run.output;
  // From a checkpoint the phases are the random default's, and nothing runs beside them.
  const nlohmann::json times = nlohmann::json::parse(std::ifstream(phases_path));
  std::vector<std::string> names;
  for (const auto& phase : times["phases"]) names.push_back(phase["phase"]);
  EXPECT_EQ(names, (std::vector<std::string>{"arguments", "backend_check", "hash", "context", "dit_weights",
                                             "dit_model", "setup", "first_step"}));
  EXPECT_TRUE(times["overlapped"].empty()) << times.dump();

  const SafetensorsFile file = SafetensorsFile::open((out_dir / "latents.safetensors").string());
  const Tensor latents = file.to_float("latents");
  const nlohmann::json request = nlohmann::json::parse(file.metadata().at("request"));
  EXPECT_EQ(request["seeds"], nlohmann::json({40, 41}));
  EXPECT_EQ(request["class_labels"], nlohmann::json({3, 7}));
  EXPECT_EQ(request["sampler"], "ddpm");
  EXPECT_EQ(request["steps"], 6);

  // The config comes from the checkpoint's metadata; the latents are the library's, bit for bit.
  const ModelConfig config = model_config_from_json(SafetensorsFile::open(weights).metadata().at("config"));
  auto model = make_model(Backend::cpu, config, DitWeights::load(weights, config));
  const Tensor expected =
      model->sample(SampleRequest{.class_labels = {3, 7}, .seeds = {40, 41}, .steps = 6, .cfg_scale = 3.0f});
  EXPECT_EQ(latents.shape, expected.shape);
  EXPECT_EQ(latents.data, expected.data);

  // Beside them the start latents, one row per image (guidance's copies left out).
  const Tensor start = file.to_float("initial_latents");
  const Tensor all_rows =
      initial_latents(SampleRequest{.class_labels = {3, 7}, .seeds = {40, 41}, .steps = 6, .cfg_scale = 3.0f}, config);
  ASSERT_EQ(all_rows.dim(0), 4);
  EXPECT_EQ(start.shape, (std::vector<int64_t>{2, all_rows.dim(1), all_rows.dim(2), all_rows.dim(3)}));
  EXPECT_TRUE(std::equal(start.data.begin(), start.data.end(), all_rows.data.begin()));
}

// --phase-times: where the time to the model being ready went, phase by phase in the order they
// ran, adding up to ready_ms. With a VAE, it is awaited after the first step (the phase `vae`),
// and its thread's own parts are listed apart.
TEST_F(DitSample, PhaseTimesAddUpToReady) {
  const std::filesystem::path phases_path = out_dir / "phases.json";
  for (const bool from_spawn : {true, false}) {
    for (const std::string vae : {"none", "tiny"}) {
      SCOPED_TRACE(std::string(from_spawn ? "from the spawn" : "from main") + ", VAE " + vae);
      std::filesystem::remove_all(out_dir);
      std::filesystem::create_directories(out_dir);
      std::string spawn;
      if (from_spawn) {
        const auto now = std::chrono::steady_clock::now().time_since_epoch();
        spawn = " --spawn-monotonic-ns " +
                std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
      }
      const ProcessResult run =
          run_dit_sample("--model DiT-S/8 --random-weights --class 1 --steps 2 --sampler ddim --vae " + vae +
                         " --phase-times " + phases_path.string() + spawn + " --out " + out_dir.string());
      ASSERT_EQ(run.exit_code, 0) << run.output;
      const nlohmann::json times = nlohmann::json::parse(std::ifstream(phases_path));
      EXPECT_EQ(times["zero"], from_spawn ? "spawn" : "main");
      std::vector<std::string> names;
      double sum = 0;
      for (const auto& phase : times["phases"]) {
        names.push_back(phase["phase"]);
        EXPECT_GE(phase["ms"].get<double>(), 0.0) << phase.dump();
        sum += phase["ms"].get<double>();
      }
      std::vector<std::string> expected{"arguments",   "backend_check", "hash",  "context",
                                        "dit_weights", "dit_model",     "setup", "first_step"};
      if (from_spawn) expected.insert(expected.begin(), "process");
      if (vae != "none") expected.push_back("vae");
      EXPECT_EQ(names, expected);
      // Work beside the phases (the VAE's, on its own thread) is listed apart: none without a VAE.
      ASSERT_TRUE(times["overlapped"].is_array());
      std::vector<std::string> overlapped;
      for (const auto& work : times["overlapped"]) {
        overlapped.push_back(work["work"]);
        EXPECT_GT(work["ms"].get<double>(), 0.0) << work.dump();
      }
      const std::vector<std::string> expected_overlapped =
          vae == "none" ? std::vector<std::string>{} : std::vector<std::string>{"vae_weights", "vae_decoder"};
      EXPECT_EQ(overlapped, expected_overlapped);
      const double ready = times["ready_ms"].get<double>();
      EXPECT_NEAR(sum, ready, 1e-6 * ready + 1e-3);
      EXPECT_GT(ready, 0.0);
      EXPECT_LE(ready, times["total_ms"].get<double>());
    }
  }
}

// With a VAE, its weights and decoder are made on a thread beside the DiT's load and first step:
// the phase `vae` is what that adds after the first step, and the thread's own two parts are
// listed apart.
TEST_F(DitSample, PhaseTimesListTheVaeMadeBesideTheDit) {
  const std::filesystem::path phases_path = out_dir / "phases.json";
  const ProcessResult run =
      run_dit_sample("--model DiT-S/8 --random-weights --class 1 --steps 1 --sampler ddim --vae tiny --phase-times " +
                     phases_path.string() + " --out " + out_dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json times = nlohmann::json::parse(std::ifstream(phases_path));
  std::vector<std::string> names, overlapped;
  for (const auto& phase : times["phases"]) names.push_back(phase["phase"]);
  EXPECT_EQ(names, (std::vector<std::string>{"arguments", "backend_check", "hash", "context", "dit_weights",
                                             "dit_model", "setup", "first_step", "vae"}));
  for (const auto& work : times["overlapped"]) {
    overlapped.push_back(work["work"]);
    EXPECT_GE(work["ms"].get<double>(), 0.0) << work.dump();
  }
  EXPECT_EQ(overlapped, (std::vector<std::string>{"vae_weights", "vae_decoder"}));
}

// diffusers' own layout (transformer/diffusion_pytorch_model.safetensors with its config.json
// beside it) needs no --model: the same weights give the same latents, bit for bit.
TEST_F(DitSample, ReadsADiffusersCheckpointWithItsConfigJson) {
  const std::string engine = test::data_path("dit_tiny_a.weights.safetensors");
  const ModelConfig config = model_config_from_json(SafetensorsFile::open(engine).metadata().at("config"));
  std::vector<std::string> unmapped;
  const auto tensors = test::diffusers_layout(DitWeights::load(engine, config), config, false, unmapped);
  ASSERT_TRUE(unmapped.empty()) << unmapped.front();
  const std::filesystem::path folder = out_dir / "transformer";
  std::filesystem::create_directories(folder);
  write_safetensors((folder / "diffusion_pytorch_model.safetensors").string(), tensors);
  const nlohmann::json diffusers_config = {{"_class_name", "DiTTransformer2DModel"},
                                           {"activation_fn", "gelu-approximate"},
                                           {"attention_head_dim", config.head_dim()},
                                           {"in_channels", config.in_channels},
                                           {"norm_type", "ada_norm_zero"},
                                           {"num_attention_heads", config.num_heads},
                                           {"num_embeds_ada_norm", config.num_classes},
                                           {"num_layers", config.depth},
                                           {"out_channels", config.out_channels()},
                                           {"patch_size", config.patch_size},
                                           {"sample_size", config.input_size}};
  std::ofstream(folder / "config.json") << diffusers_config.dump();
  const std::string request = " --class 3 --class 7 --seed 40 --steps 4 --cfg-scale 3 --sampler ddim --vae none --out ";
  ProcessResult run = run_dit_sample("--weights " + (folder / "diffusion_pytorch_model.safetensors").string() +
                                     request + (out_dir / "diffusers").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = run_dit_sample("--weights " + engine + request + (out_dir / "engine").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Tensor from_diffusers =
      SafetensorsFile::open((out_dir / "diffusers/latents.safetensors").string()).to_float("latents");
  const Tensor from_engine =
      SafetensorsFile::open((out_dir / "engine/latents.safetensors").string()).to_float("latents");
  EXPECT_EQ(from_diffusers.shape, from_engine.shape);
  EXPECT_EQ(from_diffusers.data, from_engine.data);
}

TEST_F(DitSample, RandomWeightsOfANamedModel) {
  const ProcessResult run = run_dit_sample(
      "--model DiT-S/8 --random-weights --class 1 --seed 2 --seed 3 --class 2 --steps 1 "
      "--sampler ddim --vae none --out " +
      out_dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Tensor latents = SafetensorsFile::open((out_dir / "latents.safetensors").string()).to_float("latents");
  EXPECT_EQ(latents.shape, (std::vector<int64_t>{2, 4, 32, 32}));
}

TEST_F(DitSample, BadInputExitsWithTwoNamingTheProblem) {
  const std::string tiny = "--weights " + test::data_path("dit_tiny_a.weights.safetensors");
  const std::string out = " --vae none --out " + out_dir.string();
  const std::pair<std::string, std::string> cases[] = {
      {"--model DiT-Q/2 --random-weights --class 1", "DiT-Q/2"},
      {"--model DiT-S/8 --random-weights", "--class"},
      {"--model DiT-S/8 --random-weights --class 1 --image-size 300", "300"},
      {tiny + " --class 1 --class 2 --seed 1 --seed 2 --seed 3", "--seed"},
      {tiny + " --class 10", "class label 10"},
      {tiny + " --class 1 --steps 0", "steps"},
      {tiny + " --class 1 --sampler euler", "--sampler"},
      {tiny + " --class 1 --sampler ddpm --eta 0.5", "eta"},
      {tiny + " --class 1 --random-weights", "--random-weights"},
      {"--weights /nonexistent/dit.safetensors --class 1", "/nonexistent/dit.safetensors"},
      {"--model DiT-S/8 " + tiny + " --class 1", "does not match DiT-S/8"},  // another model's checkpoint
      {"--model DiT-S/8 --class 1", "--random-weights"},
      {"--model DiT-S/8 --random-weights --class 1 --precision fp16", "fp16"},
  };
  for (const auto& [arguments, mentions] : cases) {
    const ProcessResult run = run_dit_sample(arguments + out);
    EXPECT_EQ(run.exit_code, 2) << arguments << "\n" << run.output;
    EXPECT_NE(run.output.find(mentions), std::string::npos) << arguments << "\n" << run.output;
  }
  EXPECT_FALSE(std::filesystem::exists(out_dir / "latents.safetensors"));
}

// The tiny_a checkpoint with `change` applied to its tensors and `config` (JSON text, or the
// file's own when empty) as its metadata.
std::string tiny_variant(const std::filesystem::path& dir, const std::string& name,
                         const std::function<void(std::map<std::string, Tensor>&)>& change,
                         const std::string& config = "") {
  const SafetensorsFile file = SafetensorsFile::open(test::data_path("dit_tiny_a.weights.safetensors"));
  std::map<std::string, Tensor> tensors;
  for (const auto& [tensor, view] : file.tensors()) tensors.emplace(tensor, file.to_float(tensor));
  change(tensors);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  write_safetensors(path, tensors, {{"config", config.empty() ? file.metadata().at("config") : config}});
  return path;
}

// Issue #26: bad input is a clear error (exit 2), never an internal one. Seeds outside
// [0, 2^64 - 1] (CLI11 alone wrapped -1), a checkpoint config beyond its bounds (depth 2e9 ran
// 97 s into std::bad_alloc; num_classes 2^31 - 1 and input_size 2^31 - 2 overflowed int), and
// NaN or infinite weights (NaN latents, exit 0).
TEST_F(DitSample, OutOfRangeNumbersConfigsAndWeightsExitWithTwo) {
  const std::string tiny = "--weights " + test::data_path("dit_tiny_a.weights.safetensors");
  const std::filesystem::path files = out_dir.string() + "_files";
  const auto config_with = [](const std::string& field, const std::string& value) {
    nlohmann::json config = nlohmann::json::parse(
        SafetensorsFile::open(test::data_path("dit_tiny_a.weights.safetensors")).metadata().at("config"));
    config[field] = nlohmann::json::parse(value);
    return config.dump();
  };
  const auto keep = [](std::map<std::string, Tensor>&) {};
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"--model DiT-S/8 --random-weights --weights-seed -1 --class 1", {"--weights-seed", "'-1' is not a seed"}},
      {"--model DiT-S/8 --random-weights --weights-seed 18446744073709551616 --class 1",
       {"--weights-seed", "'18446744073709551616' is not a seed", "18446744073709551615"}},
      {"--model DiT-S/8 --random-weights --weights-seed 0x10 --class 1", {"'0x10' is not a seed"}},
      {tiny + " --class 1 --seed -1", {"--seed", "'-1' is not a seed"}},
      {tiny + " --class 1 --class 2 --seed 5 --seed -2", {"--seed", "'-2' is not a seed"}},
      {tiny + " --class 1 --class 2 --seed 18446744073709551615", {"--seed 18446744073709551615 for 2 images"}},
      {tiny + " --class -1", {"class label -1"}},
      {tiny + " --class 1 --steps -3", {"steps must be in 1..1000, got -3"}},
      {tiny + " --class 1 --steps 99999999999", {"--steps"}},
      {tiny + " --class 1 --cfg-scale nan", {"guidance scale must be finite"}},
      {tiny + " --class 1 --cfg-scale 1e39", {"guidance scale must be finite"}},
      {tiny + " --class 1 --sampler ddim --eta -1", {"eta must be finite and non-negative"}},
      {tiny + " --class 1 --cuda-graphs 7", {"--cuda-graphs", "'7' is not 0 or 1"}},
      {"--weights " + tiny_variant(files, "depth.safetensors", keep, config_with("depth", "2000000000")) + " --class 1",
       {"depth 2000000000 is outside [1, 1024]"}},
      {"--weights " + tiny_variant(files, "classes.safetensors", keep, config_with("num_classes", "2147483647")) +
           " --class 1",
       {"num_classes 2147483647 is outside [1, 1000000]"}},
      {"--weights " + tiny_variant(files, "input.safetensors", keep, config_with("input_size", "2147483646")) +
           " --class 1",
       {"input_size 2147483646 is outside [1, 1024]"}},
      {"--weights " +
           tiny_variant(files, "wrapping.safetensors", keep, config_with("depth", "4294967298")) +  // 2^32 + 2
           " --class 1",
       {"depth 4294967298 is outside [1, 1024]"}},
      {"--weights " +
           tiny_variant(files, "nan.safetensors",
                        [](auto& t) { t.at("blocks.1.mlp.fc2.weight").data.at(40) = std::nanf(""); }) +
           " --class 1",
       {"tensor 'blocks.1.mlp.fc2.weight' (F32) element 40 is NaN"}},
      {"--weights " +
           tiny_variant(files, "inf.safetensors",
                        [](auto& t) { t.at("y_embedder.embedding_table.weight").data.at(3) = -HUGE_VALF; }) +
           " --class 1",
       {"tensor 'y_embedder.embedding_table.weight' (F32) element 3 is -inf"}},
  };
  for (const auto& [arguments, mentions] : cases) {
    const ProcessResult run = run_dit_sample(arguments + " --vae none --out " + out_dir.string());
    EXPECT_EQ(run.exit_code, 2) << arguments << "\n" << run.output;
    for (const std::string& mention : mentions)
      EXPECT_NE(run.output.find(mention), std::string::npos) << arguments << "\n" << run.output;
    EXPECT_EQ(run.output.find("unexpected failure"), std::string::npos) << arguments << "\n" << run.output;
  }
  EXPECT_FALSE(std::filesystem::exists(out_dir / "latents.safetensors"));
  std::filesystem::remove_all(files);

  // The largest seed is a seed.
  const ProcessResult run =
      run_dit_sample(tiny + " --class 1 --seed 18446744073709551615 --steps 1 --vae none --out " + out_dir.string());
  EXPECT_EQ(run.exit_code, 0) << run.output;
}

// A checkpoint's sha256 is recorded in the request; --weights-sha256 (and --vae-weights-sha256)
// refuse any other file with exit 2 naming the file and both hashes, before anything is written.
TEST_F(DitSample, AWeightsSha256OtherThanTheFilesExitsTwoNamingBothHashes) {
  const std::string path = test::data_path("dit_tiny_a.weights.safetensors");
  const std::string actual = sha256_file(path), wrong = dit::test::random_sha256_hex();
  std::string upper = actual;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string request = " --class 1 --steps 1 --sampler ddim --out " + out_dir.string();
  for (const std::string& expected : {std::string(), actual, upper}) {
    std::filesystem::remove_all(out_dir);
    const ProcessResult run = run_dit_sample(
        "--weights " + path + (expected.empty() ? "" : " --weights-sha256 " + expected) + request + " --vae none");
    ASSERT_EQ(run.exit_code, 0) << expected << "\n" << run.output;
    const nlohmann::json recorded = nlohmann::json::parse(
        SafetensorsFile::open((out_dir / "latents.safetensors").string()).metadata().at("request"));
    EXPECT_EQ(recorded.at("weights"), path);
    EXPECT_EQ(recorded.at("weights_sha256"), actual);
    EXPECT_FALSE(recorded.contains("vae_weights_sha256"));
  }
  std::filesystem::remove_all(out_dir);
  const ProcessResult random = run_dit_sample("--model DiT-S/8 --random-weights" + request + " --vae none");
  ASSERT_EQ(random.exit_code, 0) << random.output;
  EXPECT_FALSE(
      nlohmann::json::parse(SafetensorsFile::open((out_dir / "latents.safetensors").string()).metadata().at("request"))
          .contains("weights_sha256"));
  std::filesystem::remove_all(out_dir);

  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"--weights " + path + " --weights-sha256 " + wrong + " --vae none",
       {"--weights " + path + " has sha256 " + actual + ", not the expected " + wrong}},
      // The VAE file is hashed before it is read as a VAE: any file shows the check.
      {"--weights " + path + " --vae tiny --vae-weights " + path + " --vae-weights-sha256 " + wrong,
       {"--vae-weights " + path + " has sha256 " + actual + ", not the expected " + wrong}},
      {"--weights " + path + " --weights-sha256 " + actual.substr(1) + " --vae none",
       {"--weights-sha256", "is not a SHA-256 (64 hexadecimal digits)"}},
      {"--weights " + path + " --weights-sha256 " + actual.substr(1) + "g --vae none",
       {"--weights-sha256", "is not a SHA-256"}},
      {"--model DiT-S/8 --random-weights --weights-sha256 " + actual + " --vae none",
       {"--weights-sha256", "--weights"}},
      {"--weights " + path + " --vae-weights-sha256 " + actual + " --vae tiny",
       {"--vae-weights-sha256", "--vae-weights"}},
  };
  for (const auto& [arguments, mentions] : cases) {
    const ProcessResult run = run_dit_sample(arguments + request);
    EXPECT_EQ(run.exit_code, 2) << arguments << "\n" << run.output;
    for (const std::string& mention : mentions)
      EXPECT_NE(run.output.find(mention), std::string::npos) << arguments << "\n" << run.output;
    EXPECT_FALSE(std::filesystem::exists(out_dir / "latents.safetensors")) << arguments;
  }
}

// Without a GPU, --backend cuda fails before any weights are built or read: a checkpoint that
// the loader would refuse (a NaN) is never looked at, and DiT-XL/2's random weights (11.6 s on
// two cores) are not drawn.
TEST_F(DitSample, AMissingGpuIsReportedBeforeAnyWeights) {
  try {
    check_backend(Backend::cuda, Precision::fp32);
    GTEST_SKIP() << "a GPU is usable here";
  } catch (const Error&) {}
  const std::filesystem::path files = out_dir.string() + "_files";
  const std::string nan =
      tiny_variant(files, "nan.safetensors", [](auto& t) { t.at("pos_embed").data.at(0) = std::nanf(""); });
  ProcessResult run =
      run_dit_sample("--weights " + nan + " --class 1 --backend cuda --vae none --out " + out_dir.string());
  std::filesystem::remove_all(files);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("cuda"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("NaN"), std::string::npos) << "the weights were read first:\n" << run.output;

  const auto start = std::chrono::steady_clock::now();
  run =
      run_dit_sample("--model DiT-XL/2 --random-weights --class 1 --backend cuda --vae none --out " + out_dir.string());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("cuda"), std::string::npos) << run.output;
  EXPECT_LT(seconds, 5.0) << "DiT-XL/2's random weights were built first:\n" << run.output;
}

}  // namespace
}  // namespace dit
