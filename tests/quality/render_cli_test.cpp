// dit-quality-render's own processes: `render` checks determinism with a second render in a fresh
// process of its own, which writes nothing into the render directory and leaves nothing in TMPDIR;
// `calibrate --write-contract` writes the proposed floors for (device, set) into a contract under
// a lock of its folder (several calibrations may write one at once), and refuses (exit 2) a file
// that is not one.
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
#include <regex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/process_runner.h"

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

// A small version-2 contract for the one-case corpus below, with floors for cpu/other-set only.
nlohmann::json small_contract() {
  nlohmann::json metrics;
  for (const char* name : {"latent_relative_l2", "max_abs_pixel_error"})
    metrics[name] = {{"direction", "lower"}, {"allowed_regression", {{"absolute", 0.0}, {"relative", 0.0}}}};
  for (const char* name : {"image_psnr", "image_ssim", "all_finite", "determinism"})
    metrics[name] = {{"direction", "higher"}, {"allowed_regression", {{"absolute", 0.0}, {"relative", 0.0}}}};
  const nlohmann::json exact = {{"latent_relative_l2", 1e-6}, {"image_psnr", 80.0}, {"image_ssim", 0.99999},
                                {"max_abs_pixel_error", 2.0}, {"all_finite", 1.0},  {"determinism", 1.0}};
  return {
      {"about", "render_cli_test"},
      {"version", 2},
      {"strict_zero_regression", false},
      {"strict_classifications", {"quantization"}},
      {"required_metrics",
       {"latent_relative_l2", "image_psnr", "image_ssim", "max_abs_pixel_error", "all_finite", "determinism"}},
      {"metrics", metrics},
      {"floors", {{"cpu", {{"other-set", {{"calibration", "elsewhere.json"}, {"margin", "kept"}, {"exact", exact}}}}}}},
      {"critical_cases", {{"tiny.jsonl", {"tiny-b"}}}}};
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
    write("contract.json", small_contract().dump(2) + "\n");
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
