// dit-quality-render's own processes: `render` checks determinism with a second render in a fresh
// process of its own, which writes nothing into the render directory and leaves nothing in TMPDIR;
// it renders a checkpoint named by a corpus case, a gate set or --weights as the seeded weights it
// was written from, and refuses (exit 2, nothing written) one that is missing or of another
// sha256; `calibrate --write-contract` writes the proposed floors for (device, set) into a
// contract under a lock of its folder (several calibrations may write one at once), and refuses
// (exit 2) a file that is not one.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/safetensors.h"
#include "core/sha256.h"
#include "model/weights.h"
#include "quality/corpus.h"
#include "quality/renderer/render.h"
#include "quality/store.h"
#include "tests/model/diffusers_layout.h"
#include "tests/support/process_runner.h"
#include "tests/support/test_support.h"
#include "tests/quality/one_case_contract.h"

namespace dit::quality {
namespace {

namespace fs = std::filesystem;

using Result = dit::test::ProcessResult;

// The renderer with DIT_OUTPUT_DIR unset and `environment` (VAR=value ...) set.
Result render(const std::string& environment, const std::string& arguments) {
  return dit::test::run_program("env -u DIT_OUTPUT_DIR " + environment + " " + DIT_QUALITY_RENDER_PROGRAM, arguments);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class RenderCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir() + "/quality_render_cli_test_" +
           testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/tmp");
    write("tiny.jsonl",
          "{\"id\": \"tiny-b\", \"model\": \"tiny_b\", \"image_size\": 64, \"class_label\": 3, \"seed\": 11, "
          "\"sampler\": \"ddim\", \"steps\": 3, \"cfg_scale\": 4.0, \"critical\": true, \"vae\": \"tiny\", "
          "\"weights_seed\": 0}\n");
    write("contract.json",
          dit::test::one_case_contract("render_cli_test", "other-set", "elsewhere.json", "kept").dump(2) + "\n");
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string set_options() const {
    return " --corpus " + dir_ + "/tiny.jsonl --contract " + dir_ + "/contract.json --set tiny --data-dir " +
           DIT_TEST_DATA_DIR;
  }
  std::string dir_;
};

TEST_F(RenderCli, DeterminismIsCheckedByASecondRenderInAFreshProcess) {
  const Result result = render("TMPDIR=" + dir_ + "/tmp", "render" + set_options() + " --out " + dir_ + "/render");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // The parent names the child it started; the child names itself and its parent.
  std::smatch parent, child;
  ASSERT_TRUE(std::regex_search(result.output, parent,
                                std::regex(R"(determinism: second render in process (\d+) \(this one is (\d+)\))")))
      << result.output;
  ASSERT_TRUE(std::regex_search(result.output, child,
                                std::regex(R"(determinism pass in process (\d+) \(parent (\d+)\): rendered 1 cases)")))
      << result.output;
  EXPECT_EQ(child[1].str(), parent[1].str()) << result.output;
  EXPECT_EQ(child[2].str(), parent[2].str()) << result.output;
  EXPECT_NE(parent[1].str(), parent[2].str()) << result.output;

  const nlohmann::json manifest = nlohmann::json::parse(read_text(dir_ + "/render/render.json"));
  EXPECT_EQ(manifest.at("cases").at("tiny-b").at("deterministic"), true) << manifest.dump(2);
  // The render directory holds what `render` always wrote, and TMPDIR is left empty.
  std::set<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ + "/render"))
    files.insert(entry.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"render.json", "tiny-b.latent.safetensors", "tiny-b.png"}));
  EXPECT_TRUE(fs::is_empty(dir_ + "/tmp"));
}

// The one case of the corpus (its class label and noise seed fresh), with `fields` appended.
std::string tiny_case(int class_label, uint64_t seed, const std::string& fields) {
  return "{\"id\": \"tiny-b\", \"model\": \"tiny_b\", \"image_size\": 64, \"class_label\": " +
         std::to_string(class_label) + ", \"seed\": " + std::to_string(seed) +
         ", \"sampler\": \"ddim\", \"steps\": 3, \"cfg_scale\": 4.0, \"critical\": true, \"vae\": \"tiny\"" + fields +
         "}\n";
}

