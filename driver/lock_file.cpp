// flock-based lock; the descriptor is close-on-exec so the programs the driver runs never hold
// it, but the stage supervisors (forked, never exec'd: process.h) do until their sweep is done.
#include "driver/lock_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "core/error.h"
#include "driver/process.h"

namespace dit::ar {

namespace {

constexpr std::chrono::seconds kStoppedDriverWait{20};

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
  bool locked = ::flock(descriptor_, LOCK_EX | LOCK_NB) == 0;
  // A holder whose driver is gone: the supervisors of its stages are still ending them (a
  // driver killed by a signal); they let go within their sweep limit.
  std::optional<int> pid = locked ? std::nullopt : read_pid(descriptor_);
  const auto deadline = std::chrono::steady_clock::now() + kStoppedDriverWait;
  if (!locked && pid && *pid > 0 && !process_alive(*pid))
    std::cerr << "dit-ar: waiting for the stages of a stopped dit-ar (pid " << *pid << ") to be ended\n";
  while (!locked && pid && *pid > 0 && !process_alive(*pid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    locked = ::flock(descriptor_, LOCK_EX | LOCK_NB) == 0;
  }
  if (!locked) {
    if (pid && *pid > 0 && !process_alive(*pid)) {
      ::close(descriptor_);
      descriptor_ = -1;
      throw Error(ErrorKind::invalid_argument,
                  "the processes of a stopped dit-ar (pid " + std::to_string(*pid) + ") still hold " + path.string() +
                      " after " + std::to_string(kStoppedDriverWait.count()) + " s; find them with `fuser -v " +
                      path.string() + "`, end them, and run the command again");
    }
    ::close(descriptor_);
    descriptor_ = -1;
    throw Error(ErrorKind::invalid_argument, "another dit-ar is running on this state directory" +
                                                 (pid ? " (pid " + std::to_string(*pid) + ")" : std::string()) +
                                                 "; wait for it to finish (`dit-ar status` shows what it is doing)");
  }
  const std::string own_pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(descriptor_, 0) != 0 || ::pwrite(descriptor_, own_pid.data(), own_pid.size(), 0) < 0) {
    const int error = errno;
    ::close(descriptor_);
    descriptor_ = -1;
    throw Error(ErrorKind::io, "cannot write the lock file " + path.string() + ": " + std::strerror(error));
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
