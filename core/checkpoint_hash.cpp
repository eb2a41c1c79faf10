// Fixed ground (core/). Remembered checkpoint hashes (core/checkpoint_hash.h).
#include "core/checkpoint_hash.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"

namespace dit {
namespace {

namespace fs = std::filesystem;

struct Identity {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t modified_ns = 0, changed_ns = 0;
};

std::optional<Identity> identity_of(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  const auto ns = [](const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; };
  return Identity{static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino),
                  static_cast<uint64_t>(info.st_size), ns(info.st_mtim), ns(info.st_ctim)};
}

nlohmann::json to_json(const Identity& id) {
  return {{"device", id.device},
          {"inode", id.inode},
          {"size", id.size},
          {"modified_ns", id.modified_ns},
          {"changed_ns", id.changed_ns}};
}

bool is_sha256_hex(const std::string& text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

fs::path default_hash_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "dit-autoresearch" / "sha256";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "dit-autoresearch" / "sha256";
  return {};
}

std::string remembered_sha256_file(const std::string& path, const std::optional<fs::path>& cache_dir) {
  const fs::path folder = cache_dir ? *cache_dir : default_hash_cache_dir();
  const auto started = std::chrono::system_clock::now();
  const std::optional<Identity> before = identity_of(path);
  fs::path record;
  if (before && !folder.empty()) {
    record = folder / (std::to_string(before->device) + "-" + std::to_string(before->inode) + ".json");
    try {
      const nlohmann::json stored = read_json_file(record);
      const std::string sha256 = stored.value("sha256", "");
      if (stored.value("identity", nlohmann::json()) == to_json(*before) && is_sha256_hex(sha256)) return sha256;
    } catch (const std::exception&) {
      // no record, or an unreadable one: hash the file
    }
  }
  const std::string sha256 = sha256_file(path);
  const std::optional<Identity> after = identity_of(path);
  const auto modified =
      std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(before ? before->modified_ns : 0)));
  // Recorded only for a file that did not change while it was read and had been still for 2 s.
  if (!record.empty() && after && to_json(*after) == to_json(*before) && started - modified > std::chrono::seconds(2)) {
    try {
      write_json_atomic(record, {{"path", path}, {"identity", to_json(*before)}, {"sha256", sha256}},
                        ParentFolders::create);
    } catch (const std::exception&) {
      // a folder that cannot be written (a read-only sandbox): the hash is still right
    }
  }
  return sha256;
}

}  // namespace dit
