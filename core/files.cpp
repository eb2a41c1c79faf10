// Fixed ground (core/). Whole-file reads, the atomic writer and the durable append (core/files.h), on POSIX calls.
#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "core/error.h"

namespace dit {

namespace {

[[noreturn]] void fail_io(const std::string& what, const std::filesystem::path& path) {
  throw Error(ErrorKind::io, what + " " + path.string() + ": " + std::strerror(errno));
}

void write_all(int descriptor, const char* data, size_t count, const std::filesystem::path& path) {
  while (count > 0) {
    const ssize_t written = ::write(descriptor, data, count);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail_io("cannot write", path);
    }
    data += written;
    count -= static_cast<size_t>(written);
  }
}

}  // namespace

AtomicFile::AtomicFile(const std::string& destination, Durability durability)
    : destination_(destination), durability_(durability) {
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
  const bool synced = durability_ == Durability::synced;
  if (synced && ::fsync(fd_) != 0) fail("cannot fsync '" + path_ + "'");
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail("cannot close '" + path_ + "'");
  if (::rename(path_.c_str(), destination_.c_str()) != 0) fail("cannot rename '" + path_ + "' into place");
  path_.clear();
  if (!synced) return;
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

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, ParentFolders folders,
                       Durability durability) {
  if (folders == ParentFolders::create && path.has_parent_path()) {
    std::error_code ignored;  // a folder that cannot be made fails the write below, naming the path
    std::filesystem::create_directories(path.parent_path(), ignored);
  }
  AtomicFile file(path.string(), durability);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& document, ParentFolders folders) {
  write_file_atomic(path, document.dump(2) + "\n", folders);
}

void append_line_durable(const std::filesystem::path& path, const std::string& line) {
  const int descriptor = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (descriptor < 0) fail_io("cannot open", path);
  struct stat status {};
  if (::fstat(descriptor, &status) != 0) fail_io("cannot stat", path);
  if (status.st_size > 0) {
    // Find the end of the last whole line; anything after it is a torn write.
    const off_t size = status.st_size;
    off_t keep = size;
    char byte = 0;
    while (keep > 0) {
      if (::pread(descriptor, &byte, 1, keep - 1) != 1) fail_io("cannot read", path);
      if (byte == '\n') break;
      --keep;
    }
    if (keep != size && ::ftruncate(descriptor, keep) != 0) fail_io("cannot truncate a torn line in", path);
  }
  const std::string whole = line + "\n";
  write_all(descriptor, whole.data(), whole.size(), path);
  if (::fsync(descriptor) != 0) fail_io("cannot fsync", path);
  ::close(descriptor);
}

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw Error(ErrorKind::io, "cannot open " + std::string(what) + path.string() + ": " + std::strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad())
    throw Error(ErrorKind::io, "cannot read " + std::string(what) + path.string() + ": " + std::strerror(errno));
  return text.str();
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  const std::string text = read_text_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < error.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string reason = error.what();
    if (auto position = reason.find("syntax error"); position != std::string::npos) reason = reason.substr(position);
    throw Error(ErrorKind::invalid_file, path.string() + ":" + std::to_string(line) + ":" + std::to_string(column) +
                                             ": not valid JSON (" + reason + ")");
  } catch (const nlohmann::json::exception& error) {
    // Valid syntax the parser still refuses: a number out of double's range such as 1e999.
    throw Error(ErrorKind::invalid_file, path.string() + ": not usable JSON (" + error.what() + ")");
  }
}

}  // namespace dit
