// What the fuzz targets share: checking a property (a failed check prints what it was and traps,
// which libFuzzer reports as a crash with the input that caused it), and a scratch folder for
// the readers that take a path (one per process, removed at exit).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dit::fuzz {

inline void check(bool condition, const char* property) {
  if (condition) return;
  std::fprintf(stderr, "fuzz property violated: %s\n", property);
  __builtin_trap();
}

// Whether nlohmann's strict dump takes the text (valid UTF-8), as every record writer needs.
inline bool valid_utf8(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A fresh folder for this process, removed at exit (never destroyed itself, so the exit handler
// can still read it): under $TMPDIR when set, else in memory (/dev/shm) where there is one, as
// the readers under test are run on a new file every time (and the writers fsync), else /tmp.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path* dir = [] {
    std::error_code error;
    const char* tmpdir = std::getenv("TMPDIR");
    const std::filesystem::path parent =
        tmpdir && *tmpdir ? tmpdir
        : std::filesystem::is_directory("/dev/shm", error) && ::access("/dev/shm", W_OK) == 0
            ? "/dev/shm"
            : std::filesystem::temp_directory_path();
    std::string pattern = (parent / "dit-fuzz-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    auto* made = new std::filesystem::path(pattern);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return made;
  }();
  return *dir;
}

// Writes `bytes` as the whole of `path` (a plain write: the readers under test are what matters).
inline void write_bytes(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  check(static_cast<bool>(out), "the scratch file could be written");
}

}  // namespace dit::fuzz
