// Running one GoogleTest binary as several processes at once: with DIT_TEST_SHARDS=N (a count
// from 1 to 64, or `auto`: the host's cores, at most 8) the main starts N copies of its own
// program, copy k with GoogleTest's GTEST_TOTAL_SHARDS=N and GTEST_SHARD_INDEX=k, so each runs
// every N-th test; it waits for all of them, prints each one's output whole in shard order, and
// exits 0 when every shard passed, else 1. A CTest test stays one test (one GPU allocation, one
// result) while its cases spread over the cores, which is what a test made mostly of CPU
// references needs. Not sharded: a run that lists tests, that asks GoogleTest for a report
// file (--gtest_output or GTEST_OUTPUT, which the copies would overwrite), that is already a
// shard, or N of 1.
#pragma once

namespace dit::test {

// -1 when this run is not to be sharded (the caller runs its tests itself), else the exit code
// of the sharded run; 2 with a message on stderr for a malformed DIT_TEST_SHARDS.
int run_in_shards(int argc, char** argv);

}  // namespace dit::test