std::string weights_field(const std::string& path, const std::string& sha256) {
  return ", \"weights\": {\"path\": \"" + path + "\", \"sha256\": \"" + sha256 + "\"}";
}

// A checkpoint written from seeded random weights renders as those weights do, bit for bit, whether
// a corpus case names it (in the engine's layout or diffusers'), the gate set does, or --weights
// gives it; render.json records the file (its path resolved) and its sha256.
TEST_F(RenderCli, ACheckpointRendersAsTheSeededWeightsItWasWrittenFrom) {
  const uint64_t weights_seed = dit::test::fresh_seed();
  const int class_label = static_cast<int>(dit::test::fresh_seed() % 10);
  const uint64_t noise_seed = dit::test::fresh_seed();
  const Corpus plain = parse_corpus(tiny_case(class_label, noise_seed, ""), dir_ + "/tiny.jsonl");
  const ModelConfig config = case_model_config(plain.cases.at(0), DIT_TEST_DATA_DIR);
  const DitWeights seeded = DitWeights::random(config, weights_seed);

  fs::create_directories(dir_ + "/ckpt/transformer");
  const std::string engine_file = dir_ + "/ckpt/engine.safetensors";
  write_safetensors(engine_file, seeded.tensors, {{"config", to_json(config)}});
  std::vector<std::string> unmapped;
  const std::string diffusers_file = dir_ + "/ckpt/transformer/diffusion_pytorch_model.safetensors";
  write_safetensors(diffusers_file, dit::test::diffusers_layout(seeded, config, false, unmapped));
  ASSERT_TRUE(unmapped.empty()) << unmapped.front();

  RenderSettings settings;
  settings.data_dir = DIT_TEST_DATA_DIR;
  settings.edit_weights = [&](DitWeights& weights) { weights = seeded; };
  const RenderedCase expected = Renderer(settings).render(plain.cases.at(0));

  struct Row {
    std::string name, corpus_fields, gate_sets_weights, options, checkpoint;
  };
  const std::string engine_sha256 = sha256_file(engine_file), diffusers_sha256 = sha256_file(diffusers_file);
  const std::vector<Row> rows = {
      {"corpus-engine-layout", weights_field("../ckpt/engine.safetensors", engine_sha256), "", "", engine_file},
      {"corpus-diffusers-layout",
       weights_field("../ckpt/transformer/diffusion_pytorch_model.safetensors", diffusers_sha256), "", "",
       diffusers_file},
      {"gate-set", "", "../../ckpt/engine.safetensors", "", engine_file},
      {"weights-option", "", "", " --weights " + engine_file + " --weights-sha256 " + engine_sha256, engine_file},
  };
  for (const Row& row : rows) {
    const std::string folder = dir_ + "/" + row.name;
    fs::create_directories(folder + "/build");
    const std::string corpus = write(row.name + "/tiny.jsonl", tiny_case(class_label, noise_seed, row.corpus_fields));
    std::string set = " --corpus " + corpus + " --contract " + dir_ + "/contract.json --set tiny";
    if (!row.gate_sets_weights.empty()) {
      const nlohmann::json gate_sets = {
          {"sets",
           {{{"name", "tiny"},
             {"corpus", corpus},
             {"contract", dir_ + "/contract.json"},
             {"backend", "cpu"},
             {"precision", "fp32"},
             {"data_dir", DIT_TEST_DATA_DIR},
             {"weights", {{"path", row.gate_sets_weights}, {"sha256", engine_sha256}}}}}}};
      set = " --gate-sets " + write(row.name + "/build/gate-sets.json", gate_sets.dump()) + " --set tiny";
    }
    const Result result =
        render("", "render" + set + " --data-dir " + DIT_TEST_DATA_DIR + row.options + " --out " + folder + "/render");
    ASSERT_EQ(result.exit_code, 0) << row.name << "\n" << result.output;
    const std::string checkpoint = fs::path(row.checkpoint).lexically_normal().string();
    EXPECT_NE(result.output.find("weights: " + checkpoint + " (sha256 "), std::string::npos) << result.output;
    const RenderManifest manifest = load_render_manifest(folder + "/render");
    const RenderRecord& record = manifest.cases.at("tiny-b");
    ASSERT_TRUE(record.weights && record.weights->checkpoint) << row.name;
    EXPECT_EQ(record.weights->checkpoint->path, checkpoint) << row.name;
    EXPECT_EQ(record.weights->checkpoint->sha256, sha256_file(row.checkpoint)) << row.name;
    EXPECT_TRUE(record.deterministic) << row.name;
    EXPECT_EQ(record.output_sha256, output_hash(expected.latent, expected.image)) << row.name;
    const Tensor latent =
        SafetensorsFile::open(folder + "/render/" + latent_file_name("tiny-b")).to_float(kLatentTensorName);
    EXPECT_EQ(latent.shape, expected.latent.shape) << row.name;
    EXPECT_EQ(latent.data, expected.latent.data) << row.name;
  }
}

