// Fixed ground (core/): the SHA-256 the judge hashes renders and baselines with.
// SHA-256 (FIPS 180-4) of byte strings and files, as lowercase hex, computed by OpenSSL's
// libcrypto (its EVP digest API, Debian's libssl-dev), which uses the CPU's SHA extensions or
// vector units where they exist. libcrypto is linked privately: this header names only an
// opaque context, so a program that includes it needs no OpenSSL headers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace dit {

// Throws dit::Error: io when libcrypto fails (no memory for a context, no SHA-256 in its
// providers), invalid_argument when a spent or moved-from object is used.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256& other);  // the hash so far, continued independently
  Sha256& operator=(const Sha256& other);
  Sha256(Sha256&& other) noexcept;  // leaves other unusable
  Sha256& operator=(Sha256&& other) noexcept;

  void update(std::span<const std::byte> bytes);
  void update(std::string_view text);
  std::array<uint8_t, 32> digest();  // finishes the hash; the object is spent afterwards
  std::string hex_digest();

 private:
  evp_md_ctx_st* context_ = nullptr;
  bool spent_ = false;
};

std::string sha256_hex(std::string_view bytes);
// Throws dit::Error (io) when the file cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace dit
