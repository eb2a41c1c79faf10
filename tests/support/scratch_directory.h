// A fresh directory under the system temporary directory, removed with everything in it when
// the test that made it ends (passed or failed).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/support/test_support.h"

namespace dit::test {

class ScratchDirectory {
 public:
  ScratchDirectory() {
    path_ = std::filesystem::temp_directory_path() /
            ("dit-test-" + std::to_string(::getpid()) + "-" + std::to_string(fresh_seed()));
    std::filesystem::create_directories(path_);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace dit::test
