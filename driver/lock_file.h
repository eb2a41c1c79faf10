// LockFile: one driver at a time per state directory. An flock(2) on <state>/lock, released
// by the kernel when the holder exits or is killed, so a crash never leaves a stale lock.
#pragma once

#include <filesystem>
#include <optional>

namespace dit::ar {

class LockFile {
 public:
  // Takes the lock or throws dit::Error(invalid_argument) naming the pid that holds it.
  explicit LockFile(const std::filesystem::path& path);
  ~LockFile();
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

  // The pid recorded by the current holder, or nothing when the lock is free.
  static std::optional<int> holder(const std::filesystem::path& path);

 private:
  int descriptor_ = -1;
};

}  // namespace dit::ar