// A checkpoint that is missing, or whose bytes hash to another sha256, is refused with exit 2 and a
// message naming the file, the expected and the actual hash, before anything is rendered or
// written; so is a --weights without a well-formed --weights-sha256.
TEST_F(RenderCli, AMissingOrMismatchedCheckpointIsRefusedBeforeAnythingIsWritten) {
  // As the renderer names them: normalised.
  const std::string checkpoint = fs::path(dir_ + "/ckpt.safetensors").lexically_normal().string();
  const std::string missing = fs::path(dir_ + "/no-such.safetensors").lexically_normal().string();
  fs::copy_file(std::string(DIT_TEST_DATA_DIR) + "/dit_tiny_b.weights.safetensors", checkpoint);
  const std::string actual = sha256_file(checkpoint), wrong = dit::test::random_sha256_hex();
  struct Row {
    std::string name, corpus_fields, options;
    std::vector<std::string> mentions;
  };
  const std::vector<Row> rows = {
      {"case-mismatch",
       weights_field(checkpoint, wrong),
       "",
       {"tiny.jsonl:1: case tiny-b: weights file " + checkpoint + " has sha256 " + actual + ", not the expected " +
        wrong}},
      {"case-missing",
       weights_field(missing, actual),
       "",
       {"tiny.jsonl:1: case tiny-b: weights file " + missing + " does not exist (expected sha256 " + actual + ")"}},
      {"set-mismatch",
       "",
       " --weights " + checkpoint + " --weights-sha256 " + wrong,
       {"gate set tiny (the weights of case tiny-b): weights file " + checkpoint + " has sha256 " + actual +
        ", not the expected " + wrong}},
      {"set-missing",
       "",
       " --weights " + missing + " --weights-sha256 " + actual,
       {"weights file " + missing + " does not exist (expected sha256 " + actual + ")"}},
      {"set-without-sha256", "", " --weights " + checkpoint, {"--weights PATH and --weights-sha256 HEX go together"}},
      {"set-bad-sha256",
       "",
       " --weights " + checkpoint + " --weights-sha256 " + actual.substr(2),
       {"--weights PATH and --weights-sha256 HEX go together", "64 hexadecimal digits"}},
  };
  for (const Row& row : rows) {
    write("tiny.jsonl", tiny_case(3, 11, row.corpus_fields));
    const std::string out = dir_ + "/render-" + row.name;
    const Result result = render("", "render" + set_options() + row.options + " --out " + out);
    EXPECT_EQ(result.exit_code, 2) << row.name << "\n" << result.output;
    for (const std::string& mention : row.mentions)
      EXPECT_NE(result.output.find(mention), std::string::npos) << row.name << "\n" << result.output;
    EXPECT_FALSE(fs::exists(out)) << row.name;
  }
}

