// DIT_TEST_SHARDS (tests/support/test_shards.h) over shards_probe: every case runs exactly once,
// spread over as many processes as asked; one failing case fails the whole run; a malformed
// count is an input error; a report file or a listing turns sharding off; a read-only file system
// (the driver's sandbox: /tmp and the build tree not writable) does not stop it.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "tests/support/process_runner.h"
#include "tests/support/scratch_directory.h"

namespace {

struct Ran {
  std::map<std::string, int> cases;  // case -> times run
  std::set<std::string> processes;
};

Ran read_log(const std::string& path) {
  Ran ran;
  std::ifstream log(path);
  std::string name, pid;
  while (log >> name >> pid) {
    ++ran.cases[name];
    ran.processes.insert(pid);
  }
  return ran;
}

struct Row {
  std::string shards;  // DIT_TEST_SHARDS
  std::string extra;   // more environment or arguments
  int exit_code;
  size_t processes;  // distinct processes that ran cases (0: not checked)
  bool planted_failure;
};

class TestShards : public testing::TestWithParam<Row> {};

TEST_P(TestShards, RunsEveryCaseOnceAndReportsTheWhole) {
  const Row& row = GetParam();
  dit::test::ScratchDirectory scratch;
  const std::string log = (scratch.path() / "ran.txt").string();
  const std::string command = "DIT_SHARD_PROBE_LOG=" + log + " DIT_TEST_SHARDS=" + row.shards +
                              (row.planted_failure ? " DIT_SHARD_PROBE_FAIL=1" : "") + " " + row.extra + " " +
                              DIT_SHARDS_PROBE;
  const dit::test::ProcessResult result = dit::test::run_program("env", command);
  EXPECT_EQ(result.exit_code, row.exit_code) << result.output;
  if (row.exit_code == 2) {
    EXPECT_NE(result.output.find("is not a shard count"), std::string::npos) << result.output;
    return;
  }
  const Ran ran = read_log(log);
  EXPECT_EQ(ran.cases.size(), 12u) << result.output;
  for (const auto& [name, times] : ran.cases) EXPECT_EQ(times, 1) << name << " ran " << times << " times";
  if (row.processes) {
    EXPECT_EQ(ran.processes.size(), row.processes) << result.output;
  }
  if (row.planted_failure) {
    EXPECT_NE(result.output.find("planted failure"), std::string::npos) << result.output;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, TestShards,
                         testing::Values(Row{"3", "", 0, 3, false}, Row{"12", "", 0, 12, false},
                                         Row{"1", "", 0, 1, false}, Row{"4", "", 1, 4, true},
                                         Row{"auto", "", 0, 0, false}, Row{"0", "", 2, 0, false},
                                         Row{"65", "", 2, 0, false}, Row{"three", "", 2, 0, false},
                                         // A report file the shards would overwrite: one process, as without sharding.
                                         Row{"3", "GTEST_OUTPUT=xml:/dev/null", 0, 1, false},
                                         // Already a shard of an outer run: left to that run.
                                         Row{"3", "GTEST_TOTAL_SHARDS=1 GTEST_SHARD_INDEX=0", 0, 1, false}));

// The driver runs a candidate's tests under bwrap with every file system read-only except the
// candidate's folders; the shards' output must not need a file.
TEST(TestShardsReadOnly, RunsWhereNothingIsWritable) {
  if (dit::test::run_program("bwrap", "--ro-bind / / --dev /dev --proc /proc -- true").exit_code != 0)
    GTEST_SKIP() << "bwrap cannot make a read-only view here";
  dit::test::ScratchDirectory scratch;
  const std::string log = (scratch.path() / "ran.txt").string();
  const std::string command = "--ro-bind / / --dev /dev --proc /proc --bind " + scratch.path().string() + " " +
                              scratch.path().string() + " -- env DIT_SHARD_PROBE_LOG=" + log + " DIT_TEST_SHARDS=3 " +
                              DIT_SHARDS_PROBE;
  const dit::test::ProcessResult result = dit::test::run_program("bwrap", command);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  const Ran ran = read_log(log);
  EXPECT_EQ(ran.cases.size(), 12u) << result.output;
  EXPECT_EQ(ran.processes.size(), 3u) << result.output;
}

}  // namespace
