// POSIX implementations of the durable writes: write + fsync + rename for whole files, and
// O_APPEND + fsync for the results log.
#include "driver/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "model/error.h"

namespace dit::ar {

namespace {

[[noreturn]] void fail_io(const std::string& what, const std::filesystem::path& path) {
  throw Error(ErrorKind::io, what + " " + path.string() + ": " + std::strerror(errno));
}

void write_all(int descriptor, const std::string& content, const std::filesystem::path& path) {
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t written = ::write(descriptor, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail_io("cannot write", path);
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
}

void fsync_folder(const std::filesystem::path& folder) {
  int descriptor = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (descriptor < 0) fail_io("cannot open folder", folder);
  ::fsync(descriptor);
  ::close(descriptor);
}

}  // namespace

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) fail_io("cannot read", path);
  std::ostringstream content;
  content << stream.rdbuf();
  return content.str();
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::string text = read_text_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    std::size_t line = 1;
    std::size_t column = 1;
    for (std::size_t i = 0; i + 1 < error.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string reason = error.what();
    if (auto colon = reason.find("syntax error"); colon != std::string::npos) reason = reason.substr(colon);
    throw Error(ErrorKind::invalid_file, path.string() + ":" + std::to_string(line) + ":" + std::to_string(column) +
                                             ": not valid JSON (" + reason + ")");
  }
}

void write_file_atomic(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::path temporary = path;
  temporary += ".tmp." + std::to_string(::getpid());
  int descriptor = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (descriptor < 0) fail_io("cannot create", temporary);
  write_all(descriptor, content, temporary);
  if (::fsync(descriptor) != 0) fail_io("cannot fsync", temporary);
  ::close(descriptor);
  if (::rename(temporary.c_str(), path.c_str()) != 0) fail_io("cannot rename into place", path);
  fsync_folder(path.parent_path());
}

void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& document) {
  write_file_atomic(path, document.dump(2) + "\n");
}

void append_line_durable(const std::filesystem::path& path, const std::string& line) {
  int descriptor = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (descriptor < 0) fail_io("cannot open", path);
  struct stat status {};
  if (::fstat(descriptor, &status) != 0) fail_io("cannot stat", path);
  if (status.st_size > 0) {
    // Find the end of the last whole line; anything after it is a torn write.
    off_t size = status.st_size;
    off_t keep = size;
    char byte = 0;
    while (keep > 0) {
      if (::pread(descriptor, &byte, 1, keep - 1) != 1) fail_io("cannot read", path);
      if (byte == '\n') break;
      --keep;
    }
    if (keep != size && ::ftruncate(descriptor, keep) != 0) fail_io("cannot truncate a torn line in", path);
  }
  write_all(descriptor, line + "\n", path);
  if (::fsync(descriptor) != 0) fail_io("cannot fsync", path);
  ::close(descriptor);
}

}  // namespace dit::ar
