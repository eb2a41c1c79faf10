// Fixed ground (core/). SHA-256 through OpenSSL 3's EVP digest API.
#include "core/sha256.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "core/error.h"

namespace dit {

namespace {

// What libcrypto's error queue says about the last failure (and empties it), for a message.
std::string openssl_error() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    text += (text.empty() ? "" : "; ") + std::string(buffer);
  }
  return text.empty() ? "no error reported" : text;
}

// A libcrypto failure (no memory for a context, no SHA-256 in its providers) is reported as io:
// the hash is part of reading what it covers, and dit::ErrorKind has no closer kind.
void check(int ok, const char* what) {
  if (ok != 1) throw Error(ErrorKind::io, std::string("SHA-256: OpenSSL's ") + what + " failed: " + openssl_error());
}

evp_md_ctx_st* new_context() {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  if (context == nullptr) throw Error(ErrorKind::io, "SHA-256: EVP_MD_CTX_new failed: " + openssl_error());
  return context;
}

// The file's bytes go to libcrypto through a buffer this large (less for a smaller file).
constexpr size_t kFileBufferBytes = size_t{4} << 20;

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

Sha256::Sha256() : context_(new_context()) {
  try {
    check(EVP_DigestInit_ex(context_, EVP_sha256(), nullptr), "EVP_DigestInit_ex(EVP_sha256())");
  } catch (...) {
    EVP_MD_CTX_free(context_);
    throw;
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(context_); }

Sha256::Sha256(const Sha256& other) : context_(nullptr), spent_(other.spent_) {
  if (other.context_ == nullptr) return;  // a moved-from object copies as one
  context_ = new_context();
  if (EVP_MD_CTX_copy_ex(context_, other.context_) != 1) {
    const std::string reason = openssl_error();
    EVP_MD_CTX_free(context_);
    throw Error(ErrorKind::io, "SHA-256: OpenSSL's EVP_MD_CTX_copy_ex failed: " + reason);
  }
}

Sha256& Sha256::operator=(const Sha256& other) {
  if (this != &other) {
    Sha256 copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Sha256::Sha256(Sha256&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)), spent_(std::exchange(other.spent_, false)) {}

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  if (this != &other) {
    EVP_MD_CTX_free(context_);
    context_ = std::exchange(other.context_, nullptr);
    spent_ = std::exchange(other.spent_, false);
  }
  return *this;
}

void Sha256::update(std::span<const std::byte> bytes) {
  if (context_ == nullptr) throw Error(ErrorKind::invalid_argument, "SHA-256: update on a moved-from Sha256");
  if (spent_) throw Error(ErrorKind::invalid_argument, "SHA-256: update after digest()");
  check(EVP_DigestUpdate(context_, bytes.data(), bytes.size()), "EVP_DigestUpdate");
}

void Sha256::update(std::string_view text) { update(std::as_bytes(std::span(text.data(), text.size()))); }

std::array<uint8_t, 32> Sha256::digest() {
  if (context_ == nullptr) throw Error(ErrorKind::invalid_argument, "SHA-256: digest of a moved-from Sha256");
  if (spent_) throw Error(ErrorKind::invalid_argument, "SHA-256: digest() called twice");
  std::array<uint8_t, 32> out{};
  unsigned int length = 0;
  check(EVP_DigestFinal_ex(context_, out.data(), &length), "EVP_DigestFinal_ex");
  spent_ = true;
  if (length != out.size())
    throw Error(ErrorKind::io, "SHA-256: OpenSSL's digest has " + std::to_string(length) + " bytes, not 32");
  return out;
}

std::string Sha256::hex_digest() {
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  hex.reserve(64);
  for (uint8_t byte : digest()) {
    hex.push_back(kHex[byte >> 4]);
    hex.push_back(kHex[byte & 15]);
  }
  return hex;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes);
  return hash.hex_digest();
}

std::string sha256_file(const std::string& path) {
  const FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) throw Error(ErrorKind::io, "cannot open " + path + " to hash it: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(file.get(), &info) != 0)
    throw Error(ErrorKind::io, "cannot stat " + path + " to hash it: " + std::strerror(errno));
  // A regular file's size plus one (so that the second read sees its end), at most 4 MiB;
  // anything else (a pipe, a /proc file reporting size 0) gets 64 KiB.
  size_t buffer_bytes = size_t{1} << 16;
  if (S_ISREG(info.st_mode) && info.st_size > 0)
    buffer_bytes = std::min(kFileBufferBytes, static_cast<size_t>(info.st_size) + 1);
  if (S_ISREG(info.st_mode)) (void)::posix_fadvise(file.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  const std::unique_ptr<std::byte[]> buffer(new std::byte[buffer_bytes]);
  Sha256 hash;
  for (;;) {
    const ssize_t got = ::read(file.get(), buffer.get(), buffer_bytes);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::io, "read error while hashing " + path + ": " + std::strerror(errno));
    }
    if (got == 0) break;
    hash.update(std::span<const std::byte>(buffer.get(), static_cast<size_t>(got)));
  }
  return hash.hex_digest();
}

}  // namespace dit
