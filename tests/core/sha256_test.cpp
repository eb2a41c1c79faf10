// SHA-256 against the FIPS 180-2 / 180-4 (NIST) example messages, incremental updates against
// one-shot hashing, copies of a hash in progress, and files around the reader's buffer size.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/sha256.h"

namespace dit {
namespace {

const std::string kEmptyDigest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const std::string kMillionADigest = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

TEST(Sha256, MatchesTheNistExamples) {
  EXPECT_EQ(sha256_hex(""), kEmptyDigest);
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(
      sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                 "mnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), kMillionADigest);
}

TEST(Sha256, OneMillionAInPiecesMatchesTheNistExample) {
  Sha256 hash;
  const std::string piece(1000, 'a');
  for (int i = 0; i < 1000; ++i) hash.update(piece);
  EXPECT_EQ(hash.hex_digest(), kMillionADigest);
}

TEST(Sha256, EmptyUpdatesChangeNothing) {
  Sha256 hash;
  hash.update(std::string_view());
  hash.update(std::span<const std::byte>());
  EXPECT_EQ(hash.hex_digest(), kEmptyDigest);
}

std::string test_message(size_t length) {
  std::string message;
  for (size_t i = 0; i < length; ++i) message.push_back(static_cast<char>(i * 37 + 11 + (i >> 8)));
  return message;
}

TEST(Sha256, ChunkedUpdatesEqualOneShot) {
  const std::string message = test_message(1000);
  // Lengths around the 55/56/64-byte padding boundaries, split at every offset into two and
  // three pieces.
  for (size_t length : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000}) {
    const std::string_view part = std::string_view(message).substr(0, length);
    const std::string expected = sha256_hex(part);
    for (size_t split = 0; split <= length; ++split) {
      Sha256 hash;
      hash.update(part.substr(0, split));
      hash.update(part.substr(split));
      EXPECT_EQ(hash.hex_digest(), expected) << "length " << length << " split " << split;
    }
    for (size_t first = 0; first <= length; first += 5) {
      for (size_t second = first; second <= length; second += 11) {
        Sha256 hash;
        hash.update(part.substr(0, first));
        hash.update(part.substr(first, second - first));
        hash.update(part.substr(second));
        EXPECT_EQ(hash.hex_digest(), expected) << "length " << length << " splits " << first << ", " << second;
      }
    }
  }
}

TEST(Sha256, EveryChunkSizeEqualsOneShot) {
  const std::string message = test_message(10007);
  const std::string expected = sha256_hex(message);
  for (size_t chunk = 1; chunk <= 200; ++chunk) {
    Sha256 hash;
    for (size_t offset = 0; offset < message.size(); offset += chunk)
      hash.update(std::string_view(message).substr(offset, chunk));
    EXPECT_EQ(hash.hex_digest(), expected) << "chunk " << chunk;
  }
}

TEST(Sha256, ByteSpansAndTextHashAlike) {
  const std::string message = test_message(300);
  Sha256 hash;
  hash.update(std::as_bytes(std::span(message.data(), message.size())));
  const std::array<uint8_t, 32> digest = hash.digest();
  const std::string hex = sha256_hex(message);
  static const char* kHex = "0123456789abcdef";
  for (size_t i = 0; i < digest.size(); ++i) {
    EXPECT_EQ(hex[2 * i], kHex[digest[i] >> 4]);
    EXPECT_EQ(hex[2 * i + 1], kHex[digest[i] & 15]);
  }
}

TEST(Sha256, ACopyContinuesIndependently) {
  Sha256 original;
  original.update("abc");
  Sha256 copy(original);
  copy.update("def");
  Sha256 assigned;
  assigned.update("something else entirely");
  assigned = original;
  EXPECT_EQ(original.hex_digest(), sha256_hex("abc"));
  EXPECT_EQ(copy.hex_digest(), sha256_hex("abcdef"));
  assigned.update("xyz");
  EXPECT_EQ(assigned.hex_digest(), sha256_hex("abcxyz"));

  Sha256 source;
  source.update("ab");
  Sha256 moved(std::move(source));
  moved.update("c");
  EXPECT_EQ(moved.hex_digest(), sha256_hex("abc"));
}

TEST(Sha256, ASpentHashRefusesMore) {
  Sha256 hash;
  hash.update("abc");
  EXPECT_EQ(hash.hex_digest(), sha256_hex("abc"));
  EXPECT_THROW(hash.update("d"), Error);
  EXPECT_THROW(hash.digest(), Error);
}

std::string write_test_file(const std::string& name, const std::string& bytes) {
  const std::string path = testing::TempDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST(Sha256, HashesFiles) {
  const std::string path = write_test_file("sha256_test_file.bin", "abc");
  EXPECT_EQ(sha256_file(path), sha256_hex("abc"));
  EXPECT_EQ(sha256_file(write_test_file("sha256_test_empty.bin", "")), kEmptyDigest);
  EXPECT_THROW(sha256_file(path + ".missing"), std::exception);
  try {
    sha256_file(path + ".missing");
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::io);
  }
}

TEST(Sha256, HashesFilesAroundTheReadBufferSize) {
  constexpr size_t kBuffer = size_t{4} << 20;  // sha256_file's read buffer
  const std::string message = test_message(kBuffer + 65);
  for (size_t length : {kBuffer - 1, kBuffer, kBuffer + 1, kBuffer + 65}) {
    const std::string_view bytes = std::string_view(message).substr(0, length);
    const std::string path = write_test_file("sha256_test_large.bin", std::string(bytes));
    EXPECT_EQ(sha256_file(path), sha256_hex(bytes)) << "length " << length;
  }
  std::filesystem::remove(testing::TempDir() + "/sha256_test_large.bin");
}

TEST(Sha256, AFolderIsAnIoError) {
  try {
    sha256_file(testing::TempDir());
    ADD_FAILURE() << "hashed a folder";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::io);
  }
}

}  // namespace
}  // namespace dit
