// Remembered checkpoint hashes (core/checkpoint_hash.h): a record is trusted only for the file
// identity it was made for, is not made for a file that changed moments ago, and a folder that
// cannot hold records changes nothing but speed.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/checkpoint_hash.h"
#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"
#include "tests/support/scratch_directory.h"

namespace dit {
namespace {

namespace fs = std::filesystem;

void write_bytes(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// Moves the file's modification time back, so that it counts as still (not racily recent).
void age(const fs::path& path) { fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::hours(1)); }

size_t records_in(const fs::path& folder) {
  if (!fs::exists(folder)) return 0;
  size_t count = 0;
  for (const auto& entry : fs::directory_iterator(folder)) count += entry.path().extension() == ".json";
  return count;
}

class RememberedSha256 : public testing::Test {
 protected:
  test::ScratchDirectory scratch;
  fs::path file = scratch.path() / "weights.safetensors";
  fs::path cache = scratch.path() / "cache";
};

TEST_F(RememberedSha256, RecordsAStillFileAndTrustsTheRecordForTheSameIdentity) {
  write_bytes(file, "checkpoint bytes, version one");
  age(file);
  const std::string actual = sha256_file(file.string());
  EXPECT_EQ(remembered_sha256_file(file.string(), cache), actual);
  ASSERT_EQ(records_in(cache), 1u);
  // The record, not the file, answers now: one whose hash was replaced is believed as long as
  // the file's identity is the recorded one (which is why only the identity guards it).
  const fs::path record = fs::directory_iterator(cache)->path();
  nlohmann::json stored = read_json_file(record);
  const std::string planted(64, 'a');
  stored["sha256"] = planted;
  write_json_atomic(record, stored, ParentFolders::must_exist);
  EXPECT_EQ(remembered_sha256_file(file.string(), cache), planted);
}

TEST_F(RememberedSha256, AChangedFileIsHashedAgain) {
  write_bytes(file, "checkpoint bytes, version one");
  age(file);
  const std::string first = remembered_sha256_file(file.string(), cache);
  write_bytes(file, "checkpoint bytes, version two");  // same path and inode, new bytes
  age(file);                                           // even with an old modification time
  const std::string second = remembered_sha256_file(file.string(), cache);
  EXPECT_NE(second, first);
  EXPECT_EQ(second, sha256_file(file.string()));
}

TEST_F(RememberedSha256, AFileWrittenMomentsAgoIsNotRecorded) {
  write_bytes(file, "still being written");
  EXPECT_EQ(remembered_sha256_file(file.string(), cache), sha256_file(file.string()));
  EXPECT_EQ(records_in(cache), 0u);
}

TEST_F(RememberedSha256, AFolderThatCannotHoldRecordsOnlyCostsTheRead) {
  write_bytes(file, "checkpoint bytes");
  age(file);
  write_bytes(scratch.path() / "not-a-folder", "a file where the cache folder would go");
  const fs::path blocked = scratch.path() / "not-a-folder" / "cache";
  EXPECT_EQ(remembered_sha256_file(file.string(), blocked), sha256_file(file.string()));
  EXPECT_EQ(remembered_sha256_file(file.string(), fs::path()), sha256_file(file.string()));  // no folder
}

TEST_F(RememberedSha256, AMissingFileIsAnError) {
  EXPECT_THROW(remembered_sha256_file((scratch.path() / "missing.safetensors").string(), cache), Error);
}

}  // namespace
}  // namespace dit
