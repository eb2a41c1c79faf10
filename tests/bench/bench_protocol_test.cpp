// The timed-outputs protocol through a real benchmark binary: bench_cpu's BM_CpuForward/batch:1
// (the cpu-smoke lane's objective) run as the performance gate runs it. Every timed iteration
// leaves image-<i>.output.safetensors, i = 0..n-1 with n the entries' timed_images; the same
// request seed gives the same outputs in another process, another seed other outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/safetensors.h"
#include "core/sha256.h"
#include "tests/support/process_runner.h"
#include "tests/support/scratch_directory.h"

namespace {

namespace fs = std::filesystem;

struct ObjectiveRun {
  uint64_t counted = 0;  // the largest timed_images of the objective's entries
  int64_t reported = 0;  // the sum of their iterations
  uint64_t files = 0;    // image-* files written
  fs::path dir;
};

ObjectiveRun run_objective(const fs::path& dir, uint64_t seed) {
  ObjectiveRun run;
  run.dir = dir;
  const dit::test::ProcessResult result = dit::test::run_program(
      DIT_BENCH_CPU, "'--benchmark_filter=^BM_CpuForward/batch:1/' --benchmark_min_time=0.01 --benchmark_out='" +
                         (dir / "benchmark.json").string() + "' --benchmark_out_format=json --request-seed=" +
                         std::to_string(seed) + " '--outputs-dir=" + dir.string() + "'");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json json = nlohmann::json::parse(std::ifstream(dir / "benchmark.json"));
  for (const auto& entry : json["benchmarks"]) {
    if (entry["run_type"] != "iteration") continue;
    run.reported += entry["iterations"].get<int64_t>();
    run.counted = std::max(run.counted, static_cast<uint64_t>(entry["timed_images"].get<double>()));
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("image-", 0) == 0) ++run.files;
  }
  return run;
}

fs::path image(const ObjectiveRun& run, uint64_t index) {
  return run.dir / ("image-" + std::to_string(index) + ".output.safetensors");
}

TEST(BenchProtocol, BenchCpuWritesEveryTimedImageAsAFunctionOfTheRequest) {
  dit::test::ScratchDirectory scratch;
  const ObjectiveRun first = run_objective(scratch.path() / "first", 42);
  const ObjectiveRun again = run_objective(scratch.path() / "again", 42);
  const ObjectiveRun other = run_objective(scratch.path() / "other", 43);
  for (const ObjectiveRun* run : {&first, &again, &other}) {
    SCOPED_TRACE(run->dir.string());
    EXPECT_GE(run->counted, 1u);
    EXPECT_GE(run->counted, static_cast<uint64_t>(run->reported));  // calibration runs are counted too
    EXPECT_EQ(run->files, run->counted);
    for (uint64_t index = 0; index < run->counted; ++index) {
      ASSERT_TRUE(fs::exists(image(*run, index))) << index;
    }
    const dit::SafetensorsFile file = dit::SafetensorsFile::open(image(*run, 0).string());
    EXPECT_GT(file.to_float("output").numel(), 0);
  }
  const uint64_t common = std::min(first.counted, again.counted);
  for (uint64_t index = 0; index < common; ++index) {
    EXPECT_EQ(dit::sha256_file(image(first, index).string()), dit::sha256_file(image(again, index).string())) << index;
  }
  EXPECT_NE(dit::sha256_file(image(first, 0).string()), dit::sha256_file(image(other, 0).string()));
}

}  // namespace
