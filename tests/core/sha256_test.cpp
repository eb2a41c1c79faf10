// SHA-256 against the FIPS 180-4 / NIST example messages, and chunked against one-shot hashing.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/sha256.h"

namespace dit {
namespace {

TEST(Sha256, MatchesTheNistExamples) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, ChunkedUpdatesEqualOneShot) {
  std::string message;
  for (int i = 0; i < 1000; ++i) message.push_back(static_cast<char>(i * 37 + 11));
  // Lengths around the 55/56/64-byte padding boundaries, split at every offset.
  for (size_t length : {0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000}) {
    const std::string part = message.substr(0, length);
    const std::string expected = sha256_hex(part);
    for (size_t split = 0; split <= length; split += 7) {
      Sha256 hash;
      hash.update(std::string_view(part).substr(0, split));
      hash.update(std::string_view(part).substr(split));
      EXPECT_EQ(hash.hex_digest(), expected) << "length " << length << " split " << split;
    }
  }
}

TEST(Sha256, HashesFiles) {
  const std::string path = testing::TempDir() + "/sha256_test_file.bin";
  {
    std::ofstream out(path, std::ios::binary);
    out << "abc";
  }
  EXPECT_EQ(sha256_file(path), sha256_hex("abc"));
  EXPECT_THROW(sha256_file(path + ".missing"), std::exception);
}

}  // namespace
}  // namespace dit
