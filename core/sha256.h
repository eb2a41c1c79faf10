// Fixed ground (core/): the SHA-256 the judge hashes renders and baselines with.
// SHA-256 (FIPS 180-4) of byte strings and files, as lowercase hex. Written here rather than
// taken from OpenSSL because the project's Debian package list does not install libssl-dev,
// and libgit2's git_odb_hash hashes git's object framing with SHA-1, not a file's SHA-256.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dit {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> bytes);
  void update(std::string_view text);
  std::array<uint8_t, 32> digest();  // finishes the hash; the object is spent afterwards
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view bytes);
// Throws dit::Error (io) when the file cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace dit