TEST_F(RenderCli, WriteContractPutsTheProposedFloorsUnderTheDeviceAndSet) {
  const std::string before = read_text(dir_ + "/contract.json");
  const Result result =
      render("", "calibrate" + set_options() + " --out " + dir_ + "/calibration.json" + " --write-contract " + dir_ +
                     "/contract.json" + " --calibration-file quality/calibration/cpu-tiny.json");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("added floors.cpu.tiny in " + dir_ + "/contract.json"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("exact.latent_relative_l2: (none) -> "), std::string::npos) << result.output;

  const nlohmann::json calibration = nlohmann::json::parse(read_text(dir_ + "/calibration.json"));
  const nlohmann::json contract = nlohmann::json::parse(read_text(dir_ + "/contract.json"));
  const nlohmann::json& floors = contract.at("floors").at("cpu").at("tiny");
  EXPECT_EQ(floors.at("calibration"), "quality/calibration/cpu-tiny.json");
  EXPECT_EQ(floors.at("exact"), calibration.at("proposed").at("exact"));
  EXPECT_EQ(floors.at("margin"), calibration.at("proposed").at("margin"));
  EXPECT_FALSE(floors.contains("numerical"));
  EXPECT_FALSE(floors.contains("fp32_bound"));
  // Everything else as it was.
  nlohmann::json rest = contract;
  rest["floors"]["cpu"].erase("tiny");
  EXPECT_EQ(rest, nlohmann::json::parse(before));

  // Again: the same floors, so only what changed is listed (nothing but the heading).
  const Result again = render("", "calibrate" + set_options() + " --write-contract " + dir_ + "/contract.json" +
                                      " --calibration-file quality/calibration/cpu-tiny.json");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("changed floors.cpu.tiny in "), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("exact.latent_relative_l2: "), std::string::npos) << again.output;
}

// Calibrations of several gate sets at once may write one contract: each read-edit-write holds
// an exclusive flock of the contract's folder. Held here, it keeps a finished calibration from
// touching the contract until it is released; then that calibration's floors land beside the rest.
TEST_F(RenderCli, WriteContractWaitsForTheContractFoldersLock) {
  const std::string before = read_text(dir_ + "/contract.json");
  const int folder = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(folder, 0);
  ASSERT_EQ(::flock(folder, LOCK_EX), 0);
  Result result{-1, ""};
  std::thread calibration([&] {
    result = render("", "calibrate" + set_options() + " --out " + dir_ + "/calibration.json --write-contract " + dir_ +
                            "/contract.json");
  });
  // --out is written just before the contract: from then on the calibration only waits.
  for (int i = 0; i < 600 && !fs::exists(dir_ + "/calibration.json"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const bool exists = fs::exists(dir_ + "/calibration.json");
  const std::string while_locked = read_text(dir_ + "/contract.json");
  ::close(folder);  // releases the lock
  calibration.join();
  ASSERT_TRUE(exists) << result.output;
  EXPECT_EQ(while_locked, before);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json contract = nlohmann::json::parse(read_text(dir_ + "/contract.json"));
  EXPECT_TRUE(contract.at("floors").at("cpu").contains("tiny")) << contract.dump(2);
  EXPECT_TRUE(contract.at("floors").at("cpu").contains("other-set")) << contract.dump(2);
}

TEST_F(RenderCli, WriteContractRefusesAFileThatIsNotAContract) {
  for (const std::string& text : {std::string("not json"), std::string("{\"version\": 2}")}) {
    const std::string path = write("bad-contract.json", text);
    const Result result = render("", "calibrate" + set_options() + " --write-contract " + path);
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find(path + " is not a valid contract"), std::string::npos) << result.output;
    EXPECT_EQ(read_text(path), text);
  }
}

}  // namespace
}  // namespace dit::quality
