// A folder under the system's temporary directory, unique per process and call, removed with
// everything in it when the object goes out of scope.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace dit::test {

class TemporaryFolder {
 public:
  explicit TemporaryFolder(const std::string& label) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("dit-" + label + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    if (!std::filesystem::create_directories(path_)) {
      throw std::runtime_error("cannot create " + path_.string());
    }
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace dit::test
