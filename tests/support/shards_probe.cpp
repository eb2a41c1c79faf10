// A GoogleTest program for test_shards_test: each of its cases appends "<case> <pid>" to the
// file DIT_SHARD_PROBE_LOG names, and Probe.Planted fails when DIT_SHARD_PROBE_FAIL=1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

void record(const std::string& name) {
  const char* log = std::getenv("DIT_SHARD_PROBE_LOG");
  ASSERT_NE(log, nullptr);
  std::ofstream(log, std::ios::app) << name << " " << getpid() << "\n";
}

class Probe : public testing::TestWithParam<int> {};

TEST_P(Probe, Case) { record("Case/" + std::to_string(GetParam())); }
INSTANTIATE_TEST_SUITE_P(Eleven, Probe, testing::Range(0, 11));

TEST(Probe, Planted) {
  record("Planted");
  const char* fail = std::getenv("DIT_SHARD_PROBE_FAIL");
  EXPECT_FALSE(fail && std::strcmp(fail, "1") == 0) << "planted failure";
}

}  // namespace
