// GoogleTest main for tests that need no GPU; DIT_TEST_SHARDS runs it as several processes
// (test_shards.h).
#include <gtest/gtest.h>

#include "tests/support/test_shards.h"

int main(int argc, char** argv) {
  if (const int sharded = dit::test::run_in_shards(argc, argv); sharded >= 0) return sharded;
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
