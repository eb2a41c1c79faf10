// Whole-file reads, the atomic writer and the durable append (core/files.h): what a reader sees
// after a write, after an abandoned write, after a failed one and after a torn append, and the
// errors that name the file.
#include "core/files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/error.h"
#include "tests/support/scratch_directory.h"
#include "tests/support/thrown_error.h"

namespace dit {
namespace {

using test::thrown_error;

size_t entries(const std::filesystem::path& folder) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(folder), {}));
}

class FilesByDurability : public testing::TestWithParam<Durability> {};

TEST_P(FilesByDurability, a_write_replaces_the_whole_file_and_leaves_nothing_beside_it) {
  const test::ScratchDirectory scratch;
  const std::string path = scratch.file("out.json");
  write_file_atomic(path, "a longer first version\n", ParentFolders::must_exist, GetParam());
  write_file_atomic(path, std::string("second\0binary", 13), ParentFolders::must_exist, GetParam());
  EXPECT_EQ(read_text_file(path), std::string("second\0binary", 13));
  EXPECT_EQ(entries(scratch.path()), 1u);
}

TEST_P(FilesByDurability, an_uncommitted_file_leaves_the_old_one) {
  const test::ScratchDirectory scratch;
  const std::string path = scratch.file("out.json");
  write_file_atomic(path, "old", ParentFolders::must_exist, GetParam());
  {
    AtomicFile file(path, GetParam());
    file.write("new", 3);
  }  // abandoned, as when a writer throws halfway
  EXPECT_EQ(read_text_file(path), "old");
  EXPECT_EQ(entries(scratch.path()), 1u);
}

INSTANTIATE_TEST_SUITE_P(SyncedAndReplaced, FilesByDurability,
                         testing::Values(Durability::synced, Durability::replaced),
                         [](const auto& info) { return info.param == Durability::synced ? "synced" : "replaced"; });

TEST(Files, errors_name_the_file) {
  const test::ScratchDirectory scratch;
  const std::string missing = scratch.file("missing.json");
  const Error read = thrown_error([&] { read_text_file(missing, "GEMM plan "); });
  EXPECT_EQ(read.kind(), ErrorKind::io);
  EXPECT_NE(std::string(read.what()).find("cannot open GEMM plan " + missing), std::string::npos) << read.what();

  const std::string nowhere = scratch.file("no-such-folder/out.json");
  const Error write = thrown_error([&] { write_file_atomic(nowhere, "x"); });
  EXPECT_EQ(write.kind(), ErrorKind::io);
  EXPECT_NE(std::string(write.what()).find(nowhere), std::string::npos) << write.what();
  EXPECT_EQ(entries(scratch.path()), 0u);
}

TEST(Files, missing_parent_folders_are_made_when_asked) {
  const test::ScratchDirectory scratch;
  const std::string nested = scratch.file("a/b/out.json");
  write_file_atomic(nested, "x", ParentFolders::create);
  EXPECT_EQ(read_text_file(nested), "x");
  EXPECT_EQ(entries(scratch.file("a/b")), 1u);
}

TEST(Files, json_errors_name_line_and_column) {
  const test::ScratchDirectory scratch;
  const std::string path = scratch.file("bad.json");
  std::ofstream(path) << "{\n  \"a\": 1,\n  \"b\": ]\n}\n";
  const Error error = thrown_error([&] { read_json_file(path); });
  EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
  EXPECT_NE(std::string(error.what()).find(path + ":3:8: not valid JSON"), std::string::npos) << error.what();
}

TEST(Files, json_out_of_double_range_is_a_file_error) {
  const test::ScratchDirectory scratch;
  const std::string path = scratch.file("huge.json");
  std::ofstream(path) << "{\"repetitions\": 1e999}";
  const Error error = thrown_error([&] { read_json_file(path); });
  EXPECT_EQ(error.kind(), ErrorKind::invalid_file);
  EXPECT_NE(std::string(error.what()).find(path + ": not usable JSON"), std::string::npos) << error.what();
}

TEST(Files, json_written_atomically_reads_back) {
  const test::ScratchDirectory scratch;
  const std::string path = scratch.file("state.json");
  write_json_atomic(path, {{"x", 1}});
  write_json_atomic(path, {{"x", 2}});
  EXPECT_EQ(read_json_file(path)["x"], 2);
  EXPECT_EQ(entries(scratch.path()), 1u);
}

TEST(Files, an_append_cuts_a_torn_last_line) {
  const test::ScratchDirectory scratch;
  const std::string path = scratch.file("rows.tsv");
  append_line_durable(path, "a\tb");
  std::ofstream(path, std::ios::app) << "torn";  // a writer killed mid-line
  append_line_durable(path, "c\td");
  EXPECT_EQ(read_text_file(path), "a\tb\nc\td\n");
}

}  // namespace
}  // namespace dit
