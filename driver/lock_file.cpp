// flock-based lock; the descriptor is close-on-exec so child processes never hold it.
#include "driver/lock_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"

namespace dit::ar {

namespace {

std::optional<int> read_pid(int descriptor) {
  char buffer[32] = {};
  ssize_t got = ::pread(descriptor, buffer, sizeof buffer - 1, 0);
  if (got <= 0) return std::nullopt;
  return std::atoi(buffer);
}

}  // namespace

LockFile::LockFile(const std::filesystem::path& path) {
  descriptor_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (descriptor_ < 0) {
    throw Error(ErrorKind::io, "cannot open the lock file " + path.string() + ": " + std::strerror(errno));
  }
  if (::flock(descriptor_, LOCK_EX | LOCK_NB) != 0) {
    std::optional<int> pid = read_pid(descriptor_);
    ::close(descriptor_);
    descriptor_ = -1;
    throw Error(ErrorKind::invalid_argument, "another dit-ar is running on this state directory" +
                                                 (pid ? " (pid " + std::to_string(*pid) + ")" : std::string()) +
                                                 "; wait for it to finish (`dit-ar status` shows what it is doing)");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(descriptor_, 0) != 0 || ::pwrite(descriptor_, pid.data(), pid.size(), 0) < 0) {
    throw Error(ErrorKind::io, "cannot write the lock file " + path.string());
  }
}

LockFile::~LockFile() {
  if (descriptor_ >= 0) {
    (void)!::ftruncate(descriptor_, 0);
    ::close(descriptor_);
  }
}

std::optional<int> LockFile::holder(const std::filesystem::path& path) {
  int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) return std::nullopt;
  std::optional<int> pid;
  if (::flock(descriptor, LOCK_SH | LOCK_NB) != 0)
    pid = read_pid(descriptor).value_or(0);
  else
    ::flock(descriptor, LOCK_UN);
  ::close(descriptor);
  return pid;
}

}  // namespace dit::ar
