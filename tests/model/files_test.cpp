// Whole-file reads and atomic writes (model/files.h): what a reader sees after a write, after an
// abandoned write and after a failed one, and the errors that name the file.
#include "model/files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <iterator>
#include <string>

#include "model/error.h"
#include "tests/model/scratch_directory.h"
#include "tests/model/thrown_error.h"

namespace dit {
namespace {

using test::thrown_error;

size_t entries(const std::filesystem::path& folder) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(folder), {}));
}

TEST(Files, a_write_replaces_the_whole_file_and_leaves_nothing_beside_it) {
  const test::ScratchDirectory scratch;
  const std::string path = scratch.file("out.json");
  write_file_atomic(path, "a longer first version\n");
  write_file_atomic(path, std::string("second\0binary", 13));
  EXPECT_EQ(read_text_file(path), std::string("second\0binary", 13));
  EXPECT_EQ(entries(scratch.path()), 1u);
}

TEST(Files, an_uncommitted_file_leaves_the_old_one) {
  const test::ScratchDirectory scratch;
  const std::string path = scratch.file("out.json");
  write_file_atomic(path, "old");
  {
    AtomicFile file(path);
    file.write("new", 3);
  }  // abandoned, as when a writer throws halfway
  EXPECT_EQ(read_text_file(path), "old");
  EXPECT_EQ(entries(scratch.path()), 1u);
}

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

}  // namespace
}  // namespace dit
