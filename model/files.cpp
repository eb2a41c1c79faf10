// Whole-file reads and atomic writes (model/files.h).
#include "model/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "model/error.h"

namespace dit {

AtomicFile::AtomicFile(const std::string& destination) : destination_(destination) {
  std::string pattern = destination + ".tmp.XXXXXX";
  fd_ = mkostemp(pattern.data(), O_CLOEXEC);
  if (fd_ < 0) fail("cannot create a temporary file beside it");
  path_ = pattern;
  if (fchmod(fd_, 0644) != 0) fail("cannot set the permissions of '" + path_ + "'");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!path_.empty()) ::unlink(path_.c_str());
}

void AtomicFile::write(const void* bytes, size_t count) {
  const auto* cursor = static_cast<const char*>(bytes);
  while (count > 0) {
    const ssize_t written = ::write(fd_, cursor, count);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail("cannot write '" + path_ + "'");
    }
    cursor += written;
    count -= static_cast<size_t>(written);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("cannot fsync '" + path_ + "'");
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail("cannot close '" + path_ + "'");
  if (::rename(path_.c_str(), destination_.c_str()) != 0) fail("cannot rename '" + path_ + "' into place");
  path_.clear();
  const auto slash = destination_.find_last_of('/');
  const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : destination_.substr(0, slash);
  const int directory_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory_fd >= 0) {
    // The file is complete and in place; a failed directory sync only weakens durability.
    ::fsync(directory_fd);
    ::close(directory_fd);
  }
}

void AtomicFile::fail(const std::string& what) const {
  throw Error(ErrorKind::io, "writing '" + destination_ + "': " + what + ": " + std::strerror(errno));
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

std::string read_text_file(const std::string& path, std::string_view what) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(ErrorKind::io, "cannot open " + std::string(what) + path);
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw Error(ErrorKind::io, "cannot read " + std::string(what) + path);
  return text.str();
}

}  // namespace dit
